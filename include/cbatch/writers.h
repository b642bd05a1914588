/**
 * @file writers.h
 * Built-in writers.
 *
 * The PostgreSQL writers send one statement per chunk (not per row): the
 * chunk's values travel as text arrays ($1::type[]) and are spread with
 * unnest, queued in the chunk's pipeline with cb_tx_send so they go out with
 * the engine's bookkeeping and the COMMIT in one round trip. Identifiers are
 * quoted with PQescapeIdentifier; column types are looked up once, in open,
 * from the target table (format_type of pg_attribute).
 */
#ifndef CBATCH_WRITERS_H
#define CBATCH_WRITERS_H

#include <stddef.h>
#include "item.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/**
 * Where a writer puts one item's column values: the writer hands @p out to a
 * bind callback, which calls cb_values_set* once per column (in the writer's
 * column order). Values are copied at once; no allocation per field once the
 * writer's buffers have grown.
 *
 * The values keep the first error: once a cb_values_set* call failed, the
 * later ones do nothing and return that error, and the writer reports it
 * (naming the column and the item) whatever the bind returns. So a bind may
 * make its calls in a row and return 0, without checking each:
 *
 *     cb_values_set(out, 0, cb_row_get(row, 0), cb_row_len(row, 0));
 *     cb_values_set_long(out, 1, n);
 *     return 0;
 */
typedef struct cb_values cb_values;

/** Set column @p col to @p len bytes of text (len < 0: strlen). NULL value: SQL NULL. */
int cb_values_set(cb_values *out, size_t col, const char *value, int len);
/** Set column @p col to a decimal integer. */
int cb_values_set_long(cb_values *out, size_t col, long long value);
/** Number of columns the writer expects. */
size_t cb_values_count(const cb_values *out);
/** Name of column @p col (borrowed), as configured in the writer. */
const char *cb_values_name(const cb_values *out, size_t col);

/**
 * Fill @p out with the column values of @p item. Return 0, or a negative
 * code with a message naming the item to fail the chunk.
 */
typedef int (*cb_bind_fn)(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
			  cb_error *err);

/**
 * A bind that reads `cb_row *` items (from the PostgreSQL readers) and takes
 * each writer column from the row column of the same name; a column the row
 * lacks is an error naming it, except `job_execution_id`, which is taken from
 * the step context. Pass NULL as bind to get it.
 */
int cb_bind_row_by_name(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
			cb_error *err);

/** Version 2 added `modes`; version 3 `lossy_columns`. */
#define CB_PG_UPSERT_OPTIONS_VERSION 3

/**
 * How the upsert writer sets a column when the key exists (options version
 * 2), and how it merges items of one chunk that share a key. The writer
 * writes the SQL: identifiers are quoted, values are always parameters, and
 * no free SQL text is taken.
 */
typedef enum cb_upsert_mode {
	/** `c = EXCLUDED.c`; in one chunk the last item wins. The default. */
	CB_UPSERT_REPLACE = 0,
	/** `c = c + EXCLUDED.c` (a NULL side adds nothing); in one chunk: sum(). */
	CB_UPSERT_ADD = 1,
	/** Counts items: a new row gets the number of the chunk's items with its
	 * key, an existing one `c = c + that number`. The bound value is ignored
	 * (the bind must still set it; NULL will do). */
	CB_UPSERT_COUNT = 2,
	/** `c = greatest(c, EXCLUDED.c)`; in one chunk: max(). */
	CB_UPSERT_MAX = 3,
	/** `c = least(c, EXCLUDED.c)`; in one chunk: min(). */
	CB_UPSERT_MIN = 4
} cb_upsert_mode;

