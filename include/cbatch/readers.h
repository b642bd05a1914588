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

#define CB_PG_KEYSET_OPTIONS_VERSION 1

/**
 * Options of the PostgreSQL keyset paging reader. All strings are copied by
 * cb_pg_keyset_reader_new.
 *
 * The reader runs, inside each chunk transaction,
 *
 *     SELECT <columns>[, <missing keys>] FROM <schema>.<table>
 *      WHERE (<where>) [AND (k1, k2, ...) > ($2, $3, ...)]
 *      ORDER BY k1, k2, ... LIMIT $1
 *
 * and never OFFSET: progress lives in the data (a processed row no longer
 * matches @p where) and in the last key, which the reader stores in the step
 * execution context as {"last_key": ["..", ..]} and resumes from on restart.
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
	unsigned int version;        /**< CB_PG_KEYSET_OPTIONS_VERSION */
	const char *schema;          /**< NULL: unqualified (search_path) */
	const char *table;           /**< required */
	const char *const *columns;  /**< selected columns (identifiers), NULL: all ("*") */
	size_t ncolumns;
	const char *const *key_columns; /**< sort key, unique together, PK last; required */
	size_t nkeys;
	const char *where;           /**< the unprocessed filter, e.g. "NOT processed"; NULL: none */
	size_t page_size;            /**< rows per page; 0: the step's chunk size */
} cb_pg_keyset_options;

#define CB_PG_KEYSET_OPTIONS_INIT { CB_PG_KEYSET_OPTIONS_VERSION, NULL, NULL, NULL, 0, NULL, 0, NULL, 0 }

/**
 * Fill @p out with a keyset paging reader. The reader owns a copy of the
 * options; the step calls out->free. @return 0, CB_EINVAL (no table or key,
 * empty identifier), CB_ENOMEM.
 */
int cb_pg_keyset_reader_new(cb_reader *out, const cb_pg_keyset_options *opts, cb_error *err);

#ifdef __cplusplus
}
#endif
#endif
