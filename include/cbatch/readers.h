/**
 * @file readers.h
 * Built-in readers.
 */
#ifndef CBATCH_READERS_H
#define CBATCH_READERS_H

#include <stddef.h>
#include "item.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

#define CB_PG_KEYSET_OPTIONS_VERSION 2

/**
 * Options of the PostgreSQL keyset paging reader. All strings are copied by
 * cb_pg_keyset_reader_new. Lists take their count, CB_COUNT(list), or a
 * count of 0 and a NULL-terminated list.
 *
 * The reader runs, inside each chunk transaction,
 *
 *     SELECT <columns>[, <missing keys>] FROM <schema>.<table>
 *      WHERE (<where>) AND (k1, k2, ...) <= (<high-water mark>)
 *        [AND (k1, k2, ...) > ($1, $2, ...)]
 *      ORDER BY k1, k2, ... LIMIT <page size>
 *
 * and never OFFSET: progress lives in the data (a processed row no longer
 * matches @p where) and in the last key, which the reader stores in the step
 * execution context as {"last_key": ["..", ..]} and resumes from on restart.
 *
 * A run has a bounded input. At the first `open` of a step execution (no
 * saved bound) the reader takes the high-water mark: the largest key, in key
 * order, of the rows that match then (the same FROM and WHERE as the pages,
 * the partition's share included, `ORDER BY k1 DESC, ... LIMIT 1`, on the
 * step's connection before the first chunk's transaction). Every page query
 * is bounded by it, so rows that arrive with larger keys during the run are
 * the next run's. The mark is stored beside the last key ({"hwm": [..]})
 * and commits with the first chunk; an `open` from a saved context (a
 * restart of the execution, a new execution of the same instance, a
 * reconnect) keeps it. No matching row at the first open: the mark is
 * nothing ({"hwm": null}) and the run reads no row, even if rows arrive
 * while it runs. A run that committed no chunk saved no mark: its restart
 * takes one anew (it had read nothing), as does the restart of a run whose
 * context an earlier cbatch saved (a last key without a mark). The bound follows the key order, not
 * the arrival order: it holds back exactly the late rows when keys grow with
 * arrival (a sequence, or a time then an id); a row that arrives with a key
 * below the mark (a composite key led by a customer, say) is still read if
 * the run has not passed it. @p unbounded (version 2) opts out: the reader
 * drains the table as it grows, until a page comes back short.
 * The key columns must together be unique and NOT NULL (put the primary key
 * last). Identifiers (schema, table, columns, keys) are quoted with
 * PQescapeIdentifier; @p where is SQL text written by the job author (code,
 * not input) and must not contain user values: values travel as parameters.
 *
 * The page query is prepared in `open` (two statements: the first page, and
 * the pages after a key) and run with cb_tx_query when the current page is
 * used up and was full; a short page is the last one, so an input of exactly
 * k full pages costs one more query that returns no rows.
 *
 * Items are `cb_row *` views into a page's result (the cb_row structs are
 * the reader's, allocated once per page slot: nothing is allocated per row).
 * An item stays valid until its chunk ends: a page is released only at the
 * first page fetch after a chunk boundary (`update` or `rollback`), and only
 * when no item of the running chunk points into it. So @p page_size need not
 * equal the chunk size: a smaller page costs more queries per chunk and
 * keeps more pages alive, a larger one serves several chunks per query (with
 * the default, one page is alive between chunks). All pages are released by
 * `close`. An `update` that is never called (driving the reader by hand)
 * keeps every page alive until `close`.
 *
 * Position and rollback: `update` stores the key of the last item read; the
 * next `read` takes it as committed. `rollback` rewinds to the committed
 * position and drops the buffered page, so the next `read` queries again:
 * an `update` not followed by a `read` belongs to the chunk rolled back (its
 * COMMIT failed), and is forgotten.
 */