/**
 * Options of the upsert writer:
 *
 *     INSERT INTO t (c1, ..., cn) SELECT * FROM unnest($1::T1[], ..., $n::Tn[])
 *     ON CONFLICT (k1, ...) DO UPDATE SET u1 = EXCLUDED.u1, ...   (or DO NOTHING)
 *
 * Version 1: the chunk's items must have distinct keys (one row per key per
 * chunk; PostgreSQL refuses a second one with "ON CONFLICT DO UPDATE command
 * cannot affect row a second time").
 *
 * Version 2 (accumulating upserts): items with the same key in one chunk are
 * merged by the statement before the insert (GROUP BY the key columns, in
 * the database, so values keep their type's arithmetic), each column by its
 * @p modes entry (last item wins for REPLACE, summed for ADD, counted for
 * COUNT, max/min), and the update on conflict applies the same mode against
 * the target row:
 *
 *     INSERT INTO t AS _cb_t (customer, total, seen, last_at)
 *     SELECT ... FROM (SELECT customer, sum(total), count(*), max(last_at)
 *                      FROM unnest(...) GROUP BY customer) ...
 *     ON CONFLICT (customer) DO UPDATE SET
 *       total = coalesce(_cb_t.total + EXCLUDED.total, _cb_t.total, EXCLUDED.total),
 *       seen = coalesce(_cb_t.seen, 0) + EXCLUDED.seen,
 *       last_at = greatest(_cb_t.last_at, EXCLUDED.last_at)
 *
 * Keys are merged by the equality ON CONFLICT uses, that of the key's
 * unique index: its collation (a nondeterministic one finds 'abc' and 'ABC'
 * equal) and its type's (numeric 1.0 = 1.00, citext). Where equal keys can
 * be spelt differently, a new row takes the chunk's last item's key, as a
 * CB_UPSERT_REPLACE column takes its value. `open` refuses, naming the table
 * and column, a key whose unique index compares by an operator class other
 * than its type's default, or two unique indexes on the key with different
 * collations: no merge could agree with both.
 *
 * A failed statement is reported naming the writer's table, its key columns
 * and, where known, the column (a not-null or check violation, a value its
 * column's type refuses, an accumulated column that overflows).
 *
 * An accumulating upsert applied twice adds twice: pair it with a strict
 * status transition of the source rows in the same chunk transaction (the
 * status writer, options version 3), so that a row another run took makes
 * the chunk roll back instead of being added again.
 *
 * Target columns of array types are refused by `open` (unnest would flatten
 * them).
 *
 * The writer's `check` (the preflight, cb_job_check), before a launch
 * records anything, refuses with CB_EINVAL naming the table and column: a
 * missing table or column, an ON CONFLICT key without a unique index or
 * constraint on exactly its columns, a key whose index no merge can follow
 * (as `open`), CB_UPSERT_ADD or CB_UPSERT_COUNT on a column that is not a
 * number (ADD also takes an interval), CB_UPSERT_MAX or CB_UPSERT_MIN on a
 * type without an order, and a lossy assignment (see @p lossy_columns).
 * Then the statement itself is prepared unnamed (nothing runs), so that
 * whatever else the server would refuse is refused there too.
 */
typedef struct cb_pg_upsert_options {
	unsigned int version;       /**< CB_PG_UPSERT_OPTIONS_VERSION (1 or 2) */
	const char *schema;         /**< NULL: unqualified */
	const char *table;          /**< required */
	const char *const *columns; /**< target columns, in bind order; required */
	size_t ncolumns;            /**< 0: @p columns is NULL-terminated */
	const char *const
		*key_columns; /**< conflict target (a unique constraint's columns); required */
	size_t nkeys;         /**< 0: @p key_columns is NULL-terminated */
	const char *const *update_columns; /**< NULL: all non-key columns; with nupdate 0 and
					      non-NULL: DO NOTHING */
	size_t nupdate;
	cb_bind_fn bind; /**< NULL: cb_bind_row_by_name */
	void *bind_ctx;
	/**
	 * Non-zero: rows whose key existed already (updated, or left alone by DO
	 * NOTHING) are added to the step's duplicate_target_write_count, in the
	 * chunk's transaction.
	 */
	int count_duplicates;
	/**
	 * A further target column (not in @p columns) set to the job execution
	 * id on every row, e.g. "job_execution_id": sent once per chunk as one
	 * parameter instead of an array of equal values. NULL: none. It is
	 * updated on conflict unless @p update_columns says otherwise.
	 */
	const char *stamp_column;
	/**
	 * Since version 2: one cb_upsert_mode per entry of @p columns (key
	 * columns must be CB_UPSERT_REPLACE); NULL: all CB_UPSERT_REPLACE. A
	 * column left out of @p update_columns is not changed on conflict, but
	 * its mode still merges the chunk's items.
	 */
	const cb_upsert_mode *modes;
	/**
	 * Since version 3: columns (of @p columns) whose assignment may lose
	 * something on purpose. The writer's check (the preflight, before a
	 * launch records anything) compares the type of each value the reader
	 * gives a column bound by name (cb_bind_row_by_name, NULL @p bind) with
	 * the column's type, and refuses a silent loss: a timestamp into a date
	 * (the time of day), a timestamptz into a timestamp (the zone), a
	 * numeric(p,s) into one of a smaller scale, text or a longer varchar
	 * into a varchar(n) (the writer's cast cuts it); and a value PostgreSQL
	 * would not assign (text into an integer column; a numeric(p,s) with a
	 * scale into an integer column), which fails at chunk time for a value
	 * that is not one. A column listed here is not refused. Not judged: an
	 * unconstrained numeric or a float (only the values know their scale),
	 * and, with a bind callback, every column (the values' C types are not
	 * known before they are bound).
	 * NULL: none. Copied.
	 */
	const char *const *lossy_columns;
	size_t nlossy; /**< 0: @p lossy_columns is NULL-terminated (or NULL) */
} cb_pg_upsert_options;

