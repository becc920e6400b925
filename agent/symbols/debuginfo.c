/* Separate debug files and MiniDebugInfo for stripped ELF files; see debuginfo.h
 * for the search order and what is trusted. Every candidate is opened through
 * procfile (procfile.h): under the debug root from the agent's own root, beside
 * the binary from the process's root with no link allowed, and a regular file
 * before anything is read. The debug file itself is parsed by elfsyms, which
 * takes its .symtab and keeps the original file's segments (a debug file's
 * section addresses match the original's; its code is not there).
 */
#include "agent/symbols/debuginfo.h"
#include "agent/symbols/procfile.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <limits.h>
#include <lzma.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#ifndef NT_GNU_BUILD_ID
#define NT_GNU_BUILD_ID 3
#endif

static const char *section_name(Elf *elf, size_t shstrndx, const GElf_Shdr *sh)
{
	return elf_strptr(elf, shstrndx, sh->sh_name);
}

static void read_build_id(Elf_Data *data, struct debuginfo_ids *ids)
{
	size_t off = 0, next, name_off, desc_off;
	GElf_Nhdr nh;

	while (off < data->d_size && (next = gelf_getnote(data, off, &nh, &name_off, &desc_off))) {
		if (nh.n_type == NT_GNU_BUILD_ID && nh.n_namesz == 4 &&
		    !memcmp((const char *)data->d_buf + name_off, "GNU", 4) && nh.n_descsz > 0 &&
		    nh.n_descsz <= DEBUGINFO_MAX_BUILD_ID) {
			memcpy(ids->build_id, (const char *)data->d_buf + desc_off, nh.n_descsz);
			ids->build_id_len = nh.n_descsz;
			return;
		}
		off = next;
	}
}

/* .gnu_debuglink: a NUL-terminated file name, padding to 4 bytes, a CRC32 in the
 * file's byte order. */
static void read_debuglink(Elf *elf, Elf_Data *data, struct debuginfo_ids *ids)
{
	const unsigned char *p = data->d_buf, *c;
	size_t len, crc_off;
	GElf_Ehdr eh;

	if (!p || !gelf_getehdr(elf, &eh))
		return;
	len = strnlen((const char *)p, data->d_size);
	if (len == 0 || len >= sizeof(ids->link) || len > NAME_MAX)
		return;
	crc_off = (len + 4) & ~(size_t)3;
	if (crc_off > data->d_size || data->d_size - crc_off < 4)
		return;
	if (memchr(p, '/', len) || memmem(p, len, "..", 2))
		return; /* a name, not a path: nothing outside the searched directories */
	c = p + crc_off;
	ids->link_crc =
		eh.e_ident[EI_DATA] == ELFDATA2MSB
			? (uint32_t)c[0] << 24 | (uint32_t)c[1] << 16 | (uint32_t)c[2] << 8 | c[3]
			: (uint32_t)c[3] << 24 | (uint32_t)c[2] << 16 | (uint32_t)c[1] << 8 | c[0];
	memcpy(ids->link, p, len);
	ids->link[len] = '\0';
}

void debuginfo_read_ids(Elf *elf, struct debuginfo_ids *ids)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	const char *name;
	Elf_Data *data;
	GElf_Shdr sh;

	memset(ids, 0, sizeof(*ids));
	if (elf_getshdrstrndx(elf, &shstrndx))
		return;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		if (sh.sh_type == SHT_NOTE && !ids->build_id_len) {
			data = elf_getdata(scn, NULL);
			if (data)
				read_build_id(data, ids);
			continue;
		}
		name = section_name(elf, shstrndx, &sh);
		if (name && !strcmp(name, ".gnu_debuglink") && !ids->link[0]) {
			data = elf_getdata(scn, NULL);
			if (data)
				read_debuglink(elf, data, ids);
		}
	}
}

/* CRC32 (zlib's, the one the debuglink uses) of the whole file. */
static int file_crc(int fd, uint32_t *crc)
{
	unsigned char buf[65536];
	uLong c = crc32(0, Z_NULL, 0);
	off_t off = 0;
	ssize_t n;

	while ((n = pread(fd, buf, sizeof(buf), off)) > 0) {
		c = crc32(c, buf, (uInt)n);
		off += n;
	}
	if (n < 0)
		return -errno;
	*crc = (uint32_t)c;
	return 0;
}

enum found_by { BY_BUILD_ID, BY_LINK };

/* Takes fd (closes it when refused): a regular file under the size cap whose
 * build id or CRC matches. */
static bool accept(int fd, const struct debuginfo_ids *ids, enum found_by by)
{
	struct debuginfo_ids got;
	struct stat st;
	uint32_t crc;
	bool ok = false;
	Elf *elf;

	if (fd < 0)
		return false;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > DEBUGINFO_MAX_FILE)
		goto out;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	if (!elf)
		goto out;
	debuginfo_read_ids(elf, &got);
	elf_end(elf);
	if (by == BY_BUILD_ID || (ids->build_id_len && got.build_id_len)) {
		if (got.build_id_len != ids->build_id_len ||
		    memcmp(got.build_id, ids->build_id, got.build_id_len))
			goto out;
	}
	if (by == BY_LINK && (file_crc(fd, &crc) || crc != ids->link_crc))
		goto out;
	ok = true;
out:
	if (!ok)
		close(fd);
	return ok;
}

/* <debug_root>/.build-id/xx/yyyy.debug: the host's own tree. */
static int open_by_build_id(const char *debug_root, const struct debuginfo_ids *ids)
{
	char path[PATH_MAX], *p;
	size_t i;
	int n;

	if (ids->build_id_len < 2)
		return -1;
	n = snprintf(path, sizeof(path), "%s/.build-id/%02x/", debug_root, ids->build_id[0]);
	if (n < 0 || (size_t)n + 2 * ids->build_id_len + 7 > sizeof(path))
		return -1;
	p = path + n;
	for (i = 1; i < ids->build_id_len; i++, p += 2)
		sprintf(p, "%02x", ids->build_id[i]);
	strcpy(p, ".debug");
	return procfile_open(PROCFILE_OWN_ROOT, path, 0, NULL);
}

