/* Native names shortened for reading; see shortname.h. */
#include "query/shortname.h"

#include <ctype.h>
#include <stdbool.h>
#include <string.h>

#define ELLIPSIS "\u2026"

static void put(char *out, size_t size, size_t *pos, const char *s, size_t n)
{
	size_t room = *pos < size ? size - 1 - *pos : 0;

	if (size)
		memcpy(out + *pos, s, n < room ? n : room);
	*pos += n;
}

/* Whether the '<' or '>' at s[i] belongs to an operator's name: "operator"
 * (then maybe spaces) right before it, with only other operator characters
 * between ("operator<<=", not the template of "operator<< <T>"). */
static bool in_operator(const char *s, size_t i)
{
	static const char word[] = "operator";
	const size_t n = sizeof(word) - 1;

	while (i > 0 && s[i - 1] && strchr("<>=-!", s[i - 1]))
		i--;
	while (i > 0 && s[i - 1] == ' ' && i >= n + 1 && memcmp(s + i - 1 - n, word, n) == 0)
		i--;
	return i >= n && !memcmp(s + i - n, word, n);
}

/* The index just past the '>' closing the '<' at s[i], or 0 if none does. */
static size_t closing(const char *s, size_t i)
{
	size_t depth = 0;

	for (; s[i]; i++) {
		if (s[i] == '<' && !in_operator(s, i))
			depth++;
		else if (s[i] == '>' && !(i > 0 && s[i - 1] == '-') && !in_operator(s, i) &&
			 --depth == 0)
			return i + 1;
	}
	return 0;
}

/* Whether the '<' at s[i] opens template arguments: it follows a name
 * (vector<int>) or an operator's name and a space (operator<< <char>). A '<'
 * at the start or after "::", "(" or ", " opens a Rust qualified path
 * (<Vec<T> as Drop>::drop) or is text: kept, with what is inside shortened. */
static bool opens_arguments(const char *s, size_t i)
{
	unsigned char p = i ? (unsigned char)s[i - 1] : 0;

	if (isalnum(p) || p == '_')
		return true;
	return p == ' ' && i >= 2 && strchr("<>=", s[i - 2]) && in_operator(s, i - 1);
}

const char *shortname_of(const char *name, unsigned kind, char *buf, size_t size)
{
	if (kind != FRAME_NATIVE)
		return name;
	shortname(name, buf, size);
	return buf;
}

size_t shortname(const char *name, char *out, size_t size)
{
	size_t i = 0, start = 0, end, pos = 0;

	while (name[i]) {
		if (name[i] != '<' || in_operator(name, i) || !opens_arguments(name, i) ||
		    !(end = closing(name, i))) {
			i++;
			continue;
		}
		put(out, size, &pos, name + start, i - start);
		put(out, size, &pos, "<" ELLIPSIS ">", 1 + strlen(ELLIPSIS) + 1);
		i = start = end;
	}
	put(out, size, &pos, name + start, i - start);
	if (size)
		out[pos < size ? pos : size - 1] = '\0';
	return pos;
}
