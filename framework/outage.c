/*
 * Riding through a database outage (a failover, a switchover, a restart).
 *
 * A run that loses its connection is not a failed run: within its outage
 * budget (the reserved parameter outage.budget, in seconds; by default the
 * lease) it reconnects with backoff (0.2 s doubling to 2 s), and libpq's
 * multi-host list with target_session_attrs=read-write finds the new primary.
 * What it does once connected again (prove the lock is still its own, reread
 * the committed checkpoint) is the caller's: the chunk loop, the tasklet
 * loop, the flow's step records. Waits are sleeps, never a poll of the
 * connection's socket: after a failed PQreset libpq may leave a refused
 * host's socket open, and a wait on it returns at once.
 */
#include "engine.h"
#include "clock.h"
#include "log.h"
#include "program.h"
#include "repo.h"
#include "reserved.h"
#include "cbatch/lock.h"
#include "cbatch/sys/conn.h"

#include <stdio.h>
#include <string.h>

double cb__run_outage_budget(const cb__run *run)
{
	return cb__outage_budget(run->params, run->lease_seconds);
}

/* Sleep @p seconds, cut short by a stop request (signal or a leaving worker). */
static void pause_unless_quitting(const cb__run *run, double seconds)
{
	double end = cb__clock_mono() + seconds;

	while (!(run && cb__run_quitting(run))) {
		double left = end - cb__clock_mono();

		if (left <= 0)
			return;
		cb__clock_sleep(left < 0.1 ? left : 0.1);
	}
}

int cb__outage_reach(PGconn *conn, double deadline, double *delay, const cb__run *run)
{
	for (;;) {
		double left;

		if (PQstatus(conn) == CONNECTION_OK)
			return 1;
		PQreset(conn);
		if (PQstatus(conn) == CONNECTION_OK)
			return 1;
		if (run && cb__run_quitting(run))
			return -1;
		left = deadline - cb__clock_mono();
		if (left <= 0)
			return 0;
		cb__outage_pause(run, deadline, delay);
	}
}

int cb__outage_again(PGconn *conn, double deadline, double *delay, int *tries, const cb__run *run)
{
	if ((*tries)++ > 0) {
		/* Reached before, and the session failed again (it refuses
		 * writes, or was ended again): not again at once. */
		if (cb__clock_mono() >= deadline)
			return 0;
		cb__outage_pause(run, deadline, delay);
	}
	if (run && cb__run_quitting(run))
		return -1;
	PQreset(conn);
	return cb__outage_reach(conn, deadline, delay, run);
}

void cb__outage_pause(const cb__run *run, double deadline, double *delay)
{
	double left = deadline - cb__clock_mono();

	if (left > 0)
		pause_unless_quitting(run, *delay < left ? *delay : left);
	*delay = *delay * 2 > 2.0 ? 2.0 : *delay * 2;
}

int cb__run_prove_lock(const cb__run *run, PGconn *conn, cb_error *err)
{
	int alive = 0, rc;

	if (!run->lock_name)
		return 0;
	rc = cb__lock_heartbeat(&alive, conn, run->lock_name, cb__owner_id(), run->fencing_token,
				run->lease_seconds, run->job_execution_id, err);
	if (rc == 0 && !alive)
		rc = cb_error_set(err, CB_EFENCED,
				  "fenced off: lock '%s' was taken over or released while the "
				  "database was away: nothing reopened",
				  run->lock_name);
	if (rc == 0)
		rc = cb__lock_record_session(conn, run->lock_name, cb__owner_id(),
					     run->fencing_token, err);
	return rc;
}

double cb__run_outage_deadline(const cb__run *run)
{
	double since = run->outage_since > 0 ? run->outage_since : cb__clock_mono();

	return since + cb__run_outage_budget(run);
}

/* Why @p conn could not connect, short: libpq says "connection to server
 * at/on ... failed: WHY" for each host it tried; the last WHY is the news. */
static int connect_failed(cb_error *err, PGconn *conn)
{
	const char *msg = PQerrorMessage(conn), *p, *why = msg;
	char line[CB_ERROR_MESSAGE_MAX];

	for (p = strstr(msg, " failed: "); p; p = strstr(p + 1, " failed: "))
		why = p + strlen(" failed: ");
	cb__pg_message_line(line, sizeof(line), why);
	cb_error_set(err, CB_EDB, "connecting again: %s", line);
	snprintf(err->sqlstate, sizeof(err->sqlstate), "08006");
	return CB_EDB;
}

int cb__run_ride_through(cb__run *run, PGconn *conn, const char *step, const char *where,
			 int (*resume)(void *ctx, cb_error *err), void *ctx, cb_error *err)
{
	double since = cb__clock_mono(), budget = cb__run_outage_budget(run), delay = 0.2;
	char cause[CB_ERROR_MESSAGE_MAX], last[CB_ERROR_MESSAGE_MAX];
	int rc;

	snprintf(cause, sizeof(cause), "%s", err->message);
	run->outage_since = since;
	if (budget <= 0) {
		run->database_lost = 1;
		return cb_error_prefix(err, "%s: the database was lost and outage.budget is 0",
				       where);
	}
	for (;;) {
		cb_error_clear(err);
		PQreset(conn);
		rc = PQstatus(conn) == CONNECTION_OK ? 0 : connect_failed(err, conn);
		if (rc == 0)
			rc = cb__run_prove_lock(run, conn, err);
		if (rc == 0)
			rc = resume(ctx, err);
		if (rc == 0) {
			run->outage_since = 0;
			cb__log(cb__program_name(), CB__LOG_WARN, CB__EV_STEP_OUTAGE_RIDDEN,
				CB__LOG_WITH(.job = run->job->name,
					     .execution = run->job_execution_id, .step = step),
				"%s execution %lld step '%s': %s: the database was lost (%.200s); "
				"connected again after %.1f s, going on from the last commit",
				run->job->name, run->job_execution_id, step, where, cause,
				cb__clock_mono() - since);
			return 0;
		}
		if (!cb__pg_lost(err, conn)) {
			run->outage_since = 0; /* reached: a failure of its own */
			return cb_error_prefix(err, "%s: after the database was lost (%.200s)",
					       where, cause);
		}
		if (cb__run_quitting(run)) {
			cb_error_clear(err);
			return 1;
		}
		if (cb__clock_mono() - since >= budget) {
			snprintf(last, sizeof(last), "%s", err->message);
			cb_error_clear(err);
			cb_error_set(
				err, CB_EDB,
				"%s: the database stayed unreachable for %.1f s (outage budget "
				"%.0f s): %.120s; last try: %.240s",
				where, cb__clock_mono() - since, budget, cause, last);
			snprintf(err->sqlstate, sizeof(err->sqlstate), "08006");
			run->database_lost = 1;
			cb__log(cb__program_name(), CB__LOG_ERROR, CB__EV_STEP_OUTAGE_BEYOND,
				CB__LOG_WITH(.job = run->job->name,
					     .execution = run->job_execution_id, .step = step,
					     .code = cb_strcode(CB_EDB)),
				"%s execution %lld step '%s': %s: the database stayed away beyond the "
				"outage budget (%.0f s): the step fails; its end is recorded as soon "
				"as the database answers",
				run->job->name, run->job_execution_id, step, where, budget);
			return CB_EDB;
		}
		cb__outage_pause(run, since + budget, &delay);
	}
}