typedef struct cb_pg_keyset_options {
	unsigned int version;           /**< CB_PG_KEYSET_OPTIONS_VERSION */
	const char *schema;             /**< NULL: unqualified (search_path) */
	const char *table;              /**< required */
	const char *const *columns;     /**< selected columns (identifiers), NULL: all ("*") */
	size_t ncolumns;                /**< 0: @p columns is NULL-terminated (or NULL) */
	const char *const *key_columns; /**< sort key, unique together, PK last; required */
	size_t nkeys;                   /**< 0: @p key_columns is NULL-terminated */
	const char *where; /**< the unprocessed filter, e.g. "NOT processed"; NULL: none */
	size_t page_size;  /**< rows per page; 0: the step's chunk size */
	/**
	 * Read from a query instead of a table: `FROM (<query>) AS <table>`,
	 * @p table naming it (schema must be NULL). The query is SQL text of the
	 * job author's; its values travel as @p query_params, referenced in it as
	 * $1..$n (text, cast in the query, e.g. `$1::date`); the reader numbers its
	 * own parameters after them. Copied.
	 */
	const char *query;
	const char *const *query_params; /**< values of $1..$n of @p query (copied) */
	size_t nquery_params;            /**< 0: @p query_params is NULL-terminated (or NULL) */
	/**
	 * Since version 2. Non-zero: no high-water mark; the run also reads rows
	 * that arrive while it runs (a drain of a live table), until a page
	 * comes back short. 0 (and every version 1 caller): the input is what
	 * matched at the step execution's first open.
	 */
	int unbounded;
} cb_pg_keyset_options;

/** Keyset reader options with every member zero but the version. */
#define CB_PG_KEYSET_OPTIONS_INIT                                                                  \
	{                                                                                          \
		.version = CB_PG_KEYSET_OPTIONS_VERSION                                            \
	}

/**
 * Fill @p out with a keyset paging reader. The reader owns a copy of the
 * options; the step calls out->free. Options of version 1 and 2 are taken
 * (version 1: bounded). @return 0, CB_EINVAL (no table or key, empty
 * identifier, unknown version), CB_ENOMEM.
 */
int cb_pg_keyset_reader_new(cb_reader *out, const cb_pg_keyset_options *opts, cb_error *err);

/* ---- work queue (FOR UPDATE SKIP LOCKED) ----------------------------------- */

#define CB_PG_QUEUE_OPTIONS_VERSION 1

/**
 * Options of the PostgreSQL work-queue reader. All strings are copied by
 * cb_pg_queue_reader_new. Lists take their count, CB_COUNT(list), or a
 * count of 0 and a NULL-terminated list.
 *
 * The reader drains a queue-like table, alone or beside other workers
 * (threads, processes, hosts) draining the same table. At the first `read`
 * of each chunk, inside the chunk transaction, it claims up to @p claim_size
 * rows with
 *
 *     SELECT <columns>[, <missing keys>] FROM <schema>.<table>
 *      WHERE (<where>) ORDER BY k1, k2, ... LIMIT <claim size>
 *      FOR UPDATE SKIP LOCKED
 *
 * and hands them out one by one. The claimed rows stay locked by the chunk
 * transaction; rows another transaction holds are skipped, so concurrent
 * workers claim disjoint rows. A writer of the same chunk changes the rows'
 * state so that they no longer match @p where (typically
 * cb_pg_status_writer_new over the same keys, e.g. `SET status = 'DONE'`
 * with `expect_value` 'READY'): claim and transition commit together. A
 * rolled-back chunk (or a killed worker) simply releases its claim; the
 * next claim, here or in another worker, takes the rows again.
 *
 * A claim serves one chunk (a claim size above the chunk size is taken as
 * the chunk size: rows claimed beyond it would stay locked unprocessed).
 * Once its rows are handed out, `read` returns CB_CHUNK_END, or CB_DONE when
 * the claim was the end of input. End of input is judged in the chunk
 * transaction right after a claim that came back short: it is the end only
 * when every row still matching @p where is this transaction's own or held
 * by a live sibling partition of the same execution. Rows nobody holds are
 * claimed by the next chunk; rows held by any other session (another job, a
 * psql session, a prepared transaction) are waited for, up to the lease of
 * the lock the step runs under, and then the chunk fails naming the holder:
 * the step is restartable, never COMPLETED over rows it did not process.
 *
 * There is no restart position: progress lives in the data. `update` stores
 * nothing and `open` ignores the saved context. The key columns must
 * together be unique and NOT NULL; they order the claim (oldest first, say)
 * and name items in `describe` ("k1=v1, k2=v2"). Identifiers are quoted with
 * PQescapeIdentifier; @p where is SQL text written by the job author (code,
 * not input): values travel as @p query_params.
 *
 * Items are `cb_row *` views into the claim's result, valid until their chunk
 * ends: the result is released at the first `read` after the chunk's
 * `update` or `rollback`, and by `close`.
 */
