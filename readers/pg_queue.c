/*
 * The PostgreSQL work-queue reader (include/cbatch/readers.h).
 *
 * One prepared statement,
 *
 *     SELECT cols FROM t WHERE (<where>) ORDER BY keys LIMIT <n> FOR UPDATE SKIP LOCKED
 *
 * run once per chunk, at the chunk's first read(), inside the chunk
 * transaction: the rows it returns stay locked by that transaction until it
 * commits (with the writers' state change, so they no longer match <where>)
 * or rolls back (and another claim, of this reader or of another worker,
 * takes them). Rows locked by another transaction are skipped, so several
 * workers drain one table on disjoint rows.
 *
 * End of input means that no matching row remains that is not held by a
 * live sibling partition of this execution, not that none is unlocked. It
 * is judged in the chunk transaction, right after a claim that came back
 * short of the claim size (or empty): the probe reads the xmax of every row
 * still matching, and batch_queue_holders (sql/functions) asks who holds
 * them. Rows this transaction just claimed are its own; rows held by live
 * sibling partitions are theirs (they commit them, or their partition is
 * reclaimed); a holder recorded on a lapsed partition lock of this job (a
 * frozen claimant) has its session ended and the rows are claimed again;
 * rows nobody holds are claimed by the next chunk; any other holder is
 * waited for, up to the lease of the lock the step runs under, then the
 * chunk fails saying who holds the rows (restartable, never a COMPLETED
 * step that left them). A short claim that is not the end ends its chunk
 * (CB_CHUNK_END): it commits, and the next chunk claims again.
 *
 * Chunks. update() and rollback() mark a chunk boundary; the claimed result
 * is released at the first read() after one, so items (cb_row views into it)
 * stay valid until their chunk ends. There is no position: progress lives in
 * the data, and update() stores nothing.
 */
#include "cbatch/readers.h"
#include "cbatch/sys/tx.h"

#include "pg_sql.h"
#include "clock.h"

#include <limits.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct queue {
	/* options (copies) */
	char *schema;
	char *table;
	char *where;
	char **qparams; /* the where clause's $1..$n */
	size_t nqparams;
	char **columns;
	size_t ncolumns;
	char **keys;
	size_t nkeys;
	size_t opt_claim_size;
	char what[200];
	/* from open */
	int opened;
	PGconn *conn;
	size_t claim_size;
	char stmt[64];
	char probe_stmt[64];   /* the matching rows' xmax, locked or not */
	char holders_stmt[64]; /* batch_queue_holders */
	char exec_id[24], step_id[24];
	int *keycol;  /* result column of each key */
	cb_row *rows; /* claim_size entries, allocated once */
	/* the chunk's claim */
	PGresult *res;
	int ntuples;
	int pos;
	int claimed;  /* the running chunk has claimed its rows */
	int at_end;   /* the claim was judged the end of input */
	int boundary; /* a chunk ended since the claim: release it at the next read */
};

static void release_claim(struct queue *q)
{
	PQclear(q->res);
	q->res = NULL;
	q->ntuples = 0;
	q->pos = 0;
	q->claimed = 0;
	q->at_end = 0;
	q->boundary = 0;
}

static void q_close(void *state)
{
	struct queue *q = state;

	if (!q)
		return;
	cb__pg_deallocate(q->conn, q->stmt);
	cb__pg_deallocate(q->conn, q->probe_stmt);
	cb__pg_deallocate(q->conn, q->holders_stmt);
	release_claim(q);
	free(q->rows);
	q->rows = NULL;
	free(q->keycol);
	q->keycol = NULL;
	q->opened = 0;
	q->conn = NULL;
}

static void q_free(void *state)
{
	struct queue *q = state;

	if (!q)
		return;
	q_close(q);
	free(q->schema);
	free(q->table);
	free(q->where);
	cb__rd_strv_free(q->qparams, q->nqparams);
	cb__rd_strv_free(q->columns, q->ncolumns);
	cb__rd_strv_free(q->keys, q->nkeys);
	free(q);
}

/*
 * Build the claim statement. @p qkeys: the quoted keys. The select list is
 * the given columns plus any key not among them (or "*"). With @p probe, the
 * end-of-input check instead: the lockers of every matching row.
 */