#define CB_PG_UPSERT_OPTIONS_INIT                                                                  \
	{                                                                                          \
		CB_PG_UPSERT_OPTIONS_VERSION, NULL, NULL, NULL, 0, NULL, 0, NULL, 0, NULL, NULL,   \
			0, NULL, NULL, NULL, 0                                                     \
	}

/** Fill @p out with an upsert writer (options copied). @return 0, CB_EINVAL, CB_ENOMEM. */
int cb_pg_upsert_writer_new(cb_writer *out, const cb_pg_upsert_options *opts, cb_error *err);

/**
 * Fill @p out with an insert-if-absent writer: the upsert writer with
 * `ON CONFLICT (keys) DO NOTHING` (update_columns ignored) that counts the
 * conflicts it absorbed as duplicate target writes — the writer for
 * event/source ids that must land once. @return as cb_pg_upsert_writer_new.
 */
int cb_pg_insert_if_absent_writer_new(cb_writer *out, const cb_pg_upsert_options *opts,
				      cb_error *err);

#define CB_PG_COPY_OPTIONS_VERSION 1

/**
 * Options of the COPY writer, for append-only targets: the chunk's items go
 * as one `COPY t (c1, ...) FROM STDIN` (text format) in the chunk's
 * transaction. Faster than INSERT for wide, large chunks, but not
 * idempotent by itself (a rerun appends again): use it where the target is
 * keyed by the chunk's execution, or cleaned before a rerun.
 */
typedef struct cb_pg_copy_options {
	unsigned int version; /**< CB_PG_COPY_OPTIONS_VERSION */
	const char *schema;
	const char *table;          /**< required */
	const char *const *columns; /**< in bind order; required */
	size_t ncolumns;
	cb_bind_fn bind; /**< NULL: cb_bind_row_by_name */
	void *bind_ctx;
} cb_pg_copy_options;

#define CB_PG_COPY_OPTIONS_INIT                                                                    \
	{                                                                                          \
		CB_PG_COPY_OPTIONS_VERSION, NULL, NULL, NULL, 0, NULL, NULL                        \
	}

/** Fill @p out with a COPY writer (options copied). @return 0, CB_EINVAL, CB_ENOMEM. */
int cb_pg_copy_writer_new(cb_writer *out, const cb_pg_copy_options *opts, cb_error *err);

#define CB_PG_STATUS_OPTIONS_VERSION 3

/** What a strict status transition does when it finds a conflict (options version 3). */
typedef enum cb_transition_conflict {
	/** Roll the chunk back and read it again: the rows another run took are
	 * filtered out by the reader's own filter (e.g. `NOT processed`) now. */
	CB_TRANSITION_REREAD = 0,
	/** Roll the chunk back and fail the step (restartably), naming the rows. */
	CB_TRANSITION_FAIL = 1,
	/** No check: rows already in the target state are left alone and the
	 * chunk commits (options versions 1 and 2 behave so). */
	CB_TRANSITION_LENIENT = 2
} cb_transition_conflict;

/** SQLSTATE of a strict transition's conflict when the chunk is to be read again. */
#define CB_SQLSTATE_TRANSITION_REREAD "CBR01"
/** SQLSTATE of a strict transition's conflict that fails the step. */
#define CB_SQLSTATE_TRANSITION_CONFLICT "CBF01"

