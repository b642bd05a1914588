/*
 * The buffered input and restart position of the file readers
 * (readers/file_input.h).
 */
#include "file_input.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int cb__fin_open(cb__fin *f, const char *path, size_t bufsize, cb_error *err)
{
	struct stat st;

	memset(f, 0, sizeof(*f));
	f->fd = -1;
	f->path = path;
	f->line = 1;
	f->buf = malloc(bufsize);
	if (!f->buf)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory for a %zu-byte buffer", path,
				    bufsize);
	f->cap = bufsize;
	do
		f->fd = open(path, O_RDONLY | O_CLOEXEC);
	while (f->fd < 0 && errno == EINTR);
	if (f->fd < 0) {
		int e = errno;

		cb__fin_close(f);
		return cb_error_set(err, e == ENOENT ? CB_EINVAL : CB_ERROR, "%s: cannot open: %s",
				    path, strerror(e));
	}
	if (fstat(f->fd, &st) == 0 && S_ISDIR(st.st_mode)) {
		cb__fin_close(f);
		return cb_error_set(err, CB_EINVAL, "%s: is a directory", path);
	}
	f->start.line = 1;
	f->mark = f->com = f->start;
	return 0;
}

void cb__fin_close(cb__fin *f)
{
	if (!f)
		return;
	if (f->fd >= 0)
		close(f->fd);
	f->fd = -1;
	free(f->buf);
	f->buf = NULL;
	f->cap = f->pos = f->end = 0;
}

int cb__fin_fill(cb__fin *f)
{
	ssize_t n;

	if (f->pos < f->end)
		return 1;
	if (f->eof)
		return 0;
	f->buf_off += (long long)f->end;
	f->pos = f->end = 0;
	do
		n = read(f->fd, f->buf, f->cap);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		f->io_errno = errno;
		return CB__FIN_IOERR;
	}
	if (n == 0) {
		f->eof = 1;
		return 0;
	}
	f->end = (size_t)n;
	return 1;
}

int cb__fin_io_error(cb__fin *f, cb_error *err)
{
	return cb_error_set(err, CB_ERROR, "%s: read failed: %s", f->path,
			    strerror(f->io_errno ? f->io_errno : EIO));
}

int cb__fin_seek(cb__fin *f, cb__fpos p, cb_error *err)
{
	if (lseek(f->fd, (off_t)p.off, SEEK_SET) == (off_t)-1)
		return cb_error_set(err, CB_ERROR, "%s: cannot seek to offset %lld: %s", f->path,
				    p.off, strerror(errno));
	f->buf_off = p.off;
	f->pos = f->end = 0;
	f->eof = 0;
	f->line = p.line;
	f->line_start = p.off;
	return 0;
}

int cb__fin_skip_bom(cb__fin *f, cb_error *err)
{
	static const unsigned char bom[3] = { 0xEF, 0xBB, 0xBF };
	unsigned char head[3];
	ssize_t n;

	if (cb__fin_offset(f) != 0)
		return 0;
	do
		n = pread(f->fd, head, sizeof(head), 0);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		f->io_errno = errno;
		return cb__fin_io_error(f, err);
	}
	if (n == 3 && memcmp(head, bom, 3) == 0) {
		cb__fpos p = { 3, 1 };
		int rc = cb__fin_seek(f, p, err);

		if (rc)
			return rc;
		/* columns count from after the mark, as editors show them */
		f->line_start = 3;
	}
	return 0;
}

/* Read one byte at @p off. @return the byte, or -1 with errno set. */
static int byte_at(int fd, long long off)
{
	unsigned char c;
	ssize_t n;

	do
		n = pread(fd, &c, 1, (off_t)off);
	while (n < 0 && errno == EINTR);
	if (n == 1)
		return c;
	if (n == 0)
		errno = EINVAL;
	return -1;
}

static int json_ll(const json_t *v, long long *out)
{
	if (!json_is_integer(v))
		return -1;
	*out = (long long)json_integer_value(v);
	return 0;
}

