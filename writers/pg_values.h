/*
 * Internal side of cb_values (include/cbatch/writers.h) and what the
 * PostgreSQL writers share: per-column text buffers that accumulate one
 * PostgreSQL array literal per column for a whole chunk, the column type
 * lookup, and SQL text building.
 *
 * A cb_values lives in its writer for the writer's lifetime. Per chunk:
 * cb__values_reset, then cb__values_bind for each item, then
 * cb__values_finish, whose strings (borrowed, valid until the next reset)
 * are the statement's parameters. The buffers only grow: a steady job
 * allocates nothing per chunk or per field.
 */
#ifndef CB_WRITERS_PG_VALUES_H
#define CB_WRITERS_PG_VALUES_H

#include <stdio.h>

#include "cbatch/writers.h"
#include "cbatch/sys/tx.h"
#include "pgkit.h"

/* One column's array literal being built: "{"a","b",NULL" then "}". */
struct cb_values_col {
	char *buf;
	size_t len;
	size_t cap;
	char delim;        /* element delimiter of the column's type (',' but ';' for box) */
	unsigned char set; /* set for the current item */
};

struct cb_values {
	size_t ncols;
	const char *const *names; /* borrowed from the writer */
	struct cb_values_col *cols;
	size_t nitems; /* items bound since the last reset */
	int copy_mode; /* fields in COPY text format, one item at a time (pg_copy.c) */
	int error;     /* first failure of a cb_values_set* call, 0 if none */
	char error_msg[160];
	/* cb_bind_row_by_name's column map, cached per page result. */
	const PGresult *map_res;
	int map_nfields;
	int *map; /* row column per writer column, -1: job_execution_id */
};

/*
 * Initialise @p v for @p ncols columns named @p names (borrowed; must outlive
 * @p v). @p delims: each column's element delimiter, NULL for all ','.
 * @return 0 or CB_ENOMEM.
 */
int cb__values_init(cb_values *v, size_t ncols, const char *const *names, const char *delims,
		    cb_error *err);
/* Release the buffers. NULL-safe; @p v itself is not freed. */
void cb__values_free(cb_values *v);
/* Start a new chunk: empty every array (buffers are kept). */
void cb__values_reset(cb_values *v);
/*
 * Bind item number @p index of the chunk: call @p bind (NULL:
 * cb_bind_row_by_name) and check that it set every column exactly once.
 * @p what names the writer in messages. @return 0 or a negative code.
 */
int cb__values_bind(cb_values *v, cb_bind_fn bind, void *ctx, const cb_step_context *sc,
		    const void *item, size_t index, const char *what, cb_error *err);
/* A whole chunk: reset, then cb__values_bind each of @p items. */
int cb__values_bind_chunk(cb_values *v, cb_bind_fn bind, void *ctx, const cb_step_context *sc,
			  void *const *items, size_t n, const char *what, cb_error *err);

/*
 * Close every array and store the literals in @p params[0..ncols-1]
 * (borrowed, valid until the next reset). @return 0 or CB_ENOMEM.
 */
int cb__values_finish(cb_values *v, const char **params, cb_error *err);

/*
 * COPY mode: after cb__values_bind of an item, append its fields as one
 * line of COPY text format (tab-separated, escaped, \N for NULL) to
 * @p line (a column struct used as a byte buffer) and clear the fields.
 * @return 0 or CB_ENOMEM.
 */
int cb__values_copy_line(cb_values *v, struct cb_values_col *line);

/*
 * The parameter ($N, 1-based) that a failed statement's value came from,
 * when the server says so (a value its type refuses: "parameter $2" in the
 * error's context); 0 when not.
 */
int cb__error_param(const PGresult *res);

/*
 * Describe a writer statement's failure in @p err (cb_pg_error: code and
 * SQLSTATE kept): "@p what, key (@p keys)[, column "c"]: <server message>".
 * The column is the server's (not null, check), else the one whose
 * parameter the server names (@p param_column maps $N to a column name or
 * NULL), else @p fallback_column (NULL: none). @p extra, when not NULL, is
 * said after the key. @return the code.
 */
int cb__writer_error(cb_error *err, PGconn *conn, const PGresult *res, const char *what,
		     const char *keys, const char *(*param_column)(void *ctx, int n), void *ctx,
		     const char *fallback_column, const char *extra);

/* A growing SQL text; the first failure sticks and is reported by _done. */
typedef struct cb__sql {
	FILE *f;
	char *text;
	size_t len;
} cb__sql;

/* Open a builder. @return 0 or CB_ENOMEM. */
int cb__sql_open(cb__sql *s, cb_error *err);
/* Append printf-formatted text (identifiers must be quoted already). */
void cb__sql_add(cb__sql *s, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;
/* Finish: @p out receives the new text (free). @return 0 or CB_ENOMEM. */
int cb__sql_done(cb__sql *s, char **out, cb_error *err);

/* Duplicate a string array (each entry and the array). NULL when n == 0. */
int cb__strv_dup(char ***out, const char *const *v, size_t n);
/* Free an array made by cb__strv_dup. NULL-safe. */
void cb__strv_free(char **v, size_t n);

#endif
