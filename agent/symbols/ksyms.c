/* Kernel text symbols from /proc/kallsyms (or a file in its format), sorted by
 * address for nearest-at-or-below lookups; see ksyms.h.
 *
 * Each line is "ADDRESS TYPE NAME" with an optional "\t[module]"; only the text
 * types t, T, w and W are kept. Lines longer than MAX_LINE are skipped whole.
 * Names go into one growing arena. Symbols sharing an address keep one name, chosen
 * like perf does: non-weak over weak, global over local, fewer leading underscores,
 * longer name.
 */
#include "agent/symbols/ksyms.h"
#include "agent/symbols/symrank.h"
#include "common/array.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINE  1024	       /* kallsyms names are at most KSYM_NAME_LEN (512) bytes */
#define MAX_SYMS  (4u << 20)   /* text symbols accepted */
#define MAX_NAMES (256u << 20) /* bytes of names accepted */

struct ksym {
	uint64_t addr;
	uint32_t name; /* offset into ksyms.names */
	char type;     /* t, T, w or W */
};

struct ksyms {
	struct ksym *syms; /* sorted by addr, one per address */
	size_t nsyms;
	char *names;
};

/* Growing arrays while loading. */
struct loader {
	struct ksym *syms;
	size_t nsyms, cap;
	char *names;
	size_t names_len, names_cap;
};

static bool is_weak(char t)
{
	return t == 'w' || t == 'W';
}

/* qsort_r comparator; names is the arena the name offsets point into. Lowercase
 * types are local symbols. */
static int cmp_ksym(const void *pa, const void *pb, void *names)
{
	const struct ksym *a = pa, *b = pb;
	const char *na = (const char *)names + a->name, *nb = (const char *)names + b->name;
	struct symrank_key ka = {
		a->addr, false, is_weak(a->type), a->type != 'T', na, strlen(na)
	};
	struct symrank_key kb = {
		b->addr, false, is_weak(b->type), b->type != 'T', nb, strlen(nb)
	};

	return symrank_cmp(&ka, &kb);
}

static int add_sym(struct loader *l, uint64_t addr, char type, const char *name, size_t len)
{
	if (l->nsyms == MAX_SYMS || len + 1 > MAX_NAMES - l->names_len)
		return -E2BIG;
	if (array_grow((void **)&l->syms, &l->cap, l->nsyms + 1, sizeof(*l->syms)) ||
	    array_grow((void **)&l->names, &l->names_cap, l->names_len + len + 1, 1))
		return -ENOMEM;
	memcpy(l->names + l->names_len, name, len);
	l->names[l->names_len + len] = '\0';
	l->syms[l->nsyms++] = (struct ksym){
		.addr = addr,
		.name = (uint32_t)l->names_len,
		.type = type,
	};
	l->names_len += len + 1;
	return 0;
}

/* Parses one line; returns 1 for a kept text symbol, 0 for a line to skip, or
 * -errno. *zero is set for a text symbol whose address reads as 0. */
static int parse_line(struct loader *l, char *line, bool *zero)
{
	char *p = line, *end, *name;
	uint64_t addr;
	char type;
	int err;

	errno = 0;
	addr = strtoull(p, &end, 16);
	if (end == p || errno || *end != ' ')
		return 0;
	p = end + 1;
	type = *p;
	if (!type || p[1] != ' ')
		return 0;
	if (type != 't' && type != 'T' && type != 'w' && type != 'W')
		return 0;
	name = p + 2;
	end = name + strcspn(name, " \t\n");
	if (end == name)
		return 0;
	if (!addr) {
		*zero = true;
		return 0;
	}
	err = add_sym(l, addr, type, name, (size_t)(end - name));
	return err ? err : 1;
}

/* Sorts, keeps one symbol per address, and hands the arrays to k. */
static void finish(struct loader *l, struct ksyms *k)
{
	size_t i, n = 0;

	if (l->nsyms)
		qsort_r(l->syms, l->nsyms, sizeof(*l->syms), cmp_ksym, l->names);
	for (i = 0; i < l->nsyms; i++)
		if (!n || l->syms[i].addr != l->syms[n - 1].addr)
			l->syms[n++] = l->syms[i];
	k->syms = l->syms;
	k->nsyms = n;
	k->names = l->names;
}

int ksyms__load(const char *path, struct ksyms **out)
{
	struct loader l = { 0 };
	bool zero = false, skipping = false;
	char line[MAX_LINE];
	struct ksyms *k;
	size_t len;
	FILE *f;
	int err;

	k = calloc(1, sizeof(*k));
	if (!k)
		return -ENOMEM;
	f = fopen(path, "re");
	if (!f) {
		err = -errno;
		goto out_free_k;
	}
	while (fgets(line, sizeof(line), f)) {
		len = strlen(line);
		if (!len) /* a NUL byte first: not kallsyms */
			continue;
		if (skipping) { /* the tail of a line too long to be kallsyms */
			skipping = line[len - 1] != '\n';
			continue;
		}
		if (line[len - 1] != '\n' && !feof(f)) {
			skipping = true;
			continue;
		}
		err = parse_line(&l, line, &zero);
		if (err < 0)
			goto out_free_loader;
	}
	if (ferror(f)) {
		err = -EIO;
		goto out_free_loader;
	}
	if (!l.nsyms && zero) {
		err = -EPERM; /* kptr_restrict: every address reads 0 */
		goto out_free_loader;
	}
	fclose(f);
	finish(&l, k);
	*out = k;
	return 0;

out_free_loader:
	free(l.syms);
	free(l.names);
	fclose(f);
out_free_k:
	free(k);
	return err;
}

void ksyms__free(struct ksyms *k)
{
	if (!k)
		return;
	free(k->syms);
	free(k->names);
	free(k);
}

const char *ksyms__lookup(const struct ksyms *k, uint64_t addr, uint64_t *offset)
{
	size_t lo = 0, hi = k->nsyms, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (k->syms[mid].addr <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return NULL;
	if (offset)
		*offset = addr - k->syms[lo - 1].addr;
	return k->names + k->syms[lo - 1].name;
}

size_t ksyms__count(const struct ksyms *k)
{
	return k->nsyms;
}