static int build_sql(struct queue *q, char **out, char *const *qkeys, int probe, cb_error *err)
{
	char *text = NULL, *qtable = NULL, *qschema = NULL, *c = NULL;
	size_t len, i, j;
	FILE *f;
	int rc;

	*out = NULL;
	rc = cb__rd_quote(&qtable, q->conn, q->what, q->table, err);
	if (!rc && q->schema)
		rc = cb__rd_quote(&qschema, q->conn, q->what, q->schema, err);
	if (rc)
		goto done;
	f = open_memstream(&text, &len);
	if (!f) {
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", q->what);
		goto done;
	}
	cb__rd_add(f, "SELECT ");
	if (probe) {
		/* Who locks them: a locker's transaction (or MultiXact) id, 0 for
		 * none. Every matching row, not the first few (those may all be a
		 * sibling's while a frozen session holds later ones); asked only
		 * after a short claim, so they are the rows in flight. */
		cb__rd_add(f, "DISTINCT xmax::text");
	} else if (q->ncolumns == 0) {
		cb__rd_add(f, "*");
	} else {
		for (i = 0; i < q->ncolumns && !rc; i++) {
			rc = cb__rd_quote(&c, q->conn, q->what, q->columns[i], err);
			if (!rc)
				cb__rd_add(f, "%s%s", i ? ", " : "", c);
			free(c);
			c = NULL;
		}
		for (i = 0; i < q->nkeys && !rc; i++) {
			for (j = 0; j < q->ncolumns; j++)
				if (strcmp(q->columns[j], q->keys[i]) == 0)
					break;
			if (j == q->ncolumns)
				cb__rd_add(f, ", %s", qkeys[i]);
		}
	}
	if (qschema)
		cb__rd_add(f, " FROM %s.%s", qschema, qtable);
	else
		cb__rd_add(f, " FROM %s", qtable);
	/* the filter on its own lines, so that a trailing "--" comment is harmless */
	if (q->where)
		cb__rd_add(f, " WHERE (\n%s\n)", q->where);
	if (!probe) {
		cb__rd_add(f, " ORDER BY ");
		for (i = 0; i < q->nkeys; i++)
			cb__rd_add(f, "%s%s", i ? ", " : "", qkeys[i]);
		/* a literal, not a parameter, so that the plan is not made again per chunk */
		cb__rd_add(f, " LIMIT %zu FOR UPDATE SKIP LOCKED", q->claim_size);
	}
	if (ferror(f) && !rc)
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", q->what);
	if (fclose(f) != 0 && !rc)
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", q->what);
	if (rc) {
		free(text);
		text = NULL;
	}
done:
	free(qtable);
	free(qschema);
	*out = text;
	return rc;
}

/*
 * The preflight (item.h `check`): the table, the columns and keys it names
 * against the catalog, then the claim query prepared unnamed (its filter),
 * whose row columns and types go to the writers' checks. Nothing claimed.
 */
static int q_check(void *state, const cb_step_context *sc, cb_error *err)
{
	struct queue *q = state;
	char **qkeys = NULL;
	char *sql = NULL;
	cb__pg_rel r;
	size_t i;
	int rc = 0, col;

	if (q->opened)
		return 0;
	if (!sc || !cb_step_context_conn(sc))
		return cb_error_set(err, CB_EINVAL, "%s: no step context or connection", q->what);
	q->conn = cb_step_context_conn(sc);
	q->claim_size = cb_step_context_chunk_size(sc) ? cb_step_context_chunk_size(sc) : 1;
	rc = cb__pg_rel_load(&r, q->conn, q->schema, q->table, q->what, err);
	if (rc)
		return rc;
	for (i = 0; i < q->ncolumns && rc == 0; i++)
		if ((col = cb__pg_rel_need(&r, q->columns[i], q->what, NULL, err)) < 0)
			rc = col;
	for (i = 0; i < q->nkeys && rc == 0; i++)
		if ((col = cb__pg_rel_need(&r, q->keys[i], q->what, "key column", err)) < 0)
			rc = col;
	cb__pg_rel_free(&r);
	if (rc)
		return rc;
	qkeys = calloc(q->nkeys, sizeof(*qkeys));
	if (!qkeys)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", q->what);
	for (i = 0; i < q->nkeys && !rc; i++)
		rc = cb__rd_quote(&qkeys[i], q->conn, q->what, q->keys[i], err);
	if (!rc)
		rc = build_sql(q, &sql, qkeys, 0, err);
	if (!rc)
		rc = cb__rd_check_query(q->conn, sc, sql, (int)q->nqparams, q->what,
					"the claim query", err);
	for (i = 0; i < q->nkeys; i++)
		free(qkeys[i]);
	free(qkeys);
	free(sql);
	return rc;
}

