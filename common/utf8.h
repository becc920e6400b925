/* UTF-8 decoding and encoding for everything that writes names from target
 * processes into text formats (JSON, SVG, HTML, pprof's string table), where an
 * invalid byte must become U+FFFD rather than break the document. */
#ifndef SMOLDER_UTF8_H
#define SMOLDER_UTF8_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define UTF8_REPLACEMENT 0xfffd

/* Decodes the sequence at s, reading at most n bytes (n >= 1). Returns its length
 * with the code point in *cp, or 0 when it is not valid UTF-8 (overlong,
 * surrogate, past U+10FFFF, truncated). */
size_t utf8_decode(const unsigned char *s, size_t n, uint32_t *cp);

/* Writes cp (<= U+10FFFF) as UTF-8. */
void utf8_put(FILE *out, uint32_t cp);

#endif