/**
 * Options of the status writer, which marks the chunk's source rows:
 *
 *     UPDATE t SET <set_column> = $1 WHERE k = ANY($2::K[])          (one key)
 *     UPDATE t SET ... FROM unnest($2::K1[], $3::K2[]) AS v(k1, k2)
 *      WHERE (t.k1, t.k2) = (v.k1, v.k2)                             (several)
 *
 * Key values come from the bind callback (in key order), or by default from
 * the `cb_row *` item's columns of the same names.
 *
 * Strict transitions (options version 3, the default). Each source row must
 * still be in its source state: the UPDATE also requires
 * `<set_column> IS DISTINCT FROM <set_value>` (or, with @p expect_column,
 * `<expect_column> = <expect_value>`), and when it changes fewer rows than
 * the chunk's distinct keys (another run took some between this chunk's read
 * and its write, or they were transitioned already), the statement raises an
 * error inside the chunk's transaction (never a count read after COMMIT), so
 * nothing of the chunk commits: no writer in the same chunk transaction
 * (e.g. an accumulating upsert) can apply a row twice. Then, by
 * @p on_conflict:
 *
 * - CB_TRANSITION_REREAD (default): the chunk rolls back and is read again
 *   (SQLSTATE CB_SQLSTATE_TRANSITION_REREAD; the engine rewinds the reader,
 *   whose filter now leaves the taken rows out). At most @p max_rereads
 *   chunks in a row are read again; the next conflict fails the step as
 *   below. A reader without `rollback` cannot re-read: the step fails.
 * - CB_TRANSITION_FAIL: the step fails (SQLSTATE
 *   CB_SQLSTATE_TRANSITION_CONFLICT, restartable) with a message naming the
 *   table, how many rows were not in the expected state, and up to 10 of
 *   their keys.
 *
 * Either way the event adds 1 to the step execution's
 * transition_conflict_count (committed at once, apart from the chunk).
 * With a strict transition @p count_unchanged counts nothing: a chunk with
 * unchanged rows never commits. Versions 1 and 2 keep their behaviour
 * (CB_TRANSITION_LENIENT): only @p expect_column, when set, filters rows.
 */
typedef struct cb_pg_status_options {
	unsigned int version; /**< CB_PG_STATUS_OPTIONS_VERSION (1, 2 or 3) */
	const char *schema;
	const char *table;              /**< required */
	const char *const *key_columns; /**< required */
	size_t nkeys;                   /**< 0: @p key_columns is NULL-terminated */
	const char *set_column;         /**< required, e.g. "processed" */
	const char *set_value;          /**< text of the new value, e.g. "true"; sent as a
					    parameter; NULL: SQL NULL */
	cb_bind_fn bind;                /**< NULL: cb_bind_row_by_name over the key columns */
	void *bind_ctx;
	/**
	 * Conditional transition: only rows whose @p expect_column equals
	 * @p expect_value (NULL: IS NULL) change, e.g. `SET status = 'DONE' ...
	 * AND status = 'READY'`, so a rerun cannot transition a row twice.
	 */
	const char *expect_column;
	const char *expect_value;
	/** Non-zero: keys that did not transition count as duplicate target writes. */
	int count_unchanged;
	/**
	 * Since version 2. Non-zero: also mark the chunk's filtered items (read,
	 * but dropped by the processor), in the same transaction with the same
	 * statement, so that a rerun does not read and filter them again. The
	 * engine hands them over through cb_writer's write_filtered hook.
	 */
	int mark_filtered;
	/** Since version 2: the value for filtered items; NULL: @p set_value. */
	const char *filtered_value;
	/**
	 * Since version 2: the keys of a filtered item, which is the reader's
	 * item (not a processor's output); NULL: cb_bind_row_by_name, for
	 * `cb_row *` items of the PostgreSQL readers.
	 */
	cb_bind_fn filtered_bind;
	void *filtered_bind_ctx;
	/** Since version 3: a cb_transition_conflict; 0 is CB_TRANSITION_REREAD. */
	int on_conflict;
	/** Since version 3: chunks read again in a row before a conflict fails; 0: 5. */
	unsigned int max_rereads;
} cb_pg_status_options;

#define CB_PG_STATUS_OPTIONS_INIT                                                                  \
	{                                                                                          \
		CB_PG_STATUS_OPTIONS_VERSION, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL,   \
			NULL, 0, 0, NULL, NULL, NULL, CB_TRANSITION_REREAD, 0                      \
	}

