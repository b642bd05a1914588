/**
 * @file sys/tx.h
 * The chunk transaction's pipeline, for reader and writer authors.
 *
 * This header is the plug-in author's side of cb_tx (see cbatch/pg.h for
 * what job authors use: cb_tx_conn, cb_pg_prepare, cb_pg_error, the row
 * view). It is not included by cbatch.h: a reader or writer that queues
 * statements in the chunk's pipeline includes it explicitly,
 * `#include <cbatch/sys/tx.h>`, as libgit2's backends include git2/sys/.
 *
 * For chunk steps the connection is in libpq pipeline mode: statements are
 * queued with cb_tx_send and go out together with the engine's own
 * bookkeeping and the COMMIT, in one round trip. A reader that needs rows now
 * (a page query) uses cb_tx_query, which sends what is queued plus its own
 * statement and waits. Prepare statements with cb_pg_prepare in `open`, when
 * the connection is not in pipeline mode.
 *
 * For tasklet steps the connection is not in pipeline mode: cb_tx_send runs
 * the statement at once, and a tasklet may use plain libpq calls on
 * cb_tx_conn(tx) inside the open transaction.
 *
 * Every function here borrows @p tx: it belongs to the step engine, which
 * opens it before the first read of a chunk and commits or rolls it back;
 * a plug-in never commits or rolls back itself.
 */
#ifndef CBATCH_SYS_TX_H
#define CBATCH_SYS_TX_H

#include <stddef.h>
#include <libpq-fe.h>
#include "../error.h"
#include "../pg.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/**
 * Called with each result of a statement queued with cb_tx_send, in order,
 * when the pipeline is flushed.
 *
 * Ownership: @p res is borrowed (do not PQclear it; copy values out before
 * returning); @p ctx is the pointer given to cb_tx_send.
 *
 * @param ctx the caller's context
 * @param res the statement's result (PGRES_COMMAND_OK or PGRES_TUPLES_OK)
 * @param err receives the message when the handler fails
 * @return 0, or a negative code (with a message in @p err) to fail the chunk
 */
typedef int (*cb_result_fn)(void *ctx, const PGresult *res, cb_error *err);

/**
 * Whether the transaction's connection is in pipeline mode.
 *
 * Ownership: @p tx is borrowed.
 *
 * @param tx the chunk transaction
 * @return non-zero for chunk steps (pipelined), 0 for tasklet steps
 */
int cb_tx_pipelined(const cb_tx *tx);

/**
 * Queue a prepared statement in the chunk's pipeline.
 *
 * Parameter buffers are copied by libpq before this returns, so they may be
 * reused at once. @p on_result sees the statement's result at flush time. In
 * non-pipeline mode the statement runs at once and @p on_result is called
 * before this returns.
 *
 * Ownership: @p tx, @p values, @p lengths, @p formats are borrowed for the
 * call; @p ctx is borrowed until @p on_result has run.
 *
 * @param tx the chunk transaction
 * @param stmt_name a statement prepared on cb_tx_conn(tx) (cb_pg_prepare)
 * @param nparams the number of parameters
 * @param values the parameters as text (NULL entries are SQL NULL)
 * @param lengths binary lengths, or NULL for text parameters
 * @param formats parameter formats, or NULL for text
 * @param on_result the result handler, or NULL
 * @param ctx passed to @p on_result
 * @param err receives the error
 * @return 0, CB_EDB (send failed, or in non-pipeline mode the statement
 *         failed: message and SQLSTATE in @p err), CB_ERETRY (40001/40P01 in
 *         non-pipeline mode), CB_ENOMEM, or the handler's code
 */
int cb_tx_send(cb_tx *tx, const char *stmt_name, int nparams, const char *const *values,
	       const int *lengths, const int *formats, cb_result_fn on_result, void *ctx,
	       cb_error *err);