typedef struct cb_pg_queue_options {
	unsigned int version;           /**< CB_PG_QUEUE_OPTIONS_VERSION */
	const char *schema;             /**< NULL: unqualified (search_path) */
	const char *table;              /**< required */
	const char *const *columns;     /**< selected columns (identifiers), NULL: all ("*") */
	size_t ncolumns;                /**< 0: @p columns is NULL-terminated (or NULL) */
	const char *const *key_columns; /**< claim order, unique together; required */
	size_t nkeys;                   /**< 0: @p key_columns is NULL-terminated */
	const char *where; /**< the unprocessed filter, e.g. "status = 'READY'"; NULL: none */
	size_t claim_size; /**< rows per claim; 0: the step's chunk size */
	/**
	 * Values of $1..$n in @p where (text, cast in the SQL, e.g.
	 * `queue = $1 AND due <= $2::timestamptz`). Copied.
	 */
	const char *const *query_params;
	size_t nquery_params; /**< 0: @p query_params is NULL-terminated (or NULL) */
} cb_pg_queue_options;

/** Queue reader options with every member zero but the version. */
#define CB_PG_QUEUE_OPTIONS_INIT                                                                   \
	{                                                                                          \
		.version = CB_PG_QUEUE_OPTIONS_VERSION                                             \
	}

/**
 * Fill @p out with a work-queue reader. The reader owns a copy of the
 * options; the step calls out->free (nothing is allocated on failure).
 * @return 0, CB_EINVAL (no table or key, empty or repeated identifier,
 *         parameters without a where clause, unknown version), CB_ENOMEM.
 */
int cb_pg_queue_reader_new(cb_reader *out, const cb_pg_queue_options *opts, cb_error *err);

/* ---- CSV ----------------------------------------------------------------- */

#define CB_CSV_OPTIONS_VERSION 1

/** cb_csv_options.ncolumns: accept any number of fields, even with a header. */
#define CB_CSV_ANY_COLUMNS ((size_t)-1)

/**
 * Options of the CSV reader. Strings are copied by cb_csv_reader_new.
 *
 * The input is RFC 4180 CSV: fields separated by @p delimiter, records ended
 * by CRLF, LF or a lone CR (the last record may lack one). A field that
 * starts with '"' is quoted: it ends at the next '"' that is not doubled,
 * and may hold delimiters, '""' (one quote) and line breaks, which are kept
 * as they are in the file. Unquoted fields are taken verbatim (spaces
 * included). A UTF-8 byte order mark at the start is skipped. Bytes are not
 * checked against any encoding.
 *
 * Malformed records: a '"' inside an unquoted field, anything but a
 * delimiter or a line break after a closing quote, a quoted field still open
 * at the end of the file, a field longer than @p max_field, a record larger
 * than @p max_record, and a record whose number of fields is not the
 * expected one. Each is a read error (see cb_csv_reader_new).
 */
typedef struct cb_csv_options {
	unsigned int version; /**< CB_CSV_OPTIONS_VERSION */
	const char *path;     /**< the file; required; named in every message */
	char delimiter;       /**< field separator; 0: ','. Not '"', CR or LF */
	int header;           /**< non-zero: the first record names the columns */
	/**
	 * Fields every record must have. 0: with a header, the header's count
	 * (a header of another count is an open error when this is set),
	 * without one, any; CB_CSV_ANY_COLUMNS: any.
	 */
	size_t ncolumns;
	/** Names the header must contain (needs @p header); NULL: none. */
	const char *const *required_columns;
	size_t nrequired;
	/**
	 * Non-zero: an empty line is a record of one empty field. By default
	 * empty lines are skipped (they still count as lines).
	 */
	int keep_empty_lines;
	size_t max_field;   /**< longest field in bytes (after unquoting); 0: 16 MiB */
	size_t max_record;  /**< largest record in memory (>= 1024); 0: 4 x max_field */
	size_t buffer_size; /**< read buffer in bytes; 0: 64 KiB. Memory is flat in file size */
} cb_csv_options;

/** CSV reader options: the version, ',' as delimiter, every other member zero. */
#define CB_CSV_OPTIONS_INIT                                                                        \
	{                                                                                          \
		.version = CB_CSV_OPTIONS_VERSION, .delimiter = ','                                \
	}

/** The column names of a CSV header row. Owned by the reader. */
typedef struct cb_csv_header cb_csv_header;

/** One field of a CSV record: a view into the reader's chunk storage. */
typedef struct cb_csv_field {
	const char *data; /**< the unquoted bytes, followed by a NUL (data[len] == '\0') */
	size_t len;       /**< length in bytes; the field may itself contain NULs */
	int quoted;       /**< non-zero: the field was quoted ('""' is quoted and empty) */
} cb_csv_field;

/**
 * A record of a CSV file: the items of the CSV reader (`cb_csv_record *`).
 *
 * Lifecycle: a record and its fields live in storage the reader owns and
 * recycles; they stay valid until the chunk that read them ends, that is
 * until the first read() after the chunk's update() or rollback() (and at
 * the latest until close). Copy what must live longer. Read-only.
 */