/** Fill @p out with a status writer (options copied). @return 0, CB_EINVAL, CB_ENOMEM. */
int cb_pg_status_writer_new(cb_writer *out, const cb_pg_status_options *opts, cb_error *err);

/* ---- file writers: CSV and JSON lines ------------------------------------ */

/*
 * The file writers are not transactional, so they follow the chunk
 * transaction as closely as a file can:
 *
 * - write() only formats lines into memory. Several write() calls before
 *   an update() add up (the engine's item-by-item scan writes one item per
 *   call); a failing write() leaves none of its own lines.
 * - update(), which runs inside the chunk transaction just before COMMIT,
 *   writes them at the end of the data (one pwrite; fdatasync when asked)
 *   and stores {"offset": N}, the file's new length, in the step execution
 *   context. The file thus runs ahead of the database by at most one chunk.
 * - open() on restart keeps the file up to the saved offset: the lines of a
 *   chunk written before a COMMIT that failed or never happened (a kill
 *   between update() and COMMIT) go away, and the restarted step writes them
 *   again. No duplicate or torn line survives a crash. A file shorter than
 *   the offset, or missing, is an open error (CB_EINVAL). Without a saved
 *   offset (first run, or no chunk committed yet) open() starts a file with
 *   the header (see "An existing file" below).
 * - Every open() puts a new file (a new inode) at the path: it writes the
 *   header, or copies the committed prefix, into a new file beside it
 *   ("<path>.~cb<pid>.<n>", O_EXCL) and renames that over the path. A process
 *   that lost its lock but still holds the old file open (an owner frozen
 *   past its lease, woken after a takeover) can then only write into, or
 *   cut, a file that has no name any more: never the new owner's. A crash
 *   between the copy and the rename leaves that new file beside the path;
 *   nothing reads it, it may be removed.
 *
 * Within one process the engine tells the writer what became of each chunk
 * (cb_writer's rollback, savepoint, rollback_to_savepoint and complete
 * hooks): a chunk that rolls back, or is retried, or is written again item by
 * item after a skippable write failure, leaves no line of the failed attempt,
 * and an item skipped in the item-by-item pass leaves none either. The
 * engine leaves the files alone (no rollback, no publish) when this process
 * lost its lock (CB_EFENCED, CB_ESTALE) or its connection (the COMMIT may
 * have happened: the committed context settles it when the writer is
 * reopened, on reconnect or restart); it flushes no lines once the heartbeat
 * knows that the lock is lost, and reopens after a reconnect only while the
 * lock is still its own.
 *
 * Atomic mode (`atomic`): the lines go to a temporary file (`temp_path`, by
 * default "<path>.tmp"), restartable exactly as above. When the step's last
 * chunk has committed, the writer's `complete` hook publishes it
 * (cb_file_publish: fsync, rename over `path`, fsync the directory) before
 * the step is recorded COMPLETED; a failed or stopped step leaves `path`
 * alone, and so does a step whose temporary file is no longer the one it
 * opened (replaced by a process that took over: an error, nothing
 * published). Readers of `path` see either the old file or the complete new one,
 * never a part. A crash between the rename and the step's COMPLETED record is
 * harmless: the rerun finds the file published (see cb_file_publish).
 *
 * Paths. The `path` (and `temp_path`) options are templates, expanded at the
 * step's first open (cb_file_path_expand); a relative result is resolved
 * against the working directory then. That absolute path is saved in the
 * writer's committed context ({"offset": N, "path": ..., and "temp_path" in
 * atomic mode}), and a restart writes to the saved path, whatever its
 * working directory and whatever the template would expand to now (e.g.
 * {job_execution} of the restart).
 *
 * An existing file. A step that starts without a committed context (a new
 * instance, or one whose first chunk never committed) and finds a file at
 * the path (the published path in atomic mode) acts on `if_exists`:
 * CB_FILE_FAIL (the default) refuses it with CB_EINVAL, "... exists; remove
 * it, choose another path, or set append", unless the file holds exactly
 * what the open would write (the header, or nothing): such a file is left by
 * a first chunk that never committed and is replaced. CB_FILE_APPEND keeps
 * the file's content as the prefix of the new file (the header is written
 * only when the file is empty; a file that does not end with a line break is
 * refused): the committed offsets count from the start of the file, so that
 * the truncation to the committed offset on restart stays exact.
 * CB_FILE_REPLACE starts an empty file, as before. One case is left to the
 * operator: a process killed between its first chunk's update and COMMIT
 * (or whose connection broke there, the COMMIT not having happened) leaves
 * lines that no committed context accounts for; the reopen then refuses the
 * file (CB_FILE_FAIL), or keeps those lines (CB_FILE_APPEND).
 */

