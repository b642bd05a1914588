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

/* Roll back whatever is open (ignores queued work) and leave pipeline mode.
 * Best effort: a broken connection is reported in @p err. */
int cb__tx_rollback(cb_tx *tx, cb_error *err);

/* Run a plain statement now (e.g. SAVEPOINT), after whatever is queued. */
int cb__tx_command(cb_tx *tx, const char *sql, cb_error *err);

/* Non-zero between begin and commit/rollback. */
int cb__tx_active(const cb_tx *tx);

#endif
