/* The one escaper of text written into markup: the HTML export's title,
 * subtitle and movers' names (render_html.c) and the SVG export's names, title
 * and subtitle (render_svg.c). Markup characters become entities, and invalid
 * UTF-8 and the code points neither HTML nor XML 1.0 wants as text (C0 controls,
 * newline included, DEL and C1, U+FFFE and U+FFFF) become U+FFFD, so a frame
 * name is text whatever its bytes, in character data and in a quoted attribute
 * value alike. */
#ifndef SMOLDER_QUERY_MARKUP_H
#define SMOLDER_QUERY_MARKUP_H

#include <stddef.h>
#include <stdio.h>

/* The document's language: they differ in the apostrophe's entity only (&#39;
 * in HTML, where &apos; is not HTML 4's; &apos; in XML). */
enum markup_lang {
	MARKUP_HTML,
	MARKUP_XML,
};

/* Writes at most max_cp code points of s (SIZE_MAX: all), escaped as above. */
void markup_escape(FILE *out, const char *s, size_t max_cp, enum markup_lang lang);

#endif
