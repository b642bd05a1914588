/*
 * The chunk transaction over libpq's pipeline mode.
 *
 * Statements are queued with a handler each; a flush sends a sync point and
 * reads every queued statement's result in order, then the sync. After the
 * first error the server skips the rest until the sync (PGRES_PIPELINE_ABORTED),
 * and since we always open an explicit transaction block, the block stays open
 * in the failed state: commit and rollback both end it with ROLLBACK.
 */
#include "tx.h"
#include "pgkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct pending {
	cb_result_fn fn;
	void *ctx;
	const char *what;         /* for messages */
	cb__tx_error_fn on_error; /* tells the statement's failure; NULL: generic */
} pending;

struct cb_tx {
	PGconn *conn;
	int pipelined;
	int active;
	int synced; /* the COMMIT and its sync went out (cb__tx_commit_send) */
	pending *queue;
	size_t nqueue, capqueue;
};

PGconn *cb_tx_conn(cb_tx *tx)
{
	return tx->conn;
}

int cb_tx_pipelined(const cb_tx *tx)
{
	return tx->pipelined;
}

int cb__tx_active(const cb_tx *tx)
{
	return tx->active;
}

int cb__tx_new(cb_tx **out, PGconn *conn, int pipelined, cb_error *err)
{
	cb_tx *tx = calloc(1, sizeof(*tx));

	*out = NULL;
	if (!tx)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	tx->conn = conn;
	tx->pipelined = pipelined;
	*out = tx;
	return 0;
}

void cb__tx_free(cb_tx *tx)
{
	if (!tx)
		return;
	free(tx->queue);
	free(tx);
}

/* The failure of statement @p p: told by its own handler, or generically. */
static int failed(const pending *p, PGconn *conn, const PGresult *res, cb_error *err)
{
	if (p->on_error)
		return p->on_error(p->ctx, conn, res, err);
	return cb_pg_error(err, conn, res, p->what);
}

static int enqueue(cb_tx *tx, const pending *p, cb_error *err)
{
	if (tx->nqueue == tx->capqueue) {
		size_t cap = tx->capqueue ? tx->capqueue * 2 : 16;
		pending *q = realloc(tx->queue, cap * sizeof(*q));

		if (!q)
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		tx->queue = q;
		tx->capqueue = cap;
	}
	tx->queue[tx->nqueue++] = *p;
	return 0;
}

static int deliver(const pending *p, const PGresult *res, cb_error *err)
{
	return p->fn ? p->fn(p->ctx, res, err) : 0;
}

/* Plain mode: run now. */
static int exec_now(cb_tx *tx, const char *stmt, int nparams, const char *const *values,
		    const int *lengths, const int *formats, const pending *p, cb_error *err)
{
	PGresult *res = PQexecPrepared(tx->conn, stmt, nparams, values, lengths, formats, 0);
	ExecStatusType st = PQresultStatus(res);
	int rc;

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK)
		rc = failed(p, tx->conn, res, err);
	else
		rc = deliver(p, res, err);
	PQclear(res);
	return rc;
}

static int send_prepared(cb_tx *tx, const char *stmt_name, int nparams, const char *const *values,
			 const int *lengths, const int *formats, const pending *p, cb_error *err)
{
	if (!tx->pipelined)
		return exec_now(tx, stmt_name, nparams, values, lengths, formats, p, err);
	if (!PQsendQueryPrepared(tx->conn, stmt_name, nparams, values, lengths, formats, 0))
		return failed(p, tx->conn, NULL, err);
	return enqueue(tx, p, err);
}

int cb_tx_send(cb_tx *tx, const char *stmt_name, int nparams, const char *const *values,
	       const int *lengths, const int *formats, cb_result_fn on_result, void *ctx,
	       cb_error *err)
{
	pending p = { on_result, ctx, stmt_name, NULL };

	return send_prepared(tx, stmt_name, nparams, values, lengths, formats, &p, err);
}

int cb__tx_send_described(cb_tx *tx, const char *stmt_name, const char *label, int nparams,
			  const char *const *values, cb_result_fn on_result,
			  cb__tx_error_fn on_error, void *ctx, cb_error *err)
{
	pending p = { on_result, ctx, label ? label : stmt_name, on_error };

	return send_prepared(tx, stmt_name, nparams, values, NULL, NULL, &p, err);
}

