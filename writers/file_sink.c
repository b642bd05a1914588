/*
 * The buffered, restart-truncating file output of the file writers
 * (writers/file_sink.h), and cb_file_publish (include/cbatch/writers.h).
 */
#define _GNU_SOURCE /* copy_file_range */
#include "file_sink.h"

#include "cbatch/writers.h"

#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* "<path>.tmp", new. */
static char *tmp_of(const char *path)
{
	size_t n = strlen(path);
	char *t = malloc(n + 5);

	if (t) {
		memcpy(t, path, n);
		memcpy(t + n, ".tmp", 5);
	}
	return t;
}

int cb__fsink_init(cb__fsink *s, const char *what, const char *path, int atomic,
		   const char *temp_path, int do_fsync, int if_exists, cb_error *err)
{
	memset(s, 0, sizeof(*s));
	s->fd = -1;
	s->what = what;
	s->do_fsync = do_fsync != 0;
	s->atomic = atomic != 0;
	if (if_exists != CB_FILE_FAIL && if_exists != CB_FILE_APPEND &&
	    if_exists != CB_FILE_REPLACE)
		return cb_error_set(err, CB_EINVAL,
				    "%s %s: if_exists %d is not a cb_file_if_exists", what, path,
				    if_exists);
	s->if_exists = if_exists;
	/* Until open expands them, the paths are the templates (for messages). */
	s->tmpl = strdup(path);
	if (atomic) {
		s->final_path = strdup(path);
		s->path = temp_path ? strdup(temp_path) : tmp_of(path);
		if (temp_path)
			s->temp_tmpl = strdup(temp_path);
	} else {
		s->path = strdup(path);
	}
	if (!s->tmpl || !s->path || (atomic && !s->final_path) ||
	    (temp_path && atomic && !s->temp_tmpl)) {
		cb__fsink_free(s);
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	}
	return 0;
}

void cb__fsink_close(cb__fsink *s)
{
	if (!s)
		return;
	if (s->fd >= 0) {
		if (s->do_fsync)
			(void)fdatasync(s->fd);
		close(s->fd);
	}
	s->fd = -1;
	s->len = s->mark = 0;
	s->pending = 0;
}

void cb__fsink_free(cb__fsink *s)
{
	if (!s)
		return;
	cb__fsink_close(s);
	free(s->buf);
	free(s->path);
	free(s->final_path);
	free(s->tmpl);
	free(s->temp_tmpl);
	memset(s, 0, sizeof(*s));
	s->fd = -1;
}

/* Write all of @p p at @p off. @return 0 or -1 with errno. */
static int write_at(int fd, const char *p, size_t n, long long off)
{
	while (n > 0) {
		ssize_t w = pwrite(fd, p, n, (off_t)off);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		if (w == 0) {
			errno = EIO;
			return -1;
		}
		p += w;
		n -= (size_t)w;
		off += w;
	}
	return 0;
}