static int q_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	struct queue *q = state;
	char **qkeys = NULL;
	char *sql = NULL;
	size_t i;
	int rc = 0;

	(void)saved; /* progress lives in the data */
	q_close(q);
	if (!sc || !cb_step_context_conn(sc))
		return cb_error_set(err, CB_EINVAL, "%s: no step context or connection", q->what);
	q->conn = cb_step_context_conn(sc);
	/* A claim serves one chunk: rows beyond the chunk size would stay locked
	 * by this transaction without being processed, hidden from other workers. */
	q->claim_size = cb_step_context_chunk_size(sc);
	if (q->opt_claim_size && q->opt_claim_size < q->claim_size)
		q->claim_size = q->opt_claim_size;
	if (q->claim_size == 0 || q->claim_size > INT_MAX / 2 ||
	    q->claim_size > SIZE_MAX / sizeof(cb_row))
		return cb_error_set(err, CB_EINVAL, "%s: invalid claim size %zu", q->what,
				    q->claim_size);
	q->keycol = calloc(q->nkeys, sizeof(*q->keycol));
	q->rows = malloc(q->claim_size * sizeof(*q->rows));
	qkeys = calloc(q->nkeys, sizeof(*qkeys));
	if (!q->keycol || !q->rows || !qkeys) {
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", q->what);
		goto done;
	}
	for (i = 0; i < q->nkeys && !rc; i++)
		rc = cb__rd_quote(&qkeys[i], q->conn, q->what, q->keys[i], err);
	if (rc)
		goto done;
	rc = build_sql(q, &sql, qkeys, 0, err);
	if (rc)
		goto done;
	rc = cb_pg_prepare(q->conn, q->stmt, "pq", sql, (int)q->nqparams, err);
	if (rc) {
		cb_error_prefix(err, "%s: preparing the claim query", q->what);
		goto done;
	}
	free(sql);
	sql = NULL;
	rc = build_sql(q, &sql, qkeys, 1, err);
	if (rc)
		goto done;
	rc = cb_pg_prepare(q->conn, q->probe_stmt, "pqp", sql, (int)q->nqparams, err);
	if (rc == 0)
		rc = cb_pg_prepare(q->conn, q->holders_stmt, "pqh",
				   "SELECT verdict, coalesce(note, ''), wait_seconds "
				   "FROM batch_queue_holders($1::text[], $2::bigint, $3::bigint)",
				   3, err);
	if (rc) {
		cb_error_prefix(err, "%s: preparing the end-of-input check", q->what);
		goto done;
	}
	snprintf(q->exec_id, sizeof(q->exec_id), "%lld", cb_step_context_job_execution_id(sc));
	snprintf(q->step_id, sizeof(q->step_id), "%lld", cb_step_context_step_execution_id(sc));
	rc = cb__rd_find_keycols(q->keycol, q->conn, q->stmt, q->keys, qkeys, q->nkeys, q->what,
				 "claim", err);
	if (rc)
		goto done;
	release_claim(q);
	q->opened = 1;
done:
	if (qkeys)
		for (i = 0; i < q->nkeys; i++)
			free(qkeys[i]);
	free(qkeys);
	free(sql);
	if (rc)
		q_close(q);
	return rc;
}

/* Claim the chunk's rows: they stay locked until the chunk transaction ends. */
static int claim_once(struct queue *q, cb_tx *tx, cb_error *err)
{
	PGresult *res = NULL;
	size_t i;
	int rc, nt, r;

	rc = cb_tx_query(tx, &res, q->stmt, (int)q->nqparams, (const char *const *)q->qparams, NULL,
			 NULL, err);
	if (rc) {
		PQclear(res);
		return cb_error_prefix(err, "%s: claim query", q->what);
	}
	nt = PQntuples(res);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || nt < 0 || (size_t)nt > q->claim_size) {
		PQclear(res);
		return cb_error_set(err, CB_EDB, "%s: unexpected claim query result", q->what);
	}
	for (r = 0; r < nt; r++)
		for (i = 0; i < q->nkeys; i++)
			if (PQgetisnull(res, r, q->keycol[i])) {
				PQclear(res);
				return cb_error_set(err, CB_EINVAL,
						    "%s: key column \"%s\" is NULL in a row; keys "
						    "must be NOT NULL",
						    q->what, q->keys[i]);
			}
	for (r = 0; r < nt; r++) {
		q->rows[r].res = res;
		q->rows[r].row = r;
	}
	q->res = res;
	q->ntuples = nt;
	q->pos = 0;
	q->claimed = 1;
	return 0;
}

