/*
 * A chunk step on two connections (chunk.connections = 2, cb_step_def
 * `connections`).
 *
 * Chunk N+1 is read, processed and written on one connection while chunk N
 * writes or commits on the other, so that two server backends work at once.
 * The commits keep chunk order through a transaction-level advisory lock per
 * chunk, keyed by the step execution and the version the chunk commits on:
 * each chunk takes its own at BEGIN, in a round trip of its own, before
 * anything else (so before the next chunk begins), and the next chunk takes
 * it shared just before its checkpoint, so that its checkpoint runs only once
 * chunk N ended; the checkpoint then finds the version N committed, or fails
 * (CB001) when N did not commit. What is committed is therefore always a
 * prefix of the chunks. The order lives in the server, so every wait of one
 * chunk on the other is a lock wait the server sees: the client never waits
 * for an answer that the other chunk's locks hold back. Chunk N+1's data
 * statements may run before N's: a row both write is taken by whichever
 * comes first, and when that is N+1 while N needs it too, the server breaks
 * the deadlock (N waits for N+1's row, N+1's checkpoint for N's lock) and
 * the failure is handled as any other.
 *
 * Any failure with chunks in flight rolls both back and reopens the parts
 * from the last commit (as a reconnect does), and the next chunk runs alone
 * through the one-connection path with its skip, retry and fail rules; the
 * second connection is opened again once that chunk committed. After
 * CB__CHUNK_MAX_FALLS such failures the step stays on one connection.
 */
#include "step_chunk.h"
#include "log.h"
#include "pgkit.h"
#include "program.h"
#include "cbatch/sys/conn.h"

#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* Close the second connection; the step goes on with one. */
void cb__chunk_lane_drop(chunk_step *cs)
{
	lane *b = &cs->lanes[1];

	if (b->tx) {
		cb_error ignored = CB_ERROR_INIT;

		cb__tx_rollback(b->tx, &ignored);
		cb__tx_free(b->tx);
	}
	memset(b, 0, sizeof(*b));
	cs->lanes[0].busy = 0;
	cb__conn_mirror_set(cs->sc.conn, NULL);
	if (cs->conn2)
		cb__pg_release(cs->conn2);
	cs->conn2 = NULL;
}

/* Open the second connection, check its session, and reopen the parts from
 * the last commit so that their statements are prepared on both. */
static int lane_open(chunk_step *cs, cb_error *err)
{
	const char *start;
	int pid, rc;

	cs->conn2 = cb_pg_connect_like(cs->sc.conn, "cbatch-chunk2");
	if (PQstatus(cs->conn2) != CONNECTION_OK)
		rc = cb_pg_error(err, cs->conn2, NULL, "second connection");
	else
		rc = cb__conn_session(&pid, &start, cs->conn2, err);
	if (rc == 0)
		rc = cb__tx_new(&cs->lanes[1].tx, cs->conn2, 1, err);
	if (rc < 0) {
		cb__chunk_lane_drop(cs);
		return rc;
	}
	cb__chunk_close_parts(cs);
	cb__conn_mirror_set(cs->sc.conn, cs->conn2);
	rc = cb__chunk_resume(cs, err);
	if (rc < 0)
		cb__chunk_lane_drop(cs);
	return rc;
}

static void log_fall(chunk_step *cs, const char *what)
{
	cb__log(cb__program_name(), CB__LOG_WARN, CB__EV_STEP_OVERLAP_FALLBACK,
		CB__LOG_WITH(.job = cs->run->job->name, .execution = cs->run->job_execution_id,
			     .step = cs->sc.step_name),
		"%s execution %lld step '%s': chunk %lld: %.300s; going on from the last commit%s",
		cs->run->job->name, cs->run->job_execution_id, cs->sc.step_name, cs->commits + 1,
		what,
		cs->falls >= CB__CHUNK_MAX_FALLS ? ", on one connection from now on" :
						   ", the next chunk alone");
}