typedef struct cb_csv_record {
	size_t nfields;
	const cb_csv_field *fields;
	long long line;              /**< 1-based line where the record starts */
	long long offset;            /**< byte offset of the record's first byte */
	const char *file;            /**< the reader's path (borrowed) */
	const cb_csv_header *header; /**< the reader's header, or NULL (borrowed) */
} cb_csv_record;

/**
 * Fill @p out with a CSV reader of @p opts (copied). The step calls
 * out->free.
 *
 * `open` opens the file, reads the header (if any; a malformed, empty or
 * incomplete header fails `open` with a message naming file:line:column or
 * the missing column), and seeks to the saved position. Items are
 * `cb_csv_record *` (see its lifecycle). Records are parsed straight from a
 * fixed-size read buffer into a per-record scratch buffer, then copied into
 * reader-owned blocks that are reused chunk after chunk: memory grows with
 * the chunk size and the record size, never with the file.
 *
 * Read errors: a malformed record makes read() return CB_EINVAL with a
 * message "<file>:<line>:<column>: <what>", e.g.
 * `accounts.csv:17:5: unexpected '"' in unquoted field` (lines and columns
 * 1-based, columns in bytes). The reader has then consumed the bad record,
 * so the next read() returns the record after it: a skip policy can go on.
 * After a syntax error the bad record ends at the next line break; after a
 * quoted field left open at the end of the file, reading resumes on the line
 * after the opening quote. I/O errors are CB_ERROR and out of memory
 * CB_ENOMEM; after those the next read() tries the same record again.
 *
 * Position and restart: `update` stores {"offset": N, "line": L}, the byte
 * offset and line number just after the last record read (or refused as
 * malformed). The next read() takes it as committed. `rollback` rewinds to
 * the committed position: the next read() returns the first record of the
 * rolled-back chunk again (an `update` not followed by a read belongs to the
 * rolled-back chunk). `open` with a saved position seeks there after
 * checking that the file is at least that long and that the position
 * follows a line break; otherwise `open` fails with CB_EINVAL naming the
 * file ("the file changed since it was saved"). The file must be seekable.
 *
 * `describe` writes "<file>:<line>" of a record.
 *
 * @return 0, CB_EINVAL (no path, bad delimiter, required columns without a
 *         header, max_record below 1024, unknown version), CB_ENOMEM.
 */
int cb_csv_reader_new(cb_reader *out, const cb_csv_options *opts, cb_error *err);

/**
 * The header of an open CSV reader (borrowed; valid until close), or NULL
 * when @p reader is not a CSV reader, is not open, or has no header.
 */
const cb_csv_header *cb_csv_reader_header(const cb_reader *reader);

/** Number of columns in @p header (0 for NULL). */
size_t cb_csv_header_count(const cb_csv_header *header);

/** Name of column @p i (borrowed, NUL-terminated), or NULL when out of range. */
const char *cb_csv_header_name(const cb_csv_header *header, size_t i);

/**
 * Index of the first column named @p name (exact, case-sensitive), or -1
 * when there is none (or @p header is NULL).
 */
long cb_csv_header_index(const cb_csv_header *header, const char *name);

/** Number of fields of @p rec. */
size_t cb_csv_record_nfields(const cb_csv_record *rec);

/** 1-based line of the start of @p rec. */
long long cb_csv_record_line(const cb_csv_record *rec);

/**
 * Field @p i of @p rec (borrowed, NUL-terminated; see cb_csv_field), and its
 * length in @p len (may be NULL). @return NULL when @p i is out of range.
 */
const char *cb_csv_record_field(const cb_csv_record *rec, size_t i, size_t *len);

/** Index of the field under header column @p name, or -1 (no header, no such column). */
long cb_csv_record_index(const cb_csv_record *rec, const char *name);

/**
 * The field under header column @p name, as cb_csv_record_field. NULL when
 * there is no header, no such column, or the record is too short.
 */
const char *cb_csv_record_get(const cb_csv_record *rec, const char *name, size_t *len);

/**
 * Parse field @p i of @p rec as a decimal integer (strtoll, base 10, no
 * surrounding blanks). @return 0, or CB_EINVAL with a message
 * "<file>:<line>: field <i+1> (\"<name>\"): \"<text>\" is not an integer"
 * (also for a missing field or an out-of-range value).
 */
int cb_csv_record_long(const cb_csv_record *rec, size_t i, long long *out, cb_error *err);

/** As cb_csv_record_long, for a floating-point number (strtod; finite only). */
int cb_csv_record_double(const cb_csv_record *rec, size_t i, double *out, cb_error *err);

