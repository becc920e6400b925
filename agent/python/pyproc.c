/* CPython discovery in a live process; see pyproc.h. The candidate files are
 * opened as the very files the process maps (procfile.h), so a process cannot
 * make the agent read another file, nor wait on a FIFO, through its paths. */
#include "agent/python/pyproc.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "agent/python/procmem.h"
#include "agent/symbols/procfile.h"
#include "agent/symbols/procmaps.h"

#define MAX_MAPS_LINE (PATH_MAX + 256)

enum { SYM_RUNTIME, SYM_CODE_TYPE, SYM_NONE, SYM_VERSION, SYM_NR };
_Static_assert(SYM_NR == PYPROC_NSYMS, "struct pyproc_elf_facts holds every symbol");

static const char *const wanted_symbols[SYM_NR] = {
	[SYM_RUNTIME] = "_PyRuntime",
	[SYM_CODE_TYPE] = "PyCode_Type",
	[SYM_NONE] = "_Py_NoneStruct",
	[SYM_VERSION] = "Py_Version",
};

static void scan_symtab(Elf *elf, Elf_Scn *scn, GElf_Shdr *sh, struct pyproc_elf_facts *f)
{
	Elf_Data *data = elf_getdata(scn, NULL);
	size_t i, n, k;
	GElf_Sym sym;
	const char *name;

	if (!data || !sh->sh_entsize)
		return;
	n = sh->sh_size / sh->sh_entsize;
	for (i = 0; i < n; i++) {
		if (!gelf_getsym(data, (int)i, &sym) || !sym.st_value || sym.st_shndx == SHN_UNDEF)
			continue;
		name = elf_strptr(elf, sh->sh_link, sym.st_name);
		if (!name || (name[0] != '_' && name[0] != 'P'))
			continue;
		for (k = 0; k < SYM_NR; k++)
			if (!f->sym[k] && strcmp(name, wanted_symbols[k]) == 0)
				f->sym[k] = sym.st_value;
	}
}

int pyproc_elf_facts(Elf *elf, struct pyproc_elf_facts *f)
{
	GElf_Ehdr eh;
	GElf_Phdr ph;
	GElf_Shdr sh;
	Elf_Scn *scn = NULL;
	size_t i, nph;

	memset(f, 0, sizeof(*f));
	if (!elf || !gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &nph))
		return -ENOEXEC;
	f->is_exec = eh.e_type == ET_EXEC;
	f->first_vaddr = UINT64_MAX;
	for (i = 0; i < nph; i++)
		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD &&
		    ph.p_vaddr < f->first_vaddr)
			f->first_vaddr = ph.p_vaddr & ~0xfffull;
	while ((scn = elf_nextscn(elf, scn)))
		if (gelf_getshdr(scn, &sh) &&
		    (sh.sh_type == SHT_DYNSYM || sh.sh_type == SHT_SYMTAB))
			scan_symtab(elf, scn, &sh, f);
	return 0;
}

/* Reads the facts of the ELF file open at fd. */
static int read_elf_facts(int fd, struct pyproc_elf_facts *f)
{
	Elf *elf;
	int err;

	memset(f, 0, sizeof(*f));
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	err = pyproc_elf_facts(elf, f);
	elf_end(elf);
	return err;
}

bool pyproc_is_python_path(const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	return strncmp(base, "libpython3.", 11) == 0 || strncmp(base, "python", 6) == 0;
}

/* "3.10" from ".../libpython3.10.so.1.0" or ".../python3.10"; 0 when absent. */
static unsigned version_from_name(const char *path)
{
	const char *p = strrchr(path, '/');
	unsigned minor;

	p = strstr(p ? p : path, "python3.");
	if (!p || sscanf(p + 8, "%u", &minor) != 1)
		return 0;
	return PY_VERSION_CODE(3, minor);
}

uint64_t pyproc_start_time(pid_t pid)
{
	char path[64], buf[1024], *p;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f);
	fclose(f);
	return p ? pyproc_parse_start_time(buf) : 0;
}

uint64_t pyproc_parse_start_time(const char *stat)
{
	unsigned long long start = 0;
	const char *p = strrchr(stat, ')');

	if (!p || p[1] != ' ')
		return 0; /* no comm, or a text cut after it: no field 3 */
	/* field 22, the 20th after the ")" that ends comm */
	if (sscanf(p + 2,
		   "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %*u %*u %*d %*d %*d %*d "
		   "%*d %*d %llu",
		   &start) != 1)
		return 0;
	return start;
}

int pyproc_parse_maps_line(const char *line, struct procmaps_line *pl, char file[PATH_MAX])
{
	if (procmaps_parse_line(line, pl) || pl->offset != 0 || pl->path[0] != '/' ||
	    pl->path_len >= PATH_MAX)
		return -EINVAL;
	memcpy(file, pl->path, pl->path_len);
	file[pl->path_len] = '\0';
	return pyproc_is_python_path(file) ? 0 : -EINVAL;
}

/* Reads the facts of the file pid maps at pl: the very file mapped
 * (procfile_open_mapped), never another one its path may name now. */