/* Text of the advisory lock key of the chunk that commits on @p version. */
static void order_key(const chunk_step *cs, long long version, char (*v)[16])
{
	snprintf(v[0], 16, "%d", (int)(int32_t)(uint32_t)cs->sc.step_execution_id);
	snprintf(v[1], 16, "%d", (int)(int32_t)(uint32_t)version);
}

/* BEGIN on lane @p l and take its chunk's order lock, answered before
 * anything of the chunk goes on (so before the next chunk can begin). */
static int lane_begin(chunk_step *cs, lane *l, cb_error *err)
{
	char v[2][16];
	const char *p[2] = { v[0], v[1] };
	int rc = cb__tx_begin(l->tx, err);

	order_key(cs, l->version, v);
	if (rc == 0)
		rc = cb__tx_send_sql(l->tx, "SELECT pg_advisory_xact_lock($1::int4, $2::int4)", 2,
				     p, "the chunk's order lock", err);
	return rc < 0 ? rc : cb_tx_flush(l->tx, err);
}

/* Before lane @p l's checkpoint: wait for the chunk before it to end. */
static int lane_wait_previous(chunk_step *cs, lane *l, cb_error *err)
{
	char v[2][16];
	const char *p[2] = { v[0], v[1] };

	order_key(cs, l->version - 1, v);
	return cb__tx_send_sql(l->tx, "SELECT pg_advisory_xact_lock_shared($1::int4, $2::int4)", 2,
			       p, "waiting for the chunk before", err);
}

/* Read lane @p l's answers to its end: its chunk committed (counted) or not. */
static int lane_finish(chunk_step *cs, lane *l, cb_error *err)
{
	int rc;

	if (!l->busy)
		return 0;
	l->busy = 0;
	rc = cb__tx_commit_finish(l->tx, err);
	if (rc == 0) {
		l->open = 0;
		cb__chunk_committed(cs, &l->a.c);
	}
	return rc;
}

/*
 * A failure with chunks in flight (@p err; the listeners hear of it), or of
 * the second connection's opening: roll both back, close the second
 * connection, reopen the parts from the last commit (riding through a lost
 * database as a one-connection chunk does). @return 1 to go on with the next
 * chunk alone, 0 to end the step (a stop asked during an outage: out->status
 * set), or the error.
 */
static int lanes_fall(chunk_step *cs, cb__step_outcome *out, int older, cb_error *err)
{
	int rc;

	if (cs->lanes[0].open || cs->lanes[1].open)
		CB__NOTIFY(cs->run->job, chunk_error, &cs->sc, err);
	/* The older chunk first: its COMMIT, when it went out, may have done
	 * well whatever failed after it (counted then); the rest roll back. */
	for (int j = 0; j < 2; j++) {
		lane *l = &cs->lanes[j == 0 ? older : 1 - older];
		cb_error ignored = CB_ERROR_INIT;

		if (l->busy && lane_finish(cs, l, &ignored) == 0)
			continue;
		if (l->tx && cb__tx_active(l->tx))
			cb__tx_rollback(l->tx, &ignored);
		if (l->open)
			out->rollbacks++;
		l->open = l->busy = 0;
	}
	cs->falls++;
	cs->solo = 1;
	log_fall(cs, err->message);
	cb__chunk_lane_drop(cs);
	cb__chunk_close_parts(cs);
	/* Only the first connection's own loss is ridden through here: an
	 * outage the second met first shows on the first in its next chunk. */
	if (PQstatus(cs->sc.conn) != CONNECTION_OK) {
		char where[160];

		snprintf(where, sizeof(where), "chunk %lld", cs->commits + 1);
		rc = cb__run_ride_through(cs->run, cs->sc.conn, cs->sc.step_name, where,
					  cb__chunk_resume, cs, err);
		if (rc > 0)
			out->status = CB_STATUS_STOPPED;
		return rc == 0 ? 1 : rc > 0 ? 0 : rc;
	}
	cb_error_clear(err);
	rc = cb__chunk_resume(cs, err);
	if (rc < 0 && cb__pg_lost(err, cs->sc.conn))
		return lanes_fall(cs, out, 0, err);
	return rc < 0 ? rc : 1;
}