/* fsync the directory holding @p path, so that a new name is durable. */
static int sync_dir(const char *path)
{
	const char *slash = strrchr(path, '/');
	char *dir;
	int fd, rc, e;

	if (!slash)
		dir = strdup(".");
	else if (slash == path)
		dir = strdup("/");
	else
		dir = strndup(path, (size_t)(slash - path));
	if (!dir) {
		errno = ENOMEM;
		return -1;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	e = errno;
	free(dir);
	if (fd < 0) {
		errno = e;
		return -1;
	}
	rc = fsync(fd);
	e = errno;
	close(fd);
	errno = e;
	/* some file systems cannot sync a directory: nothing more to do there */
	return rc < 0 && errno != EINVAL && errno != EROFS ? -1 : 0;
}

static int io_error(cb__fsink *s, const char *op, cb_error *err)
{
	return cb_error_set(err, CB_ERROR, "%s %s: %s failed: %s", s->what, s->path, op,
			    strerror(errno));
}

/*
 * A new, empty file beside @p path, under a name no other process uses
 * (O_CREAT|O_EXCL). @return its descriptor with its name in *@p name_out
 * (new, free it), or -1 with errno.
 */
static int create_beside(char **name_out, const char *path, mode_t mode)
{
	static atomic_uint counter;
	size_t n = strlen(path) + 64;
	char *name = malloc(n);

	*name_out = NULL;
	if (!name) {
		errno = ENOMEM;
		return -1;
	}
	for (int tries = 0; tries < 100; tries++) {
		int fd;

		snprintf(name, n, "%s.~cb%ld.%u", path, (long)getpid(),
			 atomic_fetch_add(&counter, 1) + 1);
		do
			fd = open(name, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		while (fd < 0 && errno == EINTR);
		if (fd >= 0) {
			*name_out = name;
			return fd;
		}
		if (errno != EEXIST)
			break;
	}
	free(name);
	return -1;
}

/* Copy the first @p len bytes of @p from into @p to (both at offset 0). */
static int copy_prefix(int to, int from, long long len)
{
	off_t in = 0, out = 0;
	int plain = 0;

	while (in < (off_t)len) {
		size_t want = (size_t)((off_t)len - in > (1 << 30) ? (1 << 30) : (off_t)len - in);
		ssize_t n;

		if (!plain) {
			n = copy_file_range(from, &in, to, &out, want, 0);
			if (n < 0 && (errno == ENOSYS || errno == EXDEV || errno == EINVAL ||
				      errno == EOPNOTSUPP || errno == EPERM)) {
				plain = 1;
				continue;
			}
			if (n < 0 && errno == EINTR)
				continue;
		} else {
			char buf[65536];

			n = pread(from, buf, want < sizeof(buf) ? want : sizeof(buf), in);
			if (n < 0 && errno == EINTR)
				continue;
			if (n > 0) {
				if (write_at(to, buf, (size_t)n, (long long)out) < 0)
					return -1;
				in += n;
				out += n;
			}
		}
		if (n < 0)
			return -1;
		if (n == 0) {
			errno = EIO; /* the file shrank while being copied */
			return -1;
		}
	}
	return 0;
}

/*
 * Put the file @p fd, named @p tmp, at s->path (rename over it), durably when
 * fsync is on; it becomes s->fd. On failure @p tmp is removed and @p fd closed.
 */
static int install(cb__fsink *s, int fd, char *tmp, cb_error *err)
{
	int rc = 0;

	if (s->do_fsync && fdatasync(fd) < 0)
		rc = io_error(s, "fsync", err);
	else if (rename(tmp, s->path) < 0)
		rc = io_error(s, "rename", err);
	if (rc < 0) {
		unlink(tmp);
		close(fd);
	} else {
		s->fd = fd;
		if (s->do_fsync && sync_dir(s->path) < 0)
			rc = io_error(s, "fsync of the directory", err);
	}
	free(tmp);
	return rc;
}

/* @p path, made absolute against the working directory: new in *@p out. */
static int absolute(char **out, const char *path, const char *what, cb_error *err)
{
	char *cwd;
	size_t a, b;

	*out = NULL;
	if (path[0] == '/') {
		*out = strdup(path);
		return *out ? 0 : cb_error_set(err, CB_ENOMEM, "%s %s: out of memory", what, path);
	}
	while (path[0] == '.' && path[1] == '/')
		path += 2;
	cwd = getcwd(NULL, 0);
	if (!cwd)
		return cb_error_set(err, CB_ERROR,
				    "%s %s: cannot make the path absolute: getcwd failed: %s", what,
				    path, strerror(errno));
	a = strlen(cwd);
	b = strlen(path);
	*out = malloc(a + b + 2);
	if (!*out) {
		free(cwd);
		return cb_error_set(err, CB_ENOMEM, "%s %s: out of memory", what, path);
	}
	memcpy(*out, cwd, a);
	if (a == 0 || cwd[a - 1] != '/')
		(*out)[a++] = '/';
	memcpy(*out + a, path, b + 1);
	free(cwd);
	return 0;
}

/* Expand the template @p tmpl and make it absolute: new in *@p out. */
static int expand(char **out, const cb__fsink *s, const char *tmpl, const cb_step_context *sc,
		  cb_error *err)
{
	char *x = NULL;
	int rc = cb_file_path_expand(&x, tmpl, sc, err);

	*out = NULL;
	if (rc < 0) {
		cb_error_prefix(err, "%s", s->what);
		return rc;
	}
	rc = absolute(out, x, s->what, err);
	free(x);
	return rc;
}

/* A saved path: an absolute path, or an error. */
static int saved_path(char **out, const cb__fsink *s, const json_t *j, const char *key,
		      cb_error *err)
{
	const char *v = json_string_value(j);

	*out = NULL;
	if (!v || v[0] != '/')
		return cb_error_set(err, CB_EINVAL, "%s %s: saved \"%s\" is not an absolute path",
				    s->what, s->tmpl, key);
	*out = strdup(v);
	return *out ? 0 : cb_error_set(err, CB_ENOMEM, "%s: out of memory", s->what);
}

/* Can the committed context (JSON) hold these paths? */
static int utf8_ok(const char *a, const char *b)
{
	json_t *ja = json_string(a), *jb = b ? json_string(b) : NULL;
	int ok = ja && (!b || jb);

	json_decref(ja);
	json_decref(jb);
	return ok;
}

/*
 * The paths of this open: those of the committed context when it has them
 * (a restart writes where the first open decided, whatever the working
 * directory or the template say now), else the templates' expansion.
 */
static int resolve_paths(cb__fsink *s, const cb_step_context *sc, const json_t *saved,
			 cb_error *err)
{
	const json_t *jp = json_is_object(saved) ? json_object_get(saved, "path") : NULL;
	const json_t *jt = json_is_object(saved) ? json_object_get(saved, "temp_path") : NULL;
	char *target = NULL, *temp = NULL;
	int rc;

	if (jp) {
		rc = saved_path(&target, s, jp, "path", err);
		if (rc == 0 && s->atomic && jt)
			rc = saved_path(&temp, s, jt, "temp_path", err);
	} else {
		rc = expand(&target, s, s->tmpl, sc, err);
		if (rc == 0 && s->atomic && s->temp_tmpl)
			rc = expand(&temp, s, s->temp_tmpl, sc, err);
	}
	if (rc == 0 && s->atomic && !temp && !(temp = tmp_of(target)))
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", s->what);
	if (rc == 0 && !utf8_ok(target, temp))
		rc = cb_error_set(err, CB_EINVAL,
				  "%s %s: the path is not valid UTF-8 (the committed context "
				  "keeps it as JSON)",
				  s->what, s->tmpl);
	if (rc == 0 && s->atomic && strcmp(temp, target) == 0)
		rc = cb_error_set(err, CB_EINVAL,
				  "%s %s: the temporary path must differ from the path", s->what,
				  target);
	if (rc < 0) {
		free(target);
		free(temp);
		return rc;
	}
	free(s->path);
	free(s->final_path);
	if (s->atomic) {
		s->path = temp;
		s->final_path = target;
	} else {
		s->path = target;
		s->final_path = NULL;
	}
	return 0;
}

/* Does the open file @p fd (of @p size bytes) hold exactly @p head? */
static int holds_only(int fd, long long size, const char *head, size_t head_len)
{
	char buf[4096];
	size_t done = 0;

	if (size != (long long)head_len)
		return 0;
	while (done < head_len) {
		size_t want = head_len - done < sizeof(buf) ? head_len - done : sizeof(buf);
		ssize_t n = pread(fd, buf, want, (off_t)done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || memcmp(buf, head + done, (size_t)n) != 0)
			return 0;
		done += (size_t)n;
	}
	return 1;
}

/*
 * A first open (no committed offset): a new file with the header, or, for
 * CB_FILE_APPEND, with the existing file's content and then the header if
 * it was empty. CB_FILE_FAIL refuses a file that holds more than the header.
 */
static int start_file(cb__fsink *s, const char *head, size_t head_len, cb_error *err)
{
	const char *target = s->final_path ? s->final_path : s->path;
	struct stat st;
	long long keep = 0;
	mode_t mode = 0666;
	char *tmp = NULL;
	int rc = 0, src = -1, fd;

	if (s->if_exists != CB_FILE_REPLACE) {
		do
			src = open(target, O_RDONLY | O_CLOEXEC);
		while (src < 0 && errno == EINTR);
		if (src < 0 && errno != ENOENT)
			return cb_error_set(err, CB_ERROR, "%s %s: open failed: %s", s->what,
					    target, strerror(errno));
	}
	if (src >= 0) {
		if (fstat(src, &st) < 0)
			rc = cb_error_set(err, CB_ERROR, "%s %s: stat failed: %s", s->what, target,
					  strerror(errno));
		else if (!S_ISREG(st.st_mode))
			rc = cb_error_set(err, CB_EINVAL, "%s %s: exists and is not a regular file",
					  s->what, target);
		else if (s->if_exists == CB_FILE_FAIL &&
			 !holds_only(src, (long long)st.st_size, head, head_len))
			rc = cb_error_set(err, CB_EINVAL,
					  "%s %s: the file exists; remove it, choose another path, "
					  "or set append (if_exists = CB_FILE_APPEND)",
					  s->what, target);
		else if (s->if_exists == CB_FILE_APPEND && st.st_size > 0) {
			char last = 0;

			keep = (long long)st.st_size;
			mode = st.st_mode & 07777;
			head_len = 0; /* a file with content has its header */
			if (pread(src, &last, 1, (off_t)(keep - 1)) != 1 || last != '\n')
				rc = cb_error_set(
					err, CB_EINVAL,
					"%s %s: cannot append: the file does not end with "
					"a line break",
					s->what, target);
		}
		if (rc < 0) {
			close(src);
			return rc;
		}
	}
	fd = create_beside(&tmp, s->path, mode);
	if (fd < 0) {
		rc = io_error(s, "create", err);
		if (src >= 0)
			close(src);
		return rc;
	}
	if (keep > 0 && copy_prefix(fd, src, keep) < 0)
		rc = io_error(s, "copying the existing file", err);
	else if (head_len && write_at(fd, head, head_len, keep) < 0)
		rc = io_error(s, "writing", err);
	if (src >= 0)
		close(src);
	if (rc < 0) {
		unlink(tmp);
		free(tmp);
		close(fd);
		return rc;
	}
	rc = install(s, fd, tmp, err);
	if (rc < 0)
		return rc;
	s->flushed = s->committed = keep + (long long)head_len;
	return 0;
}

/*
 * Every open puts a new file (a new inode) at the path, written beside it and
 * renamed over it: a process that lost its lock but still holds the file it
 * opened (a frozen owner woken after a takeover) can only write into, or cut,
 * a file that no longer has a name.
 */
int cb__fsink_open(cb__fsink *s, const cb_step_context *sc, const json_t *saved, const char *head,
		   size_t head_len, cb_error *err)
{
	const json_t *jo = json_is_object(saved) ? json_object_get(saved, "offset") : NULL;
	struct stat st;
	long long off;
	char *tmp = NULL;
	int rc, src, fd;

	cb__fsink_close(s);
	rc = resolve_paths(s, sc, saved, err);
	if (rc < 0)
		return rc;
	if (!jo)
		return start_file(s, head, head_len, err);
	if (!json_is_integer(jo) || json_integer_value(jo) < 0)
		return cb_error_set(err, CB_EINVAL,
				    "%s %s: saved position is not {\"offset\": N >= 0}", s->what,
				    s->path);
	off = (long long)json_integer_value(jo);
	do
		src = open(s->path, O_RDONLY | O_CLOEXEC);
	while (src < 0 && errno == EINTR);
	if (src < 0) {
		if (errno == ENOENT)
			return cb_error_set(
				err, CB_EINVAL,
				"%s %s: cannot resume at offset %lld: the file is missing", s->what,
				s->path, off);
		return io_error(s, "open", err);
	}
	if (fstat(src, &st) < 0) {
		rc = io_error(s, "stat", err);
		close(src);
		return rc;
	}
	if ((long long)st.st_size < off) {
		close(src);
		return cb_error_set(err, CB_EINVAL,
				    "%s %s: the file (%lld bytes) is shorter than its committed "
				    "length (%lld bytes): it was changed since",
				    s->what, s->path, (long long)st.st_size, off);
	}
	/* The committed prefix, into a new file: what followed it is a chunk
	 * written before a COMMIT that never happened. */
	fd = create_beside(&tmp, s->path, st.st_mode & 07777);
	if (fd < 0) {
		rc = io_error(s, "create", err);
		close(src);
		return rc;
	}
	if (copy_prefix(fd, src, off) < 0) {
		rc = io_error(s, "copying the committed part", err);
		close(src);
		unlink(tmp);
		free(tmp);
		close(fd);
		return rc;
	}
	close(src);
	rc = install(s, fd, tmp, err);
	if (rc < 0)
		return rc;
	s->flushed = s->committed = off;
	return 0;
}

size_t cb__fsink_begin_write(cb__fsink *s)
{
	if (s->pending) {
		/* a write after update(): that chunk committed */
		s->committed = s->flushed;
		s->pending = 0;
	}
	return s->len;
}

int cb__fsink_reserve(cb__fsink *s, size_t n)
{
	size_t cap;
	char *p;

	if (n <= s->cap - s->len)
		return 0;
	if (n > SIZE_MAX / 2 - s->len)
		return CB_ENOMEM;
	cap = s->cap ? s->cap : 4096;
	while (cap < s->len + n)
		cap *= 2;
	p = realloc(s->buf, cap);
	if (!p)
		return CB_ENOMEM;
	s->buf = p;
	s->cap = cap;
	return 0;
}

int cb__fsink_append(cb__fsink *s, const void *p, size_t n)
{
	if (cb__fsink_reserve(s, n) < 0)
		return CB_ENOMEM;
	if (n)
		memcpy(s->buf + s->len, p, n);
	s->len += n;
	return 0;
}

void cb__fsink_cut(cb__fsink *s, size_t len)
{
	if (len < s->len)
		s->len = len;
	if (s->mark > s->len)
		s->mark = s->len;
}

int cb__fsink_flush(cb__fsink *s, json_t *out, cb_error *err)
{
	int rc;

	if (s->fd < 0)
		return cb_error_set(err, CB_EINVAL, "%s %s: update before open", s->what, s->path);
	if (!json_is_object(out))
		return cb_error_set(err, CB_EINVAL, "%s %s: update needs a JSON object", s->what,
				    s->path);
	if (s->pending) {
		/* a chunk that wrote nothing: the one before it committed */
		s->committed = s->flushed;
		s->pending = 0;
	}
	if (s->len) {
		if (write_at(s->fd, s->buf, s->len, s->flushed) < 0 ||
		    (s->do_fsync && fdatasync(s->fd) < 0)) {
			rc = io_error(s, "writing", err);
			/* no torn line stays behind */
			(void)ftruncate(s->fd, (off_t)s->flushed);
			s->len = s->mark = 0;
			return rc;
		}
		s->flushed += (long long)s->len;
	}
	s->len = s->mark = 0;
	if (json_object_set_new(out, "offset", json_integer((json_int_t)s->flushed)) < 0 ||
	    json_object_set_new(out, "path", json_string(s->final_path ? s->final_path : s->path)) <
		    0 ||
	    (s->final_path && json_object_set_new(out, "temp_path", json_string(s->path)) < 0))
		return cb_error_set(err, CB_ENOMEM, "%s %s: out of memory", s->what, s->path);
	s->pending = 1;
	return 0;
}

void cb__fsink_rollback(cb__fsink *s)
{
	s->len = s->mark = 0;
	s->pending = 0;
	if (s->fd >= 0 && s->flushed > s->committed && ftruncate(s->fd, (off_t)s->committed) == 0)
		s->flushed = s->committed;
}

void cb__fsink_savepoint(cb__fsink *s)
{
	s->mark = s->len;
}

void cb__fsink_rollback_to_savepoint(cb__fsink *s)
{
	cb__fsink_cut(s, s->mark);
}

/* Does @p path name the file open as @p fd? */
static int names_fd(const char *path, int fd)
{
	struct stat a, b;

	return fstat(fd, &a) == 0 && stat(path, &b) == 0 && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

int cb__fsink_complete(cb__fsink *s, cb_error *err)
{
	if (s->fd >= 0 && fdatasync(s->fd) < 0)
		return io_error(s, "fsync", err);
	if (!s->final_path)
		return 0;
	if (s->fd >= 0 && !names_fd(s->path, s->fd)) {
		/* published already, or replaced by a process that took over */
		if (names_fd(s->final_path, s->fd))
			return 0;
		return cb_error_set(err, CB_ERROR,
				    "%s %s: not published as %s: the file was replaced or removed "
				    "since this step opened it",
				    s->what, s->path, s->final_path);
	}
	return cb_file_publish(s->path, s->final_path, err);
}

int cb_file_publish(const char *temp_path, const char *path, cb_error *err)
{
	int fd, e;

	if (!temp_path || !path || !temp_path[0] || !path[0])
		return cb_error_set(err, CB_EINVAL, "publish: no path");
	do
		fd = open(temp_path, O_RDONLY | O_CLOEXEC);
	while (fd < 0 && errno == EINTR);
	if (fd < 0) {
		e = errno;
		if (e == ENOENT && access(path, F_OK) == 0)
			return 0; /* published before (a rerun of the publishing step) */
		return cb_error_set(err, e == ENOENT ? CB_EINVAL : CB_ERROR,
				    "publish %s as %s: cannot open: %s", temp_path, path,
				    strerror(e));
	}
	if (fsync(fd) < 0) {
		e = errno;
		close(fd);
		return cb_error_set(err, CB_ERROR, "publish %s as %s: fsync failed: %s", temp_path,
				    path, strerror(e));
	}
	close(fd);
	if (rename(temp_path, path) < 0)
		return cb_error_set(err, CB_ERROR, "publish %s as %s: rename failed: %s", temp_path,
				    path, strerror(errno));
	if (sync_dir(path) < 0)
		return cb_error_set(err, CB_ERROR,
				    "publish %s as %s: fsync of the directory "
				    "failed: %s",
				    temp_path, path, strerror(errno));
	return 0;
}

/*
 * One path template's check: its directory exists and this process may
 * create files in it, and the path is not a directory. A template that names
 * an id of the run ({job_execution}, {step_execution}, {job_instance}) is
 * not known before the run: not checked.
 */
static int check_path(const cb__fsink *s, const char *tmpl, const cb_step_context *sc,
		      cb_error *err)
{
	char *path = NULL, *slash;
	struct stat st;
	int rc;

	if (strstr(tmpl, "{job_execution}") || strstr(tmpl, "{step_execution}") ||
	    strstr(tmpl, "{job_instance}"))
		return 0;
	rc = cb_file_path_expand(&path, tmpl, sc, err);
	if (rc < 0)
		return cb_error_prefix(err, "%s", s->what);
	if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
		rc = cb_error_set(err, CB_EINVAL, "%s %s: is a directory", s->what, path);
		goto done;
	}
	slash = strrchr(path, '/');
	if (slash == path)
		slash[1] = '\0'; /* "/name": the root */
	else if (slash)
		*slash = '\0';
	else
		strcpy(path, ".");
	if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
		rc = cb_error_set(err, CB_EINVAL, "%s %s: the directory \"%s\" does not exist",
				  s->what, tmpl, path);
	else if (access(path, W_OK | X_OK) != 0)
		rc = cb_error_set(err, CB_EINVAL,
				  "%s %s: the directory \"%s\" is not writable by this process",
				  s->what, tmpl, path);
done:
	free(path);
	return rc;
}

int cb__fsink_check(const cb__fsink *s, const cb_step_context *sc, cb_error *err)
{
	int rc = check_path(s, s->tmpl, sc, err);

	if (rc == 0 && s->atomic && s->temp_tmpl)
		rc = check_path(s, s->temp_tmpl, sc, err);
	return rc;
}
