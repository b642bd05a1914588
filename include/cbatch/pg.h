/**
 * @file pg.h
 * The chunk transaction (cb_tx) and the light row view (cb_row) that
 * PostgreSQL readers and writers share.
 *
 * A cb_tx is owned by the step engine: it is open from the first read of a
 * chunk to its commit or rollback, and is handed to readers, writers and
 * tasklets, which must never commit or roll back themselves.
 *
 * This header holds what job authors use. The pipeline calls that reader and
 * writer authors use (cb_tx_send, cb_tx_flush, cb_tx_query, cb_tx_copy,
 * duplicate counting) are in cbatch/sys/tx.h, which this header does not
 * include: a plug-in includes it explicitly. Prepare statements with
 * cb_pg_prepare in `open`, when the connection is not in pipeline mode.
 *
 * For tasklet steps the connection is not in pipeline mode: the tasklet may use
 * plain libpq calls on cb_tx_conn(tx) inside the open transaction.
 */
#ifndef CBATCH_PG_H
#define CBATCH_PG_H

#include <libpq-fe.h>
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

typedef struct cb_tx cb_tx;

/**
 * The transaction's connection, for plain libpq calls inside the open
 * transaction (tasklets) or for preparing statements in `open`.
 *
 * Ownership: borrowed from @p tx; never PQfinish it, never commit or roll back
 * on it.
 *
 * @param tx the chunk transaction
 * @return the connection
 */
PGconn *cb_tx_conn(cb_tx *tx);

/**
 * Prepare @p sql on @p conn under a name unique to that connection (no
 * other connection, of this process or another, ever uses it), written to
 * @p name_out (at least 64 bytes). @p prefix (a few lower-case letters, at
 * most 20 are used) makes the name readable in pg_prepared_statements. The
 * connection must not be in pipeline mode. @return 0 or CB_EDB.
 */
int cb_pg_prepare(PGconn *conn, char *name_out, const char *prefix, const char *sql, int nparams,
		  cb_error *err);

/**
 * Record a failed libpq call in @p err: the SQLSTATE, the server's primary
 * message (or the connection's), and @p what as context. Maps 40001 and
 * 40P01 to CB_ERETRY, a broken connection to CB_EDB with sqlstate "08006",
 * everything else to CB_EDB. @p res may be NULL. @return the code.
 */
int cb_pg_error(cb_error *err, PGconn *conn, const PGresult *res, const char *what);

/**
 * Quote an identifier for SQL text (PQescapeIdentifier). A dotted name is
 * NOT split: pass schema and name separately. @p out receives a new string
 * to free() with free. @return 0, CB_EINVAL (empty, too long or with a NUL),
 * CB_ENOMEM.
 */
int cb_pg_quote_ident(char **out, PGconn *conn, const char *ident, cb_error *err);

/** A row of a page result: a view, valid while its reader keeps the page. */
typedef struct cb_row {
	const PGresult *res;
	int row;
} cb_row;

/** Column value as text (never NULL: "" for SQL NULL; see cb_row_isnull). */
static inline const char *cb_row_get(const cb_row *r, int col)
{
	return PQgetvalue(r->res, r->row, col);
}

/** Non-zero when the column is SQL NULL. */
static inline int cb_row_isnull(const cb_row *r, int col)
{
	return PQgetisnull(r->res, r->row, col);
}

/** Length in bytes of the column's text value. */
static inline int cb_row_len(const cb_row *r, int col)
{
	return PQgetlength(r->res, r->row, col);
}

/** Column number by name (case-sensitive unless unquoted rules apply), or -1. */
static inline int cb_row_col(const cb_row *r, const char *name)
{
	return PQfnumber(r->res, name);
}

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