/** What a file writer does with a file that exists at its first open. */
typedef enum cb_file_if_exists {
	CB_FILE_FAIL = 0,   /**< refuse it (CB_EINVAL), unless it holds only the header */
	CB_FILE_APPEND = 1, /**< keep its content and write after it */
	CB_FILE_REPLACE = 2 /**< replace it with a new file */
} cb_file_if_exists;

/**
 * Expand the path template @p tmpl with the step context @p sc (borrowed;
 * NULL is accepted for a template without placeholders):
 *
 *     {job}             the job's name
 *     {step}            the step's name
 *     {job_execution}   the job execution id
 *     {step_execution}  the step execution id
 *     {job_instance}    the job instance id
 *     {param:NAME}      the value of parameter NAME as text (its canonical
 *                       form, e.g. 2026-06-30 for a date)
 *     {{ and }}         a literal brace
 *
 * A value never steers the file outside the template's directory: a value
 * that is empty, starts with '.', or contains '/' or a control character is
 * refused (CB_EINVAL naming the placeholder and the value), so no component
 * made with one can be "." or "..". The file writers call it at their first
 * open; it is public for jobs that name files by other means.
 *
 * @param out  set to the expanded path (new: free it with free()), or NULL on error
 * @return 0, CB_EINVAL (unknown placeholder, unbalanced brace, parameter
 *         not set, refused value), CB_ENOMEM.
 */
int cb_file_path_expand(char **out, const char *tmpl, const cb_step_context *sc, cb_error *err);

/**
 * Publish a file written in atomic mode: fsync @p temp_path, rename it to
 * @p path (replacing it atomically) and fsync the directory. When
 * @p temp_path is missing but @p path exists, the file was published before
 * (a rerun after a crash between rename and commit) and this returns 0. The
 * file writers' `complete` hook calls it; it is public for jobs that write a
 * file by other means.
 * @return 0, CB_EINVAL (neither file exists), CB_ERROR (I/O).
 */
int cb_file_publish(const char *temp_path, const char *path, cb_error *err);

/**
 * Where the CSV writer's format callback puts one item's fields, in order.
 * Values are quoted and copied into the chunk's buffer at once. A failing
 * call records its error in the row, which the writer reports after the
 * callback returns, so a callback may ignore the return codes.
 */
typedef struct cb_csv_row cb_csv_row;

/**
 * Add a field of @p len bytes (copied). Quoting is minimal: the field is
 * quoted when it holds the delimiter, '"', CR or LF (each '"' doubled), or
 * when it is empty; @p value NULL adds an empty field that is not quoted.
 * So NULL and "" stay apart as the CSV reader's cb_csv_field.quoted sees
 * them (as in PostgreSQL's CSV format). @return 0 or CB_ENOMEM.
 */