/*
 * Run chunks on two connections until the input ends, a stop, or a failure.
 * @return 0 when the step ended (out->status set, or out->error), 1 to run
 * the next chunk alone (after a failure in flight, or a reader that ended an
 * empty chunk early).
 */
static int run_two(chunk_step *cs, cb__step_outcome *out)
{
	cb_error *err = &out->error;
	int cur = 0, rc;

	if (!cs->conn2 && lane_open(cs, err) < 0) {
		/* One connection still serves (the log says why the second is
		 * missing); the parts may have been closed to reopen. */
		cs->falls = CB__CHUNK_MAX_FALLS - 1;
		rc = lanes_fall(cs, out, 0, err);
		return rc == 1 ? 1 : 0;
	}
	cs->lanes[0].status[0] = cs->lanes[1].status[0] = '\0';
	for (;;) {
		lane *l = &cs->lanes[cur], *o = &cs->lanes[1 - cur];
		int stop = cb__run_quitting(cs->run);

		if (!stop && cb__run_check_lock(cs->run, err) < 0)
			goto fail;
		/* l's chunk committed last round (its answer is in); o's is in flight */
		if (stop || strcmp(l->status, "STOPPING") == 0) {
			if (lane_finish(cs, o, err) < 0)
				goto fail;
			out->status = CB_STATUS_STOPPED;
			return 0;
		}
		cb__arena_reset(&cs->chunk.arena);
		CB__NOTIFY(cs->run->job, before_chunk, &cs->sc);
		cs->tx = l->tx;
		l->status[0] = '\0';
		l->open = 1;
		l->version = cs->version + (o->busy ? 1 : 0);
		if (lane_begin(cs, l, err) < 0 || cb__chunk_fill(cs, &l->a, err) < 0)
			goto fail;
		if (cs->nitems == 0 && l->a.c.read_skip == 0) {
			/* The input ended (or a reader ended an empty chunk early): end
			 * the empty transaction, let the one in flight commit. */
			cb__tx_rollback(l->tx, err);
			l->open = 0;
			cs->tx = cs->lanes[0].tx;
			if (lane_finish(cs, o, err) < 0)
				goto fail;
			if (strcmp(o->status, "STOPPING") == 0) {
				out->status = CB_STATUS_STOPPED;
				return 0;
			}
			if (l->a.more)
				return 1;
			if (cb__chunk_complete_writers(cs, err) == 0)
				out->status = CB_STATUS_COMPLETED;
			return 0;
		}
		/* The data statements go out now; the checkpoint after the chunk
		 * before it ended (the server waits, not this process). */
		if (cb__tx_push(l->tx, err) < 0 || cb__chunk_update_context(cs, err) < 0 ||
		    (o->busy && lane_wait_previous(cs, l, err) < 0) ||
		    cb__chunk_queue_checkpoint(cs, &l->checkpoint, l->version, cur == 1, &l->a.c,
					       l->status, sizeof(l->status), err) < 0 ||
		    cb__tx_commit_send(l->tx, err) < 0)
			goto fail;
		l->busy = 1;
		if (lane_finish(cs, o, err) < 0)
			goto fail;
		if (l->a.done) {
			cs->tx = cs->lanes[0].tx;
			if (lane_finish(cs, l, err) < 0)
				goto fail;
			if (strcmp(l->status, "STOPPING") == 0)
				out->status = CB_STATUS_STOPPED;
			else if (cb__chunk_complete_writers(cs, err) == 0)
				out->status = CB_STATUS_COMPLETED;
			return 0;
		}
		cur = 1 - cur;
	}
fail:
	cs->tx = cs->lanes[0].tx;
	rc = lanes_fall(cs, out, 1 - cur, err);
	return rc == 1 ? 1 : 0;
}

int cb__chunk_run_two(chunk_step *cs, cb__step_outcome *out)
{
	int rc;

	/* The step's own transaction (lanes[0]) is cs->tx whenever this returns,
	 * whichever lane ran last: the step frees cs->tx, the second lane frees
	 * its own. */
	cs->lanes[0].tx = cs->tx;
	rc = run_two(cs, out);
	cs->tx = cs->lanes[0].tx;
	return rc;
}
