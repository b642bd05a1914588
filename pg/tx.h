/* The chunk transaction: internal side of cb_tx (see include/cbatch/pg.h and sys/tx.h). */
#ifndef CB_FRAMEWORK_TX_H
#define CB_FRAMEWORK_TX_H

#include "cbatch/pg.h"
#include "cbatch/sys/tx.h"

/*
 * Create a transaction handle for @p conn (borrowed). pipelined: the handle
 * enters pipeline mode at begin and leaves it at commit/rollback.
 */
int cb__tx_new(cb_tx **out, PGconn *conn, int pipelined, cb_error *err);
void cb__tx_free(cb_tx *tx);

/* Queue BEGIN (pipelined) or run it (plain). */
int cb__tx_begin(cb_tx *tx, cb_error *err);

/* Queue COMMIT, flush everything, leave pipeline mode. On failure the
 * transaction is rolled back before returning (the COMMIT never ran). */
int cb__tx_commit(cb_tx *tx, cb_error *err);

/*
 * A commit in two halves, for a chunk step on two connections: chunk N+1's
 * statements run on one while chunk N's COMMIT is in flight on the other.
 *   cb__tx_push        send what is queued now (no sync): the server starts
 *   cb__tx_commit_send COMMIT and the sync, sent
 *   cb__tx_commit_finish  read every answer, the COMMIT's included, and end
 *                      the transaction as cb__tx_commit does (on failure it
 *                      is rolled back before returning)
 */
int cb__tx_push(cb_tx *tx, cb_error *err);
int cb__tx_commit_send(cb_tx *tx, cb_error *err);
int cb__tx_commit_finish(cb_tx *tx, cb_error *err);

/* Queue @p sql (not prepared; text parameters) in the pipeline of a
 * pipelined transaction. @p what names it in errors. */
int cb__tx_send_sql(cb_tx *tx, const char *sql, int nparams, const char *const *values,
		    const char *what, cb_error *err);

/* Roll back whatever is open (ignores queued work) and leave pipeline mode.
 * Best effort: a broken connection is reported in @p err. */
int cb__tx_rollback(cb_tx *tx, cb_error *err);

/* Run a plain statement now (e.g. SAVEPOINT), after whatever is queued. */
int cb__tx_command(cb_tx *tx, const char *sql, cb_error *err);

/* Non-zero between begin and commit/rollback. */
int cb__tx_active(const cb_tx *tx);

#endif