/**
 * Send everything queued, wait for all of it, and run the handlers.
 *
 * The transaction stays open. After the first failing statement the rest
 * are skipped by the server; the first error is reported.
 *
 * Ownership: @p tx is borrowed.
 *
 * @param tx the chunk transaction
 * @param err receives the first error
 * @return 0, CB_EDB, CB_ERETRY (40001/40P01), or a handler's code
 */
int cb_tx_flush(cb_tx *tx, cb_error *err);

/**
 * Run a prepared statement now and hand back its result.
 *
 * What is queued is sent first, in order, and its handlers run.
 *
 * Ownership: @p out receives a new PGresult (PGRES_TUPLES_OK or
 * PGRES_COMMAND_OK) that the caller must PQclear; everything else is
 * borrowed for the call.
 *
 * @param out receives the result (NULL on failure)
 * @param tx the chunk transaction
 * @param stmt_name a statement prepared on cb_tx_conn(tx)
 * @param nparams the number of parameters
 * @param values the parameters as text (NULL entries are SQL NULL)
 * @param lengths binary lengths, or NULL
 * @param formats parameter formats, or NULL
 * @param err receives the error
 * @return 0, CB_EDB, CB_ERETRY, CB_ENOMEM, or a queued handler's code
 */
int cb_tx_query(cb_tx *tx, PGresult **out, const char *stmt_name, int nparams,
		const char *const *values, const int *lengths, const int *formats, cb_error *err);

/**
 * Run `COPY ... FROM STDIN` inside the transaction.
 *
 * libpq cannot COPY in pipeline mode, so this sends what is queued, leaves
 * pipeline mode for the COPY and enters it again: it costs round trips that
 * cb_tx_send does not, and pays off for large appends.
 *
 * Ownership: @p copy_sql and @p data are borrowed for the call.
 *
 * @param tx the chunk transaction
 * @param copy_sql the COPY statement (SQL text of the caller's)
 * @param data @p len bytes of COPY text-format data
 * @param len the length of @p data
 * @param err receives the error
 * @return 0, CB_EDB, CB_ERETRY
 */
int cb_tx_copy(cb_tx *tx, const char *copy_sql, const char *data, size_t len, cb_error *err);

/**
 * SQL that adds the integer SQL expression @p expr to the chunk's absorbed
 * duplicate writes, for a writer whose statement knows the count only on the
 * server (e.g. rows that ON CONFLICT left alone).
 *
 * It expands to a string literal: a call of set_config on the
 * transaction-local setting `cbatch.duplicate_writes`, which the chunk
 * checkpoint adds to the step's duplicate_target_write_count. The count
 * therefore commits, or rolls back (savepoints included), with the chunk's
 * data, in the same round trip. Use it in a SELECT list, e.g.
 * `"WITH w AS (INSERT ... RETURNING (xmax = 0) AS ins) SELECT "
 * CB_TX_DUPLICATES_ADD("$3::bigint - (SELECT count(*) FILTER (WHERE ins) FROM w)")`.
 * @p expr must be a string literal of SQL text.
 */
#define CB_TX_DUPLICATES_ADD(expr)                                                                 \
	"set_config('cbatch.duplicate_writes', (coalesce(nullif(current_setting("                  \
	"'cbatch.duplicate_writes', true), ''), '0')::bigint + " expr ")::text, true)"

/**
 * Add @p n conflicts that the writer absorbed to the chunk's
 * duplicate_target_write_count, for a writer that knows the count on the
 * client side.
 *
 * In a chunk step the statement is queued in the pipeline (no round trip of
 * its own) and the count commits or rolls back with the chunk. In a tasklet
 * step it runs at once and is not counted (tasklets have no checkpointed
 * duplicate count). @p n == 0 queues nothing.
 *
 * Ownership: @p tx is borrowed.
 *
 * @param tx the chunk transaction
 * @param n the number of absorbed writes (>= 0)
 * @param err receives the error
 * @return 0, CB_EINVAL (@p n negative), CB_EDB, CB_ENOMEM
 */
int cb_tx_count_duplicates(cb_tx *tx, long long n, cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