static int mapped_facts(int root, pid_t pid, const struct procmaps_line *pl, const char *file,
			struct pyproc_elf_facts *f)
{
	struct procfile_map m = { .path = file,
				  .start = pl->start,
				  .end = pl->end,
				  .id = { pl->dev, pl->inode },
				  .deleted = pl->deleted };
	int fd = procfile_open_mapped(root, (uint32_t)pid, &m), err;

	if (fd < 0)
		return fd;
	err = read_elf_facts(fd, f);
	close(fd);
	return err;
}

/* Finds the mapped file that defines _PyRuntime: its path, load bias and facts. */
static int find_runtime_module(pid_t pid, struct pyproc *p, uint64_t *bias,
			       struct pyproc_elf_facts *f)
{
	char path[64], line[MAX_MAPS_LINE], file[PATH_MAX];
	char tried[4][PATH_MAX] = { "" };
	int ntried = 0, i, root, err = -ENOENT;
	struct procmaps_line pl;
	FILE *maps;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	maps = fopen(path, "re");
	if (!maps)
		return errno == ENOENT ? -ESRCH : -errno;
	root = procfile_root((uint32_t)pid);
	while (fgets(line, sizeof(line), maps)) {
		bool seen = false;

		if (pyproc_parse_maps_line(line, &pl, file))
			continue;
		for (i = 0; i < ntried; i++)
			seen |= strcmp(tried[i], file) == 0;
		if (seen || ntried == 4)
			continue;
		snprintf(tried[ntried++], sizeof(tried[0]), "%s", file);
		if (mapped_facts(root, pid, &pl, file, f) || !f->sym[SYM_RUNTIME] ||
		    !f->sym[SYM_CODE_TYPE])
			continue;
		*bias = f->is_exec ? 0 : pl.start - f->first_vaddr;
		snprintf(p->module, sizeof(p->module), "%s", file);
		err = 0;
		break;
	}
	if (root >= 0)
		close(root);
	fclose(maps);
	return err;
}

/* Reads the live thread list once: an interpreter with a thread state that points
 * back at it and has a thread id. Catches a wrong table or version early. An
 * interpreter that is still starting fails the same way for a while, so failures
 * are -EAGAIN: the caller retries, and gives up after a time. */
static int check_live(pid_t pid, const struct py_offsets *o)
{
	const struct py_proc *w = &o->walk;
	uint64_t interp, tstate, back, thread_id;
	int err;

	err = procmem_read_u64(pid, w->runtime + w->runtime_interp_head, &interp);
	err = err ?: procmem_read_u64(pid, interp + w->interp_threads_head, &tstate);
	if (err)
		return err == -ESRCH ? err : -EAGAIN;
	if (!interp || !tstate)
		return -EAGAIN; /* not initialized yet */
	err = procmem_read_u64(pid, tstate + 16 /* PyThreadState.interp, every version */, &back);
	err = err ?: procmem_read_u64(pid, tstate + w->tstate_thread_id, &thread_id);
	if (err)
		return err == -ESRCH ? err : -EAGAIN;
	return back == interp && thread_id ? 0 : -EAGAIN;
}

static int load_offsets(pid_t pid, unsigned version, uint64_t runtime, struct py_offsets *o)
{
	unsigned char debug[PY_DEBUG_OFFSETS_313_SIZE];
	int err;

	if (((version >> 8) & 0xff) < 13)
		return py_offsets__from_table(version, o);
	err = procmem_read(pid, runtime, debug, sizeof(debug));
	if (err)
		return err;
	return py_offsets__from_debug(debug, sizeof(debug), o);
}

int pyproc__inspect(pid_t pid, struct pyproc **out)
{
	struct pyproc *p = calloc(1, sizeof(*p));
	struct pyproc_elf_facts f;
	uint64_t bias = 0;
	uint32_t hex = 0;
	unsigned version;
	int err;

	if (!p)
		return -ENOMEM;
	p->pid = (uint32_t)pid;
	p->start_time = pyproc_start_time(pid);
	err = find_runtime_module(pid, p, &bias, &f);
	if (err)
		goto out_free;

	version = version_from_name(p->module);
	if (f.sym[SYM_VERSION] &&
	    !procmem_read(pid, bias + f.sym[SYM_VERSION], &hex, sizeof(hex)) && (hex >> 24) == 3) {
		version = PY_VERSION_CODE(3, (hex >> 16) & 0xff);
		snprintf(p->version, sizeof(p->version), "3.%u.%u", (hex >> 16) & 0xff,
			 (hex >> 8) & 0xff);
	} else {
		snprintf(p->version, sizeof(p->version), "3.%u", (version >> 8) & 0xff);
	}
	if (!version) {
		err = -ENOTSUP;
		goto out_free;
	}
	err = load_offsets(pid, version, bias + f.sym[SYM_RUNTIME], &p->off);
	if (err)
		goto out_free;
	p->off.walk.runtime = bias + f.sym[SYM_RUNTIME];
	p->off.walk.none_addr = f.sym[SYM_NONE] ? bias + f.sym[SYM_NONE] : 0;
	p->code_type = bias + f.sym[SYM_CODE_TYPE];
	err = check_live(pid, &p->off);
	if (err)
		goto out_free;
	*out = p;
	return 0;

out_free:
	free(p);
	return err;
}
