/*
 * What the file writers (csv.c, jsonl.c) share: a chunk's lines buffered in
 * memory, written to the file by update() (before the chunk's COMMIT), and
 * the committed length restored on restart by truncating the file.
 *
 * Lengths. `flushed` is the file's length after the last update();
 * `committed` the length known to be committed: update() makes `flushed`
 * pending, and the next write() or update() takes it as committed (the
 * engine only goes on to a new chunk after a COMMIT). cb__fsink_rollback
 * (for a writer `rollback` hook, see writers.h) cuts the file back to
 * `committed`.
 *
 * Crash safety: a process killed at any instant leaves a file whose first
 * `offset` bytes (the committed context) are exactly the committed chunks'
 * lines; open() with that context keeps only those.
 *
 * Ownership: every open() puts a new inode at the path (written beside it,
 * renamed over it), so a process that lost its lock and still holds the old
 * descriptor writes and truncates only a file without a name. Residual
 * window: a process frozen inside open() itself, between its copy and its
 * rename, and woken after a successor opened, replaces the successor's file.
 */
#ifndef CB_WRITERS_FILE_SINK_H
#define CB_WRITERS_FILE_SINK_H

#include <stddef.h>

#include "cbatch/item.h"

typedef struct cb__fsink {
	char *path;       /* where the lines go: the final path, or the temp path */
	char *final_path; /* atomic mode: the name published by cb_file_publish; else NULL */
	const char *what; /* names the writer in messages ("CSV writer") */
	char *tmpl;       /* the path option, a template (cb_file_path_expand) */
	char *temp_tmpl;  /* atomic mode's temp_path option; NULL: "<path>.tmp" */
	int atomic;
	int if_exists; /* a cb_file_if_exists */
	int do_fsync;
	int fd;    /* -1 when closed */
	char *buf; /* lines written since the last update() */
	size_t len, cap;
	long long flushed;   /* file length after the last update() */
	long long committed; /* file length known to be committed */
	int pending;         /* flushed awaits proof of commit */
	size_t mark;         /* buffer length at the last savepoint */
} cb__fsink;

/*
 * Set up @p s for the template @p path; @p temp_path (NULL: "<path>.tmp")
 * when @p atomic; @p if_exists a cb_file_if_exists. Strings are copied; the
 * paths are expanded at open. @return 0, CB_EINVAL (bad if_exists), CB_ENOMEM.
 */
int cb__fsink_init(cb__fsink *s, const char *what, const char *path, int atomic,
		   const char *temp_path, int do_fsync, int if_exists, cb_error *err);
/* Close and free everything. NULL-safe. */
void cb__fsink_free(cb__fsink *s);

/*
 * Open the file, as a new inode at s->path. The paths come from @p saved
 * ("path", "temp_path"), else from the templates expanded with @p sc and
 * made absolute. Without a saved offset (@p saved NULL or without
 * "offset"): a new file with @p head (@p head_len bytes, may be 0), or per
 * s->if_exists when a file is there (writers.h, "An existing file"). With
 * one: the file must exist and be at least that long; its first offset
 * bytes are copied into the new file (copy_file_range, else read/write),
 * which keeps the old file's mode. @return 0, CB_EINVAL (bad context or
 * template, file missing or shorter, file exists), CB_ERROR (I/O), CB_ENOMEM.
 */
int cb__fsink_open(cb__fsink *s, const cb_step_context *sc, const json_t *saved, const char *head,
		   size_t head_len, cb_error *err);
/*
 * The preflight (item.h `check`), creating nothing: the directory of each
 * path template (expanded with @p sc) exists and is writable, and the path
 * is not a directory. Templates naming an id of the run are not checked.
 * @return 0, CB_EINVAL naming the template and directory, CB_ENOMEM.
 */
int cb__fsink_check(const cb__fsink *s, const cb_step_context *sc, cb_error *err);
/* Close the file; lines not flushed (a chunk that never reached update) are dropped. */
void cb__fsink_close(cb__fsink *s);

/* Start a write() call: settle a pending update. @return the buffer's length, for cb__fsink_cut. */
size_t cb__fsink_begin_write(cb__fsink *s);
/* Make room for @p n more bytes in the buffer. @return 0 or CB_ENOMEM. */
int cb__fsink_reserve(cb__fsink *s, size_t n);
/* Append bytes. @return 0 or CB_ENOMEM. */
int cb__fsink_append(cb__fsink *s, const void *p, size_t n);
/* A write() failed: drop its lines, those buffered after @p len. */
void cb__fsink_cut(cb__fsink *s, size_t len);

/*
 * update(): write the buffered lines at the end of the committed data,
 * fsync if asked, and store {"offset": new length, "path": the absolute
 * path, "temp_path": the file written, in atomic mode} into @p out.
 * @return 0, CB_ERROR (I/O: the file is cut back, the lines dropped), CB_ENOMEM.
 */
int cb__fsink_flush(cb__fsink *s, json_t *out, cb_error *err);

/*
 * The cb_writer hooks of the file writers (item.h, writers.h): rollback: the chunk rolled back (after write, perhaps after update): drop
 * the buffer and cut the file back to `committed`. savepoint and
 * rollback_to_savepoint: around one item of an item-by-item scan, so that
 * a skipped item leaves no line.
 */
void cb__fsink_rollback(cb__fsink *s);
void cb__fsink_savepoint(cb__fsink *s);
void cb__fsink_rollback_to_savepoint(cb__fsink *s);

/*
 * The step completed (every chunk committed): fsync, and in atomic mode
 * publish the file (cb_file_publish) if the temporary path still names the
 * file this sink opened (else CB_ERROR: another process replaced it).
 * For a writer `complete` hook. @return 0 or CB_ERROR.
 */
int cb__fsink_complete(cb__fsink *s, cb_error *err);

#endif