static int send_plain(cb_tx *tx, const char *sql, const char *what, cb_error *err)
{
	if (!tx->pipelined) {
		PGresult *res = PQexec(tx->conn, sql);
		int rc = 0;

		if (PQresultStatus(res) != PGRES_COMMAND_OK)
			rc = cb_pg_error(err, tx->conn, res, what);
		PQclear(res);
		return rc;
	}
	if (!PQsendQueryParams(tx->conn, sql, 0, NULL, NULL, NULL, NULL, 0))
		return cb_pg_error(err, tx->conn, NULL, what);
	return enqueue(tx, &(pending){ NULL, NULL, what, NULL }, err);
}

/*
 * Read every queued statement's results (the sync went out), then the sync.
 * When @p last_out is set, the result of the last queued statement is handed
 * back instead of cleared (cb_tx_query).
 */
static int read_to_sync(cb_tx *tx, PGresult **last_out, cb_error *err)
{
	int rc = 0;
	size_t i;

	tx->synced = 0;
	for (i = 0; i < tx->nqueue; i++) {
		const pending *p = &tx->queue[i];
		PGresult *res;
		int got = 0;

		while ((res = PQgetResult(tx->conn)) != NULL) {
			ExecStatusType st = PQresultStatus(res);

			got = 1;
			if (st == PGRES_PIPELINE_ABORTED) {
				/* skipped after an earlier error: already reported */
				if (rc == 0)
					rc = cb_error_set(err, CB_EDB, "%s: pipeline aborted",
							  p->what);
			} else if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
				int e = failed(p, tx->conn, res, err);

				if (rc == 0)
					rc = e;
			} else if (rc == 0) {
				rc = deliver(p, res, err);
			}
			if (last_out && i + 1 == tx->nqueue && rc == 0 && st == PGRES_TUPLES_OK &&
			    !*last_out)
				*last_out = res;
			else
				PQclear(res);
		}
		if (!got && PQstatus(tx->conn) == CONNECTION_BAD) {
			tx->nqueue = 0;
			return rc ? rc : failed(p, tx->conn, NULL, err);
		}
	}
	tx->nqueue = 0;
	/* The sync point itself. */
	for (;;) {
		PGresult *res = PQgetResult(tx->conn);
		ExecStatusType st;

		if (!res) {
			if (PQstatus(tx->conn) == CONNECTION_BAD)
				return rc ? rc : cb_pg_error(err, tx->conn, NULL, "pipeline sync");
			continue;
		}
		st = PQresultStatus(res);
		PQclear(res);
		if (st == PGRES_PIPELINE_SYNC)
			break;
	}
	if (rc < 0 && last_out && *last_out) {
		PQclear(*last_out);
		*last_out = NULL;
	}
	return rc;
}

/* Send a sync and read every queued statement's results, then the sync. */
static int drain(cb_tx *tx, PGresult **last_out, cb_error *err)
{
	if (!PQpipelineSync(tx->conn)) {
		tx->nqueue = 0;
		return cb_pg_error(err, tx->conn, NULL, "pipeline sync");
	}
	return read_to_sync(tx, last_out, err);
}

int cb_tx_flush(cb_tx *tx, cb_error *err)
{
	if (!tx->pipelined || tx->nqueue == 0)
		return 0;
	return drain(tx, NULL, err);
}

int cb_tx_query(cb_tx *tx, PGresult **out, const char *stmt_name, int nparams,
		const char *const *values, const int *lengths, const int *formats, cb_error *err)
{
	int rc;

	*out = NULL;
	if (!tx->pipelined) {
		PGresult *res =
			PQexecPrepared(tx->conn, stmt_name, nparams, values, lengths, formats, 0);
		ExecStatusType st = PQresultStatus(res);

		if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
			rc = cb_pg_error(err, tx->conn, res, stmt_name);
			PQclear(res);
			return rc;
		}
		*out = res;
		return 0;
	}
	if (!PQsendQueryPrepared(tx->conn, stmt_name, nparams, values, lengths, formats, 0))
		return cb_pg_error(err, tx->conn, NULL, stmt_name);
	rc = enqueue(tx, &(pending){ NULL, NULL, stmt_name, NULL }, err);
	if (rc < 0)
		return rc;
	rc = drain(tx, out, err);
	if (rc == 0 && !*out)
		rc = cb_error_set(err, CB_EDB, "%s returned no result set", stmt_name);
	return rc;
}