int cb_csv_row_add(cb_csv_row *row, const char *value, size_t len);
/** As cb_csv_row_add with strlen(value); NULL: an empty unquoted field. */
int cb_csv_row_add_str(cb_csv_row *row, const char *value);
/** Add a decimal integer. */
int cb_csv_row_add_long(cb_csv_row *row, long long value);
/** Add a printf-formatted field. @return 0, CB_ENOMEM, CB_EINVAL (bad format). */
int cb_csv_row_addf(cb_csv_row *row, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
/** Number of fields added so far for this item. */
size_t cb_csv_row_count(const cb_csv_row *row);

/**
 * Add the fields of @p item to @p row. An item for which no field is added
 * writes no line. Return 0, or a negative code with a message naming the
 * item to fail the chunk.
 */
typedef int (*cb_csv_format_fn)(void *ctx, const void *item, cb_csv_row *row, cb_error *err);

/**
 * The format used when none is given: @p item is a `cb_csv_record *` (from
 * the CSV reader), whose fields are written as they are (a quoted empty
 * field stays quoted).
 */
int cb_csv_format_record(void *ctx, const void *item, cb_csv_row *row, cb_error *err);

#define CB_CSV_WRITER_OPTIONS_VERSION 2

/** Options of the CSV writer. Strings are copied by cb_csv_writer_new. */
typedef struct cb_csv_writer_options {
	unsigned int version; /**< CB_CSV_WRITER_OPTIONS_VERSION (1 or 2) */
	const char *path;     /**< the output file, a template (cb_file_path_expand); required */
	char delimiter;       /**< 0: ','. Not '"', CR or LF */
	const char *line_end; /**< "\n" (NULL) or "\r\n" (RFC 4180) */
	const char *const *header; /**< header row, written on a first run; NULL: none */
	size_t nheader;            /**< with a header, every row must have this many fields */
	cb_csv_format_fn format;   /**< NULL: cb_csv_format_record */
	void *format_ctx;          /**< passed to @p format (borrowed) */
	int quote_all;             /**< non-zero: quote every field (NULL fields excepted) */
	int fsync;                 /**< non-zero: fdatasync after each chunk's lines */
	int atomic;                /**< non-zero: write to @p temp_path; see cb_file_publish */
	const char *temp_path;     /**< atomic mode's file, a template; NULL: "<path>.tmp" */
	/** Since version 2: a cb_file_if_exists, for a file found at the first open. */
	int if_exists;
} cb_csv_writer_options;

#define CB_CSV_WRITER_OPTIONS_INIT                                                                 \
	{                                                                                          \
		CB_CSV_WRITER_OPTIONS_VERSION, NULL, ',', NULL, NULL, 0, NULL, NULL, 0, 0, 0,      \
			NULL, CB_FILE_FAIL                                                         \
	}

/**
 * Fill @p out with a CSV writer (options copied; the step calls out->free).
 * Behaviour on chunks, restart and crash: see "file writers" above. A
 * format failure or a row whose field count differs from the header's fails
 * the chunk with a message naming the writer, the file and the item's
 * position in the chunk. @return 0, CB_EINVAL (no path, bad delimiter or
 * line end, NULL header name), CB_ENOMEM.
 */
int cb_csv_writer_new(cb_writer *out, const cb_csv_writer_options *opts, cb_error *err);

/**
 * Make the JSON value for @p item: set @p out to a new reference (the writer
 * steals it), or to NULL to write no line for the item. Return 0, or a
 * negative code with a message to fail the chunk.
 */
typedef int (*cb_jsonl_format_fn)(void *ctx, const void *item, json_t **out, cb_error *err);

#define CB_JSONL_WRITER_OPTIONS_VERSION 2

/** Options of the JSON lines writer. Strings are copied. */
typedef struct cb_jsonl_writer_options {
	unsigned int version; /**< CB_JSONL_WRITER_OPTIONS_VERSION (1 or 2) */
	const char *path;     /**< the output file, a template (cb_file_path_expand); required */
	cb_jsonl_format_fn format; /**< NULL: items are `json_t *` (borrowed) */
	void *format_ctx;
	/**
	 * jansson encoding flags, e.g. JSON_SORT_KEYS, JSON_ENSURE_ASCII,
	 * JSON_ENCODE_ANY (values other than objects and arrays),
	 * JSON_REAL_PRECISION(n). The output is always compact, one value per
	 * line: JSON_INDENT is ignored.
	 */
	size_t dump_flags;
	int fsync;             /**< non-zero: fdatasync after each chunk's lines */
	int atomic;            /**< non-zero: write to @p temp_path; see cb_file_publish */
	const char *temp_path; /**< a template; NULL: "<path>.tmp" */
	/** Since version 2: a cb_file_if_exists, for a file found at the first open. */
	int if_exists;
} cb_jsonl_writer_options;

#define CB_JSONL_WRITER_OPTIONS_INIT                                                               \
	{                                                                                          \
		CB_JSONL_WRITER_OPTIONS_VERSION, NULL, NULL, NULL, 0, 0, 0, NULL, CB_FILE_FAIL     \
	}

/**
 * Fill @p out with a JSON lines writer: each item becomes one line of
 * compact JSON followed by "\n". Behaviour on chunks, restart and crash: see
 * "file writers" above. A value that jansson cannot encode (e.g. a number
 * or string without JSON_ENCODE_ANY) fails the chunk naming the item's
 * position. @return 0, CB_EINVAL, CB_ENOMEM.
 */
int cb_jsonl_writer_new(cb_writer *out, const cb_jsonl_writer_options *opts, cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
