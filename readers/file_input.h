/*
 * What the file readers (csv.c, jsonl.c) share: a file read through one
 * fixed-size buffer, the physical line and column of the byte at hand, and
 * the restart position kept in the step execution context.
 *
 * Positions. A position is a byte offset that follows a record (or the
 * start of the data) and the 1-based number of the line that starts there.
 * `mark` is the position after the last record consumed (handed out, or
 * refused as malformed); update() stores it as pending, and the next read
 * takes the pending position as committed (a read after update() proves that
 * chunk's COMMIT went through). rollback() rewinds to the committed position:
 * the reader seeks there at its next read.
 *
 * Lines are counted as the parsers see line breaks (LF, CRLF, a lone CR for
 * CSV); the column of a byte is its distance in bytes from the start of its
 * line, plus one.
 */
#ifndef CB_READERS_FILE_INPUT_H
#define CB_READERS_FILE_INPUT_H

#include <stddef.h>

#include "cbatch/item.h"

#define CB__FIN_EOF   (-1) /* fin_peek: end of file */
#define CB__FIN_IOERR (-2) /* fin_peek: read failed (errno in io_errno) */

typedef struct cb__fpos {
	long long off;
	long long line;
} cb__fpos;

typedef struct cb__fin {
	const char *path; /* borrowed from the reader */
	int fd;           /* -1 when closed */
	unsigned char *buf;
	size_t cap;
	size_t pos, end;      /* unread bytes: buf[pos, end) */
	long long buf_off;    /* file offset of buf[0] */
	long long line;       /* line of the next byte */
	long long line_start; /* file offset of that line's first byte */
	int eof;              /* read() returned 0 */
	int io_errno;         /* the last read()'s errno, after CB__FIN_IOERR */
	cb__fpos start;       /* where the data begins (after a BOM, a header) */
	cb__fpos mark;        /* after the last record consumed */
	cb__fpos pend;        /* stored by the last update() */
	cb__fpos com;         /* committed */
	int pending;          /* pend is waiting for proof of commit */
	int seek;             /* seek to `to` before the next read */
	cb__fpos to;
} cb__fin;

/*
 * The preflight (item.h `check`) of a file reader: a file at @p path must
 * be a readable file, not a directory. A missing file is not refused here
 * (an earlier step of the job may make it; `open` refuses it, CB_EINVAL).
 * @p what names the reader. @return 0 or CB_EINVAL.
 */
int cb__fin_check(const char *path, const char *what, cb_error *err);

/* Open @p path (borrowed; must outlive @p f) for reading with a buffer of @p bufsize bytes. */
int cb__fin_open(cb__fin *f, const char *path, size_t bufsize, cb_error *err);
/* Close the file and free the buffer. NULL-safe, idempotent. */
void cb__fin_close(cb__fin *f);

/* Refill an empty buffer. @return 1 with bytes, 0 at end of file, CB__FIN_IOERR. */
int cb__fin_fill(cb__fin *f);

/* The next byte (not consumed), CB__FIN_EOF or CB__FIN_IOERR. */
static inline int cb__fin_peek(cb__fin *f)
{
	int rc;

	if (f->pos < f->end)
		return f->buf[f->pos];
	rc = cb__fin_fill(f);
	if (rc == 1)
		return f->buf[f->pos];
	return rc == 0 ? CB__FIN_EOF : CB__FIN_IOERR;
}

/* File offset of the next byte. */
static inline long long cb__fin_offset(const cb__fin *f)
{
	return f->buf_off + (long long)f->pos;
}

/* Column (1-based, in bytes) of the next byte. */
static inline long long cb__fin_col(const cb__fin *f)
{
	return cb__fin_offset(f) - f->line_start + 1;
}

/* A line break ends just before the next byte: count it. */
static inline void cb__fin_newline(cb__fin *f)
{
	f->line++;
	f->line_start = cb__fin_offset(f);
}

/* Position the next read at @p p (drops the buffer). @return 0 or CB_ERROR. */
int cb__fin_seek(cb__fin *f, cb__fpos p, cb_error *err);

/* At offset 0: skip a UTF-8 byte order mark. @return 0 or CB_ERROR. */
int cb__fin_skip_bom(cb__fin *f, cb_error *err);

/* The current position (next byte and its line). */
static inline cb__fpos cb__fin_here(const cb__fin *f)
{
	cb__fpos p;

	p.off = cb__fin_offset(f);
	p.line = f->line;
	return p;
}

/* Report the last read error (CB_ERROR naming the file). */
int cb__fin_io_error(cb__fin *f, cb_error *err);

/*
 * Take the saved position out of @p saved ({"offset": N, "line": L}; NULL or
 * no "offset": none) and check it against the file: not before f->start, not
 * past the end, and (unless it is f->start or the end) right after a line
 * break (@p breaks: the bytes that may end a line). On success the reader
 * sits at the saved position, or at f->start without one, and mark and com
 * are set there. @return 0, CB_EINVAL (bad context, file changed), CB_ERROR.
 */
int cb__fin_restore(cb__fin *f, const json_t *saved, const char *breaks, cb_error *err);

/* Begin a read: settle a pending update and a pending seek. @return 0 or CB_ERROR. */
int cb__fin_begin(cb__fin *f, cb_error *err);

/* Store mark into @p out as {"offset", "line"} and make it pending. @return 0 or CB_ENOMEM. */
int cb__fin_update(cb__fin *f, json_t *out, cb_error *err);

/* Forget what was read since the committed position; the next read seeks there. */
void cb__fin_rollback(cb__fin *f);

/* A read failed mid-record (I/O, memory): the next read starts again at mark. */
void cb__fin_retry_at_mark(cb__fin *f);

#endif
