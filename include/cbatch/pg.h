/**
 * @file pg.h
 * The chunk transaction (cb_tx) and the light row view (cb_row) that
 * PostgreSQL readers and writers share.
 *
 * A cb_tx is owned by the step engine: it is open from the first read of a
 * chunk to its commit or rollback, and is handed to readers, writers and
 * tasklets, which must never commit or roll back themselves.
 *
 * For chunk steps the connection is in libpq pipeline mode: statements are
 * queued with cb_tx_send and go out together with the engine's own
 * bookkeeping and the COMMIT, in one round trip. A reader that needs rows now
 * (a page query) uses cb_tx_query, which sends what is queued plus its own
 * statement and waits. Prepare statements with cb_pg_prepare in `open`, when
 * the connection is not in pipeline mode.
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

typedef struct cb_tx cb_tx;

/**
 * Called with each result of a statement queued with cb_tx_send, in order,
 * when the pipeline is flushed. The result is borrowed (do not PQclear it).
 * Return 0, or a negative code (with a message in @p err) to fail the chunk.
 */
typedef int (*cb_result_fn)(void *ctx, const PGresult *res, cb_error *err);

/** The transaction's connection (borrowed). */
PGconn *cb_tx_conn(cb_tx *tx);

/** Non-zero when the connection is in pipeline mode (chunk steps). */
int cb_tx_pipelined(const cb_tx *tx);

/**
 * Queue a prepared statement. Parameter buffers are copied by libpq before
 * this returns, so they may be reused at once. @p on_result (may be NULL)
 * sees the statement's result at flush time. In non-pipeline mode the
 * statement runs at once and @p on_result is called before this returns.
 * @return 0, CB_EDB (send failed, or in non-pipeline mode the statement
 *         failed: message and SQLSTATE in @p err), or the handler's code
 */
int cb_tx_send(cb_tx *tx, const char *stmt_name, int nparams,
	       const char *const *values, const int *lengths, const int *formats,
	       cb_result_fn on_result, void *ctx, cb_error *err);

/**
 * Send everything queued, wait for all of it, and run the handlers.
 * The transaction stays open. After the first failing statement the rest
 * are skipped by the server; the first error is reported.
 * @return 0, CB_EDB, CB_ERETRY (40001/40P01), or a handler's code
 */
int cb_tx_flush(cb_tx *tx, cb_error *err);

/**
 * Run a prepared statement now and hand back its result: what is queued is
 * sent first, in order. @p out receives a new PGresult (PGRES_TUPLES_OK or
 * PGRES_COMMAND_OK) that the caller must PQclear.
 * @return 0, CB_EDB, CB_ERETRY, or a queued handler's code
 */
int cb_tx_query(cb_tx *tx, PGresult **out, const char *stmt_name, int nparams,
		const char *const *values, const int *lengths, const int *formats,
		cb_error *err);

/**
 * Run `COPY ... FROM STDIN` (@p copy_sql, SQL text of the caller's) inside
 * the transaction with @p len bytes of COPY text-format data. libpq cannot
 * COPY in pipeline mode, so this sends what is queued, leaves pipeline mode
 * for the COPY and enters it again: it costs round trips that cb_tx_send
 * does not, and pays off for large appends. @return 0, CB_EDB, CB_ERETRY.
 */
int cb_tx_copy(cb_tx *tx, const char *copy_sql, const char *data, size_t len, cb_error *err);

/**
 * Prepare @p sql on @p conn under a name unique in this process, written to
 * @p name_out (at least 64 bytes). @p prefix (a few letters) makes the name
 * readable in pg_prepared_statements. The connection must not be in
 * pipeline mode. @return 0 or CB_EDB.
 */
int cb_pg_prepare(PGconn *conn, char *name_out, const char *prefix,
		  const char *sql, int nparams, cb_error *err);

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

#ifdef __cplusplus
}
#endif
#endif
