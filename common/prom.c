/* The Prometheus text writer (see prom.h). */
#include "common/prom.h"

#include <errno.h>
#include <string.h>

void prom__init(struct prom *p, FILE *out)
{
	p->out = out;
	p->family[0] = '\0';
}

/* s with the characters in special escaped as backslash sequences ("\n" for a
 * newline). */
static void put_escaped(FILE *out, const char *s, const char *special)
{
	for (; *s; s++) {
		if (*s == '\n')
			fputs("\\n", out);
		else if (strchr(special, *s))
			fprintf(out, "\\%c", *s);
		else
			fputc(*s, out);
	}
}

void prom__family(struct prom *p, const char *name, enum prom_type type, const char *help)
{
	static const char *const types[] = { "counter", "gauge", "histogram" };

	if (strcmp(p->family, name) == 0)
		return;
	snprintf(p->family, sizeof(p->family), "%s", name);
	fprintf(p->out, "# HELP %s ", name);
	put_escaped(p->out, help, "\\");
	fprintf(p->out, "\n# TYPE %s %s\n", name, types[type]);
}

/* NAME[SUFFIX][{LABEL="VALUE"}] and the space before the number. */
static void put_name(struct prom *p, const char *suffix, const char *label, const char *value)
{
	fprintf(p->out, "%s%s", p->family, suffix);
	if (label) {
		fprintf(p->out, "{%s=\"", label);
		put_escaped(p->out, value, "\\\"");
		fputs("\"}", p->out);
	}
	fputc(' ', p->out);
}

void prom__u64(struct prom *p, const char *label, const char *value, uint64_t v)
{
	put_name(p, "", label, value);
	fprintf(p->out, "%llu\n", (unsigned long long)v);
}

void prom__i64(struct prom *p, const char *label, const char *value, int64_t v)
{
	put_name(p, "", label, value);
	fprintf(p->out, "%lld\n", (long long)v);
}

void prom__double(struct prom *p, const char *label, const char *value, int decimals, double v)
{
	put_name(p, "", label, value);
	fprintf(p->out, "%.*f\n", decimals, v);
}

void prom__counter(struct prom *p, const char *name, const char *help, uint64_t v)
{
	prom__family(p, name, PROM_COUNTER, help);
	prom__u64(p, NULL, NULL, v);
}

void prom__gauge(struct prom *p, const char *name, const char *help, uint64_t v)
{
	prom__family(p, name, PROM_GAUGE, help);
	prom__u64(p, NULL, NULL, v);
}

void prom__histogram(struct prom *p, const double *bounds, const uint64_t *counts, size_t n,
		     double sum)
{
	uint64_t cumulative = 0;
	char le[32];
	size_t i;

	for (i = 0; i <= n; i++) {
		cumulative += counts[i];
		if (i < n)
			snprintf(le, sizeof(le), "%g", bounds[i]);
		else
			snprintf(le, sizeof(le), "+Inf");
		put_name(p, "_bucket", "le", le);
		fprintf(p->out, "%llu\n", (unsigned long long)cumulative);
	}
	put_name(p, "_sum", NULL, NULL);
	fprintf(p->out, "%.6f\n", sum);
	put_name(p, "_count", NULL, NULL);
	fprintf(p->out, "%llu\n", (unsigned long long)cumulative);
}

int prom__end(const struct prom *p)
{
	return ferror(p->out) ? -EIO : 0;
}
