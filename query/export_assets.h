/* The scripts and styles the HTML and SVG exports embed, kept as files under
 * ui/export/ and built into the binary by ui/export/embed.sh
 * (build/gen/export_assets.c): each is the file's bytes and a NUL.
 *   export_flame_css, export_flame_js: the HTML export's <style> and <script>
 *     text (render_html.c), each beginning with the newline written after its
 *     tag; the collector serves the page with a policy holding their SHA-256
 *     (collector/exports.c), computed from these bytes at start;
 *   export_svg_js: the SVG export's script (render_svg.c), inside CDATA, so it
 *     must never contain "]]>". */
#ifndef SMOLDER_QUERY_EXPORT_ASSETS_H
#define SMOLDER_QUERY_EXPORT_ASSETS_H

extern const char export_flame_css[];
extern const char export_flame_js[];
extern const char export_svg_js[];

#endif
