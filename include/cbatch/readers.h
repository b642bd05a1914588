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
 * Items are `cb_row *` views into the page's result, valid until the chunk ends.
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