/* The directory of path (as the process sees it) into dir; false when path has
 * none, or one with "." or ".." components. */
static bool binary_dir(const char *path, char *dir, size_t cap)
{
	const char *slash = strrchr(path, '/');
	size_t len;

	if (!slash || slash == path || path[0] != '/')
		return false;
	len = (size_t)(slash - path);
	if (len >= cap)
		return false;
	memcpy(dir, path, len);
	dir[len] = '\0';
	/* <debug_root><dir> must stay under the debug root: no "." or ".." at all */
	return !strstr(dir, "/../") && !strstr(dir, "/./") &&
	       strcmp(dir + (len >= 3 ? len - 3 : 0), "/..") &&
	       strcmp(dir + (len >= 2 ? len - 2 : 0), "/.");
}

/* name or sub/name in the binary's directory dirfd, no link on the way. */
static int open_beside(int dirfd, const char *sub, const char *name)
{
	char rel[NAME_MAX + 16];

	snprintf(rel, sizeof(rel), "%s%s%s", sub ? sub : "", sub ? "/" : "", name);
	return procfile_open(dirfd, rel, PROCFILE_NO_SYMLINKS, NULL);
}

int debuginfo_open(int root, const char *path, const char *debug_root,
		   const struct debuginfo_ids *ids, int *fd)
{
	char dir[PATH_MAX], full[PATH_MAX];
	const char *base;
	int dirfd, f, n;

	f = open_by_build_id(debug_root, ids);
	if (accept(f, ids, BY_BUILD_ID))
		goto found;
	if (!ids->link[0] || !path || !binary_dir(path, dir, sizeof(dir)))
		return -ENOENT;
	base = strrchr(path, '/') + 1;
	if (!strcmp(base, ids->link))
		return -ENOENT; /* the binary itself */
	dirfd = procfile_open_dir(root, dir, 0);
	if (dirfd >= 0) {
		f = open_beside(dirfd, NULL, ids->link);
		if (!accept(f, ids, BY_LINK)) {
			f = open_beside(dirfd, ".debug", ids->link);
			if (!accept(f, ids, BY_LINK))
				f = -1;
		}
		close(dirfd);
		if (f >= 0)
			goto found;
	}
	n = snprintf(full, sizeof(full), "%s%s/%s", debug_root, dir, ids->link);
	if (n < 0 || (size_t)n >= sizeof(full))
		return -ENOENT;
	f = procfile_open(PROCFILE_OWN_ROOT, full, 0, NULL);
	if (!accept(f, ids, BY_LINK))
		return -ENOENT;
found:
	*fd = f;
	return 0;
}

static Elf_Data *find_section(Elf *elf, const char *want)
{
	Elf_Scn *scn = NULL;
	size_t shstrndx;
	const char *name;
	GElf_Shdr sh;

	if (elf_getshdrstrndx(elf, &shstrndx))
		return NULL;
	while ((scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		name = section_name(elf, shstrndx, &sh);
		if (name && !strcmp(name, want))
			return elf_getdata(scn, NULL);
	}
	return NULL;
}

int debuginfo_mini(Elf *elf, void **image, size_t *size)
{
	lzma_stream s = LZMA_STREAM_INIT;
	Elf_Data *data = find_section(elf, ".gnu_debugdata");
	size_t cap, grown;
	uint8_t *buf = NULL, *nbuf;
	lzma_ret ret;
	int err;

	if (!data || !data->d_buf || !data->d_size)
		return -ENOENT;
	if (lzma_stream_decoder(&s, DEBUGINFO_XZ_MEMLIMIT, 0) != LZMA_OK)
		return -ENOMEM;
	/* xz compresses symbol tables about 4:1; start there and double up to the cap */
	cap = data->d_size < DEBUGINFO_MAX_MINI / 4 ? data->d_size * 4 : DEBUGINFO_MAX_MINI;
	if (cap < 4096)
		cap = 4096;
	buf = malloc(cap);
	if (!buf) {
		err = -ENOMEM;
		goto out_end;
	}
	s.next_in = data->d_buf;
	s.avail_in = data->d_size;
	s.next_out = buf;
	s.avail_out = cap;
	for (;;) {
		ret = lzma_code(&s, LZMA_FINISH);
		if (ret == LZMA_STREAM_END)
			break;
		if (ret != LZMA_OK && ret != LZMA_BUF_ERROR) {
			err = ret == LZMA_MEM_ERROR	   ? -ENOMEM
			      : ret == LZMA_MEMLIMIT_ERROR ? -E2BIG
							   : -EINVAL;
			goto out_free;
		}
		if (s.avail_out) { /* input ended before the stream did */
			err = -EINVAL;
			goto out_free;
		}
		if (cap >= DEBUGINFO_MAX_MINI) {
			err = -E2BIG;
			goto out_free;
		}
		grown = cap * 2 < DEBUGINFO_MAX_MINI ? cap * 2 : DEBUGINFO_MAX_MINI;
		nbuf = realloc(buf, grown);
		if (!nbuf) {
			err = -ENOMEM;
			goto out_free;
		}
		buf = nbuf;
		s.next_out = buf + cap;
		s.avail_out = grown - cap;
		cap = grown;
	}
	*size = (size_t)s.total_out;
	*image = buf;
	lzma_end(&s);
	return 0;

out_free:
	free(buf);
out_end:
	lzma_end(&s);
	return err;
}
