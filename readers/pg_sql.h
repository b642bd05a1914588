/*
 * What the PostgreSQL readers (pg_keyset.c, pg_queue.c) share: owned string
 * lists, building a statement's text, quoting, the key columns of a prepared
 * statement's result, and describing an item by its keys. Internal to readers/.
 */
#ifndef CB_READERS_PG_SQL_H
#define CB_READERS_PG_SQL_H

#include <stdio.h>

#include "cbatch/item.h"
#include "cbatch/pg.h"
#include "pgkit.h"

/* strdup that passes NULL through. */
char *cb__rd_strdup(const char *s);
/* Free @p n strings and the array. NULL-safe. */
void cb__rd_strv_free(char **v, size_t n);
/* A new array of copies of @p n strings (at least one slot). @return NULL when out of memory. */
char **cb__rd_strv_dup(const char *const *v, size_t n);

/* Append to a statement's text (open_memstream records the first failure). */
void cb__rd_add(FILE *f, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

/* cb_pg_quote_ident, the message prefixed with the reader's @p what. */
int cb__rd_quote(char **out, PGconn *conn, const char *what, const char *ident, cb_error *err);

/* An identifier option must not be empty: CB_EINVAL naming @p label @p i + 1. */
int cb__rd_check_ident(const char *s, const char *what, const char *label, size_t i, cb_error *err);

/*
 * Fill @p keycol with the result column of each of the @p n keys of the
 * prepared statement @p stmt (@p qkeys: their quoted forms, which PQfnumber
 * matches exactly). @p query names the statement in messages ("page").
 * @return 0, CB_EDB, or CB_EINVAL when a key is not in the result.
 */
int cb__rd_find_keycols(int *keycol, PGconn *conn, const char *stmt, char *const *keys,
			char *const *qkeys, size_t n, const char *what, const char *query,
			cb_error *err);

/* A reader's table and lists, as its options give them (counts already counted). */
typedef struct cb__rd_table {
	const char *schema, *table;
	const char *const *columns;
	size_t ncolumns;
	const char *const *keys;
	size_t nkeys;
	const char *const *params; /* the where clause's or query's $1..$n */
	size_t nparams;
} cb__rd_table;

/*
 * The checks every PostgreSQL reader makes of @p t: a table, no empty schema,
 * 1..100 key columns, none empty or given twice, no empty column, no NULL
 * parameter. @return 0 or CB_EINVAL with a message prefixed by @p what.
 */
int cb__rd_check_table(const char *what, const cb__rd_table *t, cb_error *err);

/* "k1=v1, k2=v2" of row @p row of @p res into @p buf (always terminated). */
void cb__rd_describe_keys(char *buf, size_t size, char *const *keys, size_t n, const int *keycol,
			  const PGresult *res, int row);

/*
 * A reader's check (item.h): prepare its statement @p sql unnamed (nothing
 * runs) and tell the step context the SQL type of each column of its rows
 * (cb_step_context_set_source_type), for the writers' checks. A statement
 * that does not fit the tables (SQLSTATE class 42: a column, table or
 * function that does not exist) is CB_EINVAL, "@p what: @p query: ...".
 * @return 0, CB_EINVAL, CB_EDB, CB_ENOMEM.
 */
int cb__rd_check_query(PGconn *conn, const cb_step_context *sc, const char *sql, int nparams,
		       const char *what, const char *query, cb_error *err);

#endif