/* ---- JSON lines ---------------------------------------------------------- */

#define CB_JSONL_OPTIONS_VERSION 1

/**
 * Options of the JSON lines reader. Strings are copied.
 *
 * One JSON value per line (LF, or CRLF); lines that are empty or hold only
 * blanks are skipped (they still count as lines). A UTF-8 byte order mark at
 * the start is skipped.
 */
typedef struct cb_jsonl_options {
	unsigned int version; /**< CB_JSONL_OPTIONS_VERSION */
	const char *path;     /**< the file; required */
	int any_value;        /**< non-zero: any JSON value; 0: each line must be an object */
	size_t decode_flags;  /**< extra jansson decoding flags, e.g. JSON_REJECT_DUPLICATES */
	size_t max_line;      /**< longest line in bytes; 0: 16 MiB */
	size_t buffer_size;   /**< read buffer in bytes; 0: 64 KiB */
} cb_jsonl_options;

/** JSON lines reader options with every member zero but the version. */
#define CB_JSONL_OPTIONS_INIT                                                                      \
	{                                                                                          \
		.version = CB_JSONL_OPTIONS_VERSION                                                \
	}

/**
 * Fill @p out with a JSON lines reader of @p opts (copied). The step calls
 * out->free.
 *
 * Items are `json_t *`, borrowed: the reader holds the only reference and
 * drops it when the chunk ends (at the first read() after the chunk's
 * update() or rollback(), or at close). A processor that keeps a value
 * longer takes its own reference (json_incref).
 *
 * A line that is not valid JSON (or not an object, unless @p any_value) is a
 * read error, CB_EINVAL, with the message
 * "<file>:<line>:<column>: <jansson's text>" (column from json_error_t, in
 * characters); a line longer than @p max_line is one too. The line is then
 * consumed: the next read() returns the next line's value.
 *
 * Position, restart, rollback and `describe` ("<file>:<line>") are as for the
 * CSV reader: {"offset": N, "line": L}.
 *
 * @return 0, CB_EINVAL, CB_ENOMEM.
 */
int cb_jsonl_reader_new(cb_reader *out, const cb_jsonl_options *opts, cb_error *err);

/**
 * The line of item @p value, read by the JSON lines reader @p reader in the
 * running chunk, or 0 when it is not one of them.
 */
long long cb_jsonl_reader_line(const cb_reader *reader, const json_t *value);

#define CB_PG_CURSOR_OPTIONS_VERSION 1

/**
 * Options of the PostgreSQL cursor reader: for read-only sources where
 * re-querying pages is wasteful (a large join or aggregate read once).
 *
 * The reader opens a second connection (application_name "cbatch-cursor"),
 * starts a REPEATABLE READ, READ ONLY transaction — one stable snapshot for
 * the whole step — and streams @p query through a server-side cursor,
 * FETCHing @p fetch_size rows at a time. Items are `cb_row *` views, valid
 * until the chunk ends. A rolled-back chunk is read again from memory.
 *
 * Restart stores how many rows committed chunks consumed and skips that many
 * (MOVE FORWARD) in the new snapshot: that is exact only when the query
 * returns the same rows in the same order again — ORDER BY a unique key over
 * data that no longer changes (a closed day, an archive). For a source that
 * changes, or one whose rows are marked as processed, use the keyset reader.
 * The snapshot is the run's bound while it is not interrupted (rows committed
 * after `open` are not seen); a restart opens a new snapshot, so rows that
 * arrived meanwhile are the restart's input too, unless the query bounds
 * itself (a closed day, a key below a value passed as a parameter).
 * @p query is SQL text of the job author's; values travel as @p query_params
 * ($1..$n, text).
 */
typedef struct cb_pg_cursor_options {
	unsigned int version;            /**< CB_PG_CURSOR_OPTIONS_VERSION */
	const char *query;               /**< required; copied */
	const char *const *query_params; /**< values of $1..$n (copied) */
	size_t nquery_params;
	size_t fetch_size; /**< rows per FETCH; 0: the step's chunk size */
} cb_pg_cursor_options;

/** Cursor reader options with every member zero but the version. */
#define CB_PG_CURSOR_OPTIONS_INIT                                                                  \
	{                                                                                          \
		.version = CB_PG_CURSOR_OPTIONS_VERSION                                            \
	}

/** Fill @p out with a cursor reader (options copied). @return 0, CB_EINVAL, CB_ENOMEM. */
int cb_pg_cursor_reader_new(cb_reader *out, const cb_pg_cursor_options *opts, cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