/*
 * The claim came back short: is that the end? *verdict 'd' (done: nothing
 * left but this transaction's rows and those of live siblings), 'c' (claim
 * again now), 'w' (held by someone to wait for: @p note says who,
 * @p wait_seconds how long at most).
 */
static int look_at_locked(struct queue *q, cb_tx *tx, char *verdict, char *note, size_t size,
			  double *wait_seconds, cb_error *err)
{
	PGresult *res = NULL;
	char *xids = NULL, *w;
	const char *p[3];
	size_t len = 3;
	int rc, nt;

	*verdict = 'd';
	rc = cb_tx_query(tx, &res, q->probe_stmt, (int)q->nqparams, (const char *const *)q->qparams,
			 NULL, NULL, err);
	if (rc) {
		PQclear(res);
		return cb_error_prefix(err, "%s: looking for locked rows", q->what);
	}
	nt = PQntuples(res);
	if (nt <= 0) {
		PQclear(res); /* no matching row at all: the end */
		return 0;
	}
	for (int r = 0; r < nt; r++)
		len += strlen(PQgetvalue(res, r, 0)) + 1;
	xids = w = malloc(len);
	if (!xids) {
		PQclear(res);
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", q->what);
	}
	*w++ = '{';
	for (int r = 0; r < nt; r++)
		w += sprintf(w, "%s%s", r ? "," : "", PQgetvalue(res, r, 0));
	*w++ = '}';
	*w = '\0';
	PQclear(res);
	res = NULL;
	p[0] = xids;
	p[1] = q->exec_id;
	p[2] = q->step_id;
	rc = cb_tx_query(tx, &res, q->holders_stmt, 3, p, NULL, NULL, err);
	free(xids);
	if (rc) {
		PQclear(res);
		return cb_error_prefix(err, "%s: looking for locked rows", q->what);
	}
	if (PQntuples(res) != 1) {
		PQclear(res);
		return cb_error_set(err, CB_EDB, "%s: unexpected answer on locked rows", q->what);
	}
	*verdict = PQgetvalue(res, 0, 0)[0];
	snprintf(note, size, "%s", PQgetvalue(res, 0, 1));
	*wait_seconds = atof(PQgetvalue(res, 0, 2));
	PQclear(res);
	return 0;
}

/*
 * Claim the chunk's rows, and judge in the same transaction whether they are
 * the last (see the top of this file). A full claim is never the end; a
 * short one with rows is the end only when nothing is left but this
 * transaction's rows and live siblings'; an empty one waits for other
 * holders, bounded by the lease.
 */
static int claim(struct queue *q, cb_tx *tx, cb_error *err)
{
	double started = cb__clock_mono(), wait_seconds = 30;
	char note[512] = "", verdict;
	int rc;

	for (unsigned int tries = 0;; tries++) {
		rc = claim_once(q, tx, err);
		if (rc || (size_t)q->ntuples == q->claim_size)
			return rc;
		rc = look_at_locked(q, tx, &verdict, note, sizeof(note), &wait_seconds, err);
		if (rc)
			return rc;
		q->at_end = verdict == 'd';
		/* rows to hand out: this chunk takes them, the next claims again */
		if (q->at_end || q->ntuples > 0)
			return 0;
		if (cb__clock_mono() - started > wait_seconds)
			return cb_error_set(err, CB_EDB,
					    "%s: matching rows stay locked by another session "
					    "for more than %.0f s (%s); the input is not at its "
					    "end while they remain",
					    q->what, wait_seconds, note[0] ? note : "unknown");
		release_claim(q);
		/* a holder just ended: claim at once; else give it a moment */
		if (verdict != 'c' || tries > 0)
			cb__clock_sleep(0.2);
	}
}

static int q_read(void *state, cb_tx *tx, void **item, cb_error *err)
{
	struct queue *q = state;
	int rc;

	*item = NULL;
	if (!q->opened)
		return cb_error_set(err, CB_EINVAL, "%s: read before open", q->what);
	if (q->boundary)
		release_claim(q);
	if (!q->claimed) {
		rc = claim(q, tx, err);
		if (rc)
			return rc;
	}
	if (q->pos < q->ntuples) {
		*item = &q->rows[q->pos++];
		return 0;
	}
	/* a claim serves one chunk; the chunk after it claims again unless
	 * this claim was judged the end */
	return q->at_end ? CB_DONE : CB_CHUNK_END;
}