int cb_tx_copy(cb_tx *tx, const char *copy_sql, const char *data, size_t len, cb_error *err)
{
	PGresult *res;
	int rc = 0, in_pipeline = tx->pipelined && PQpipelineStatus(tx->conn) != PQ_PIPELINE_OFF;

	if (in_pipeline) {
		rc = tx->nqueue ? drain(tx, NULL, err) : 0;
		if (rc < 0)
			return rc;
		if (!PQexitPipelineMode(tx->conn))
			return cb_pg_error(err, tx->conn, NULL, "leave pipeline mode for COPY");
	}
	res = PQexec(tx->conn, copy_sql);
	if (PQresultStatus(res) != PGRES_COPY_IN) {
		rc = cb_pg_error(err, tx->conn, res, "COPY");
		PQclear(res);
		goto done;
	}
	PQclear(res);
	/* Large buffers go in pieces so libpq's output buffer stays modest. */
	for (size_t off = 0; off < len && rc == 0;) {
		size_t n = len - off > (1u << 20) ? (1u << 20) : len - off;

		if (PQputCopyData(tx->conn, data + off, (int)n) != 1)
			rc = cb_pg_error(err, tx->conn, NULL, "COPY data");
		off += n;
	}
	if (PQputCopyEnd(tx->conn, rc ? "aborted by the writer" : NULL) != 1 && rc == 0)
		rc = cb_pg_error(err, tx->conn, NULL, "COPY end");
	while ((res = PQgetResult(tx->conn)) != NULL) {
		if (PQresultStatus(res) != PGRES_COMMAND_OK && rc == 0)
			rc = cb_pg_error(err, tx->conn, res, "COPY");
		PQclear(res);
	}
done:
	if (in_pipeline && !PQenterPipelineMode(tx->conn) && rc == 0)
		rc = cb_pg_error(err, tx->conn, NULL, "enter pipeline mode after COPY");
	return rc;
}

int cb__tx_command(cb_tx *tx, const char *sql, cb_error *err)
{
	int rc = send_plain(tx, sql, sql, err);

	if (rc == 0 && tx->pipelined)
		rc = drain(tx, NULL, err);
	return rc;
}

int cb__tx_begin(cb_tx *tx, cb_error *err)
{
	if (tx->active)
		return cb_error_set(err, CB_ERROR, "transaction already open");
	if (tx->pipelined && PQpipelineStatus(tx->conn) == PQ_PIPELINE_OFF &&
	    !PQenterPipelineMode(tx->conn))
		return cb_pg_error(err, tx->conn, NULL, "enter pipeline mode");
	tx->active = 1;
	return send_plain(tx, "BEGIN", "BEGIN", err);
}

static void leave_pipeline(cb_tx *tx)
{
	if (tx->pipelined && PQpipelineStatus(tx->conn) != PQ_PIPELINE_OFF)
		PQexitPipelineMode(tx->conn);
}

int cb__tx_rollback(cb_tx *tx, cb_error *err)
{
	PGresult *res;
	int rc = 0;

	tx->nqueue = 0;
	if (!tx->active)
		return 0;
	tx->active = 0;
	if (PQstatus(tx->conn) == CONNECTION_BAD) {
		leave_pipeline(tx);
		return cb_pg_error(err, tx->conn, NULL, "rollback");
	}
	if (tx->pipelined && PQpipelineStatus(tx->conn) != PQ_PIPELINE_OFF) {
		/* Results of an interrupted flush may still be pending: read to idle
		 * (a COMMIT sent with its sync needs no second one). */
		if (!tx->synced)
			PQpipelineSync(tx->conn);
		tx->synced = 0;
		for (;;) {
			res = PQgetResult(tx->conn);
			if (!res) {
				if (PQstatus(tx->conn) == CONNECTION_BAD ||
				    PQtransactionStatus(tx->conn) != PQTRANS_ACTIVE)
					break;
				continue;
			}
			if (PQresultStatus(res) == PGRES_PIPELINE_SYNC) {
				PQclear(res);
				break;
			}
			PQclear(res);
		}
		leave_pipeline(tx);
	}
	if (PQtransactionStatus(tx->conn) == PQTRANS_IDLE)
		return 0;
	res = PQexec(tx->conn, "ROLLBACK");
	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = cb_pg_error(err, tx->conn, res, "rollback");
	PQclear(res);
	return rc;
}

