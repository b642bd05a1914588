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

/**
 * Where a writer puts one item's column values: the writer hands @p out to a
 * bind callback, which calls cb_values_set* once per column (in the writer's
 * column order). Values are copied at once; no allocation per field once the
 * writer's buffers have grown.
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
typedef int (*cb_bind_fn)(void *ctx, const cb_step_context *sc, const void *item,
			  cb_values *out, cb_error *err);

/**
 * A bind that reads `cb_row *` items (from the PostgreSQL readers) and takes
 * each writer column from the row column of the same name; a column the row
 * lacks is an error naming it, except `job_execution_id`, which is taken from
 * the step context. Pass NULL as bind to get it.
 */
int cb_bind_row_by_name(void *ctx, const cb_step_context *sc, const void *item, cb_values *out,
			cb_error *err);

#define CB_PG_UPSERT_OPTIONS_VERSION 1

/**
 * Options of the upsert writer:
 *
 *     INSERT INTO t (c1, ..., cn) SELECT * FROM unnest($1::T1[], ..., $n::Tn[])
 *     ON CONFLICT (k1, ...) DO UPDATE SET u1 = EXCLUDED.u1, ...   (or DO NOTHING)
 *
 * The chunk's items must have distinct keys (one row per key per chunk).
 * Target columns of array types are refused by `open` (unnest would flatten
 * them).
 */
typedef struct cb_pg_upsert_options {
	unsigned int version;          /**< CB_PG_UPSERT_OPTIONS_VERSION */
	const char *schema;            /**< NULL: unqualified */
	const char *table;             /**< required */
	const char *const *columns;    /**< target columns, in bind order; required */
	size_t ncolumns;
	const char *const *key_columns; /**< conflict target (a unique constraint's columns); required */
	size_t nkeys;
	const char *const *update_columns; /**< NULL: all non-key columns; with nupdate 0 and
					      non-NULL: DO NOTHING */
	size_t nupdate;
	cb_bind_fn bind;               /**< NULL: cb_bind_row_by_name */
	void *bind_ctx;
	/**
	 * Non-zero: rows whose key existed already (updated, or left alone by DO
	 * NOTHING) are added to the step's duplicate_target_write_count, in the
	 * chunk's transaction.
	 */
	int count_duplicates;
} cb_pg_upsert_options;

#define CB_PG_UPSERT_OPTIONS_INIT \
	{ CB_PG_UPSERT_OPTIONS_VERSION, NULL, NULL, NULL, 0, NULL, 0, NULL, 0, NULL, NULL, 0 }

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

#define CB_PG_STATUS_OPTIONS_VERSION 1

/**
 * Options of the status writer, which marks the chunk's source rows:
 *
 *     UPDATE t SET <set_column> = $1 WHERE k = ANY($2::K[])          (one key)
 *     UPDATE t SET ... FROM unnest($2::K1[], $3::K2[]) AS v(k1, k2)
 *      WHERE (t.k1, t.k2) = (v.k1, v.k2)                             (several)
 *
 * Key values come from the bind callback (in key order), or by default from
 * the `cb_row *` item's columns of the same names.
 */
typedef struct cb_pg_status_options {
	unsigned int version;          /**< CB_PG_STATUS_OPTIONS_VERSION */
	const char *schema;
	const char *table;             /**< required */
	const char *const *key_columns; /**< required */
	size_t nkeys;
	const char *set_column;        /**< required, e.g. "processed" */
	const char *set_value;         /**< text of the new value, e.g. "true"; sent as a
					    parameter; NULL: SQL NULL */
	cb_bind_fn bind;               /**< NULL: cb_bind_row_by_name over the key columns */
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
} cb_pg_status_options;

#define CB_PG_STATUS_OPTIONS_INIT \
	{ CB_PG_STATUS_OPTIONS_VERSION, NULL, NULL, NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, 0 }

/** Fill @p out with a status writer (options copied). @return 0, CB_EINVAL, CB_ENOMEM. */
int cb_pg_status_writer_new(cb_writer *out, const cb_pg_status_options *opts, cb_error *err);

#ifdef __cplusplus
}
#endif
#endif