static int q_update(void *state, json_t *out, cb_error *err)
{
	struct queue *q = state;

	if (!q->opened)
		return cb_error_set(err, CB_EINVAL, "%s: update before open", q->what);
	if (!json_is_object(out))
		return cb_error_set(err, CB_EINVAL, "%s: update needs a JSON object", q->what);
	/* nothing to store: the writers' state change commits with the chunk */
	q->boundary = 1;
	return 0;
}

static void q_rollback(void *state)
{
	struct queue *q = state;

	if (!q || !q->opened)
		return;
	/* the rollback released the row locks: the next read claims again */
	q->boundary = 1;
}

static void q_describe(void *state, const void *item, char *buf, size_t size)
{
	const struct queue *q = state;
	const cb_row *r = item;

	if (buf && size)
		buf[0] = '\0';
	if (q && r)
		cb__rd_describe_keys(buf, size, q->keys, q->nkeys, q->keycol, r->res, r->row);
}

int cb_pg_queue_reader_new(cb_reader *out, const cb_pg_queue_options *opts, cb_error *err)
{
	const char *what = "pg queue reader";
	cb_pg_queue_options o;
	struct queue *q;
	cb__rd_table t;
	int rc;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !opts)
		return cb_error_set(err, CB_EINVAL, "%s: no options", what);
	/* Counts of 0 with a list: NULL-terminated lists (item.h, CB_COUNT). */
	o = *opts;
	o.ncolumns = cb_list_count(o.columns, o.ncolumns);
	o.nkeys = cb_list_count(o.key_columns, o.nkeys);
	o.nquery_params = cb_list_count(o.query_params, o.nquery_params);
	opts = &o;
	if (opts->version != CB_PG_QUEUE_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL, "%s: unsupported options version %u", what,
				    opts->version);
	t.schema = opts->schema;
	t.table = opts->table;
	t.columns = opts->columns;
	t.ncolumns = opts->ncolumns;
	t.keys = opts->key_columns;
	t.nkeys = opts->nkeys;
	t.params = opts->query_params;
	t.nparams = opts->nquery_params;
	if ((rc = cb__rd_check_table(what, &t, err)) < 0)
		return rc;
	if (opts->nquery_params > 0 && (!opts->where || !opts->query_params))
		return cb_error_set(err, CB_EINVAL,
				    "%s on \"%s\": query parameters without a where clause", what,
				    opts->table);
	if (opts->claim_size > INT_MAX / 2)
		return cb_error_set(err, CB_EINVAL, "%s on \"%s\": claim size too large", what,
				    opts->table);

	q = calloc(1, sizeof(*q));
	if (!q)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	snprintf(q->what, sizeof(q->what), "%s on \"%s%s%s\"", what,
		 opts->schema ? opts->schema : "", opts->schema ? "." : "", opts->table);
	q->schema = cb__rd_strdup(opts->schema);
	q->table = cb__rd_strdup(opts->table);
	q->where = cb__rd_strdup(opts->where);
	q->qparams = cb__rd_strv_dup(opts->query_params, opts->nquery_params);
	q->keys = cb__rd_strv_dup(opts->key_columns, opts->nkeys);
	q->columns = cb__rd_strv_dup(opts->columns, opts->ncolumns);
	if ((opts->schema && !q->schema) || !q->table || (opts->where && !q->where) ||
	    !q->qparams || !q->keys || !q->columns) {
		cb__rd_strv_free(q->qparams, q->qparams ? opts->nquery_params : 0);
		cb__rd_strv_free(q->keys, q->keys ? opts->nkeys : 0);
		cb__rd_strv_free(q->columns, q->columns ? opts->ncolumns : 0);
		q->qparams = q->keys = q->columns = NULL;
		q_free(q);
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	}
	q->nqparams = opts->nquery_params;
	q->nkeys = opts->nkeys;
	q->ncolumns = opts->ncolumns;
	q->opt_claim_size = opts->claim_size;

	out->version = CB_READER_VERSION;
	out->state = q;
	out->open = q_open;
	out->read = q_read;
	out->update = q_update;
	out->describe = q_describe;
	out->rollback = q_rollback;
	out->close = q_close;
	out->free = q_free;
	out->check = q_check;
	return 0;
}