/* The COMMIT's results are in (@p rc: how they went): end the transaction. */
static int committed(cb_tx *tx, int rc, cb_error *err)
{
	if (rc < 0) {
		cb_error tmp = CB_ERROR_INIT;

		cb__tx_rollback(tx, &tmp);
		return rc;
	}
	/* A COMMIT of a failed block answers ROLLBACK without an error: check. */
	if (PQtransactionStatus(tx->conn) != PQTRANS_IDLE) {
		cb_error tmp = CB_ERROR_INIT;

		cb__tx_rollback(tx, &tmp);
		return cb_error_set(err, CB_EDB, "commit did not end the transaction");
	}
	tx->active = 0;
	leave_pipeline(tx);
	return 0;
}

int cb__tx_commit(cb_tx *tx, cb_error *err)
{
	int rc;

	if (!tx->active)
		return cb_error_set(err, CB_ERROR, "no transaction to commit");
	rc = send_plain(tx, "COMMIT", "COMMIT", err);
	if (rc == 0 && tx->pipelined)
		rc = drain(tx, NULL, err);
	return committed(tx, rc, err);
}

int cb__tx_push(cb_tx *tx, cb_error *err)
{
	if (tx->pipelined && PQflush(tx->conn) != 0)
		return cb_pg_error(err, tx->conn, NULL, "send");
	return 0;
}

int cb__tx_send_sql(cb_tx *tx, const char *sql, int nparams, const char *const *values,
		    const char *what, cb_error *err)
{
	if (!tx->pipelined)
		return cb_error_set(err, CB_ERROR, "%s: not a pipelined transaction", what);
	if (!PQsendQueryParams(tx->conn, sql, nparams, NULL, values, NULL, NULL, 0))
		return cb_pg_error(err, tx->conn, NULL, what);
	return enqueue(tx, &(pending){ NULL, NULL, what, NULL }, err);
}

int cb__tx_commit_send(cb_tx *tx, cb_error *err)
{
	int rc;

	if (!tx->active || !tx->pipelined)
		return cb_error_set(err, CB_ERROR, "no pipelined transaction to commit");
	rc = send_plain(tx, "COMMIT", "COMMIT", err);
	if (rc == 0 && !PQpipelineSync(tx->conn))
		rc = cb_pg_error(err, tx->conn, NULL, "pipeline sync");
	if (rc == 0 && PQflush(tx->conn) != 0)
		rc = cb_pg_error(err, tx->conn, NULL, "send");
	if (rc == 0)
		tx->synced = 1;
	return rc;
}

int cb__tx_commit_finish(cb_tx *tx, cb_error *err)
{
	if (!tx->synced)
		return cb_error_set(err, CB_ERROR, "no COMMIT sent");
	return committed(tx, read_to_sync(tx, NULL, err), err);
}

int cb_tx_count_duplicates(cb_tx *tx, long long n, cb_error *err)
{
	static const char sql[] = "SELECT " CB_TX_DUPLICATES_ADD("$1::bigint");
	char num[24];
	const char *values[1] = { num };

	if (n < 0)
		return cb_error_set(err, CB_EINVAL, "duplicate count %lld is negative", n);
	if (n == 0)
		return 0;
	snprintf(num, sizeof(num), "%lld", n);
	if (!tx->pipelined) {
		PGresult *res = PQexecParams(tx->conn, sql, 1, NULL, values, NULL, NULL, 0);
		int rc = 0;

		if (PQresultStatus(res) != PGRES_TUPLES_OK)
			rc = cb_pg_error(err, tx->conn, res, "duplicate count");
		PQclear(res);
		return rc;
	}
	if (!PQsendQueryParams(tx->conn, sql, 1, NULL, values, NULL, NULL, 0))
		return cb_pg_error(err, tx->conn, NULL, "duplicate count");
	return enqueue(tx, &(pending){ NULL, NULL, "duplicate count", NULL }, err);
}