int cb__fin_restore(cb__fin *f, const json_t *saved, const char *breaks, cb_error *err)
{
	const json_t *jo;
	struct stat st;
	cb__fpos p;
	int c, rc;

	f->mark = f->com = f->start;
	f->pending = 0;
	f->seek = 0;
	jo = json_is_object(saved) ? json_object_get(saved, "offset") : NULL;
	if (!jo)
		return cb__fin_seek(f, f->start, err);
	if (json_ll(jo, &p.off) < 0 || p.off < 0 ||
	    json_ll(json_object_get(saved, "line"), &p.line) < 0 || p.line < 1)
		return cb_error_set(
			err, CB_EINVAL,
			"%s: saved position is not {\"offset\": N >= 0, \"line\": L >= 1}",
			f->path);
	if (fstat(f->fd, &st) < 0)
		return cb_error_set(err, CB_ERROR, "%s: cannot stat: %s", f->path, strerror(errno));
	if (p.off > (long long)st.st_size)
		return cb_error_set(
			err, CB_EINVAL,
			"%s: saved position (offset %lld, line %lld) is past the end of "
			"the file (%lld bytes): the file changed since it was saved",
			f->path, p.off, p.line, (long long)st.st_size);
	if (p.off < f->start.off || (p.off == f->start.off && p.line != f->start.line))
		return cb_error_set(
			err, CB_EINVAL,
			"%s: saved position (offset %lld, line %lld) is before the data "
			"(offset %lld, line %lld): the file changed since it was saved",
			f->path, p.off, p.line, f->start.off, f->start.line);
	if (p.off > f->start.off && p.off < (long long)st.st_size) {
		c = byte_at(f->fd, p.off - 1);
		if (c < 0)
			return cb_error_set(err, CB_ERROR, "%s: read failed: %s", f->path,
					    strerror(errno));
		if (!strchr(breaks, c) || c == '\0')
			return cb_error_set(err, CB_EINVAL,
					    "%s: saved position (offset %lld, line %lld) does not "
					    "follow a line break: the file changed since it was "
					    "saved",
					    f->path, p.off, p.line);
	}
	rc = cb__fin_seek(f, p, err);
	if (rc)
		return rc;
	f->mark = f->com = p;
	return 0;
}

int cb__fin_begin(cb__fin *f, cb_error *err)
{
	int rc;

	if (f->pending) {
		/* a read after update(): that chunk committed */
		f->com = f->pend;
		f->pending = 0;
	}
	if (f->seek) {
		rc = cb__fin_seek(f, f->to, err);
		if (rc)
			return rc;
		f->seek = 0;
		f->mark = f->to;
	}
	return 0;
}

int cb__fin_update(cb__fin *f, json_t *out, cb_error *err)
{
	if (json_object_set_new(out, "offset", json_integer((json_int_t)f->mark.off)) < 0 ||
	    json_object_set_new(out, "line", json_integer((json_int_t)f->mark.line)) < 0)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", f->path);
	f->pend = f->mark;
	f->pending = 1;
	return 0;
}

void cb__fin_rollback(cb__fin *f)
{
	/* an update() not followed by a read belongs to the chunk rolled back */
	f->pending = 0;
	f->seek = 1;
	f->to = f->com;
	f->mark = f->com;
}

void cb__fin_retry_at_mark(cb__fin *f)
{
	f->seek = 1;
	f->to = f->mark;
}

int cb__fin_check(const char *path, const char *what, cb_error *err)
{
	struct stat st;

	if (stat(path, &st) != 0)
		return 0; /* an earlier step of the job may make it: `open` says */
	if (S_ISDIR(st.st_mode))
		return cb_error_set(err, CB_EINVAL, "%s %s: is a directory", what, path);
	if (access(path, R_OK) != 0)
		return cb_error_set(err, CB_EINVAL, "%s %s: not readable by this process", what,
				    path);
	return 0;
}
