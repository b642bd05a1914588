/* Launch and restart: from parameters to a finished job execution. */
#include "engine.h"
#include "heartbeat.h"
#include "repo.h"

#include "cbatch/lock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static void result_set(cb_job_result *out, cb_status status, const char *exit_code,
		       const char *message)
{
	out->status = status;
	out->invalid_input = 0; /* the outcome is this one now */
	snprintf(out->exit_code, sizeof(out->exit_code), "%s", exit_code);
	snprintf(out->exit_message, sizeof(out->exit_message), "%s", message ? message : "");
}

/* How long this process may still record its execution's end: until the
 * lease of its lock runs out (from the last extension), after which another
 * process may recognise the execution as dead and take over. */
struct lease_clock {
	cb__heartbeat *hb; /* NULL once stopped, or before it started */
	double renewed;    /* cb__now() of the last known extension */
	double lease;
};

static double lease_end(struct lease_clock *lc)
{
	if (lc->hb) {
		double r = cb__heartbeat_renewed(lc->hb);

		if (r > lc->renewed)
			lc->renewed = r;
	}
	return lc->renewed + lc->lease;
}

/*
 * A lost connection must not leave the execution looking alive when we can
 * still say otherwise: an outage that this process survives is waited out,
 * reconnecting with backoff (0.2 s doubling to 2 s), until the lease ends.
 * @return 1 connected, 0 the lease ran out first.
 */
static int reach_repository(PGconn *conn, struct lease_clock *lc, double *delay)
{
	/* The deadline is fixed when the wait starts: a heartbeat still running
	 * on its own connection keeps extending the lease, and a deadline that
	 * moved with it would wait for as long as that connection lives. */
	double end = lease_end(lc);

	for (;;) {
		double now, left;

		if (PQstatus(conn) == CONNECTION_OK)
			return 1;
		PQreset(conn);
		if (PQstatus(conn) == CONNECTION_OK)
			return 1;
		now = cb__now();
		left = end - now;
		if (left <= 0)
			return 0;
		/* The last try falls just before the lease ends. */
		usleep((useconds_t)((*delay < left ? *delay : left) * 1e6));
		*delay = *delay * 2 > 2.0 ? 2.0 : *delay * 2;
	}
}

/* Did @p rc fail for a lost connection that may come back? */
static int outage(int rc, PGconn *conn)
{
	return rc == CB_EDB && PQstatus(conn) == CONNECTION_BAD;
}

static int run_execution_body(cb_job_result *out, PGconn *conn, const cb_job *job,
			      const cb_params *params, long long expect_restart_of,
			      const cb_launch_options *opts, cb_error *err)
{
	char key[CB_JOB_KEY_LEN + 1], dead_why[512] = "", *lock_name = NULL;
	char saved_timeout[64] = "";
	double lease = opts->lease_seconds > 0 ? opts->lease_seconds : job->lease_seconds;
	cb__lock_grant grant;
	cb__launch l;
	cb__run run;
	cb_error runerr = CB_ERROR_INIT;
	cb_status started = CB_STATUS_UNKNOWN;
	struct lease_clock lc = { NULL, 0, 0 };
	double delay = 0.2;
	int rc, audited = 0;

	rc = cb_job_validate_params(job, params, err);
	if (rc == 0 && job->validator) {
		rc = job->validator(job->validator_ctx, conn, params, err);
		if (rc > 0)
			rc = 0;
		else if (rc < 0 && !err->code)
			cb_error_set(err, rc,
				     "job '%s': parameter validator returned %s without "
				     "a message",
				     job->name, cb_strcode(rc));
	}
	if (rc == 0)
		rc = cb_params_job_key(key, params, err);
	if (rc == 0)
		rc = cb_job_lock_name(&lock_name, job, params, err);
	if (rc == 0)
		rc = cb__lock_take(&grant, conn, job, lock_name, lease, err);
	if (rc < 0)
		goto out;
	lc.renewed = cb__now();
	lc.lease = lease;
	if (grant.outcome == CB__LOCK_TAKEOVER)
		snprintf(dead_why, sizeof(dead_why), "owner %s lost: lease expired at %s",
			 grant.holder, grant.held_until);
	else if (grant.outcome == CB__LOCK_OWNER_DEAD)
		snprintf(dead_why, sizeof(dead_why),
			 "owner %s lost: its process on this host is gone (lease was until %s)",
			 grant.holder, grant.held_until);
	if (!grant.old_session_ended) {
		/* The replaced owner's session could not be ended (privilege): its
		 * open transaction may hold rows this run needs. Wait for them at
		 * most a lease (55P03, retryable), never for as long as it is frozen. */
		cb_error ignored = CB_ERROR_INIT;

		cb__lock_bound_waits(saved_timeout, sizeof(saved_timeout), conn, lease, &ignored);
	}
	rc = cb__repo_launch(&l, conn, job->name, key, params, job->restartable, cb__owner_id(),
			     expect_restart_of, lock_name, grant.fencing_token,
			     dead_why[0] ? dead_why : NULL, err);
	if (rc < 0) {
		cb_error ignored = CB_ERROR_INIT;

		/* Nothing ran: give the lock back at once. */
		cb__lock_release(conn, lock_name, cb__owner_id(), grant.fencing_token, 0, 0,
				 &ignored);
		goto out;
	}
	out->job_instance_id = l.job_instance_id;
	out->job_execution_id = l.job_execution_id;
	out->restarted = l.restart_of != 0;
	out->dead_owner = l.dead_owner;
	out->fencing_token = grant.fencing_token;
	snprintf(out->lock_name, sizeof(out->lock_name), "%s", lock_name);

	memset(&run, 0, sizeof(run));
	run.conn = conn;
	run.job = job;
	run.opts = opts;
	run.params = params;
	run.job_instance_id = l.job_instance_id;
	run.job_execution_id = l.job_execution_id;
	run.started = cb__now();
	run.lock_name = lock_name;
	run.fencing_token = grant.fencing_token;
	run.lease_seconds = lease;

	rc = cb__repo_job_started(&started, conn, l.job_execution_id, &runerr);
	if (rc == 0 && started == CB_STATUS_STOPPING) {
		/* A stop arrived between the launch and the start: honour it
		 * without running a step; the instance stays restartable. */
		result_set(out, CB_STATUS_STOPPED, "STOPPED",
			   "stopped before it started: a stop was requested while it was "
			   "starting");
	} else if (rc == 0) {
		rc = cb__repo_job_context(&run.job_context, conn, l.job_execution_id, &runerr);
	}
	if (rc == 0 && started == CB_STATUS_STARTED)
		rc = cb__heartbeat_start(&run.heartbeat, conn, lock_name, cb__owner_id(),
					 grant.fencing_token, lease, l.job_execution_id, &runerr);
	lc.hb = run.heartbeat;
	if (rc == 0 && started == CB_STATUS_STARTED) {
		CB__NOTIFY(job, before_job, job->name, l.job_execution_id);
		rc = cb__flow_run(&run, out, &runerr);
	}
	json_decref(run.job_context);
	if (rc < 0) {
		/* The repository itself failed mid-run: record what we can. */
		result_set(out, CB_STATUS_FAILED, "FAILED", runerr.message);
		reach_repository(conn, &lc, &delay);
	}
	{
		char why[CB_ERROR_MESSAGE_MAX];
		int lost = cb__heartbeat_lost(run.heartbeat, why, sizeof(why));
		cb_error ignored = CB_ERROR_INIT;

		lease_end(&lc);
		lc.hb = NULL;
		cb__heartbeat_stop(run.heartbeat);
		if (out->status == CB_STATUS_FAILED && !run.fenced) {
			/* A takeover ends the old owner's session: its chunk then fails
			 * on the connection, not on the fence. Say what happened. */
			int held = 1;

			reach_repository(conn, &lc, &delay);
			if (cb__lock_held(&held, conn, lock_name, cb__owner_id(),
					  grant.fencing_token, &ignored) == 0 &&
			    !held) {
				char msg[CB_ERROR_MESSAGE_MAX];

				if (snprintf(
					    msg, sizeof(msg),
					    "fenced off: lock '%s' no longer carries fencing token "
					    "%lld (taken over or released); %s",
					    lock_name, grant.fencing_token, out->exit_message) < 0)
					msg[0] = '\0';
				result_set(out, CB_STATUS_FAILED, "FAILED", msg);
				run.fenced = !lost;
			}
			cb_error_clear(&ignored);
		}
		/* Both when both: a chunk refused by the fence counts as fenced
		 * even if the heartbeat had noticed the loss first. */
		if (lost)
			cb__lock_audit(conn, lock_name, cb__owner_id(), "HEARTBEAT_FAILED",
				       grant.fencing_token, l.job_execution_id, why, &ignored);
		if (run.fenced)
			cb__lock_audit(conn, lock_name, cb__owner_id(), "FENCED",
				       grant.fencing_token, l.job_execution_id, out->exit_message,
				       &ignored);
		audited = lost || run.fenced;
	}
	if (started != CB_STATUS_STOPPING) /* after_job pairs with before_job */
		CB__NOTIFY(job, after_job, job->name, l.job_execution_id, out->status,
			   out->exit_message);
	/* The verdict is what an outage must not lose: retried until the lease
	 * ends. */
	for (;;) {
		rc = cb__repo_job_finish(conn, l.job_execution_id, out->status, out->exit_code,
					 out->exit_message, err);
		if (!outage(rc, conn) || !reach_repository(conn, &lc, &delay))
			break;
		cb_error_clear(err);
	}
	if (rc == CB_EFENCED) {
		/* Another process declared this execution dead and took over: this
		 * process's outcome is FAILED whatever its steps did, and says why. */
		char msg[CB_ERROR_MESSAGE_MAX];

		if (snprintf(msg, sizeof(msg), "%s%s%s", err->message,
			     out->exit_message[0] ? "; this process: " : "", out->exit_message) < 0)
			msg[0] = '\0';
		result_set(out, CB_STATUS_FAILED, "FAILED", msg);
		cb_error_clear(err);
		rc = 0;
		if (!audited) {
			/* A zombie woken after the takeover may find nothing left to
			 * write before its heartbeat notices: it lost its lock all the
			 * same, and the audit must say so. */
			cb_error ignored = CB_ERROR_INIT;

			cb__lock_audit(conn, lock_name, cb__owner_id(), "FENCED",
				       grant.fencing_token, l.job_execution_id, msg, &ignored);
		}
	}
	if (rc < 0 && runerr.code) {
		/* What the run failed with first: it may be long (a step's own
		 * error and a failed reconnect), so not cut at a prefix's length. */
		char both[CB_ERROR_MESSAGE_MAX];

		if (snprintf(both, sizeof(both), "%s; then: %s", runerr.message, err->message) < 0)
			both[0] = '\0';
		cb_error_clear(err);
		cb_error_set(err, rc, "%s", both);
	}
	if (outage(rc, conn)) {
		/* First, so that the long errors of libpq after it cannot cut it. */
		char until[64], msg[CB_ERROR_MESSAGE_MAX];
		time_t t = time(NULL) + (time_t)(lease_end(&lc) - cb__now() + 0.999);
		struct tm tm;

		if (!gmtime_r(&t, &tm) ||
		    !strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm))
			snprintf(until, sizeof(until), "the end of its lease");
		if (snprintf(msg, sizeof(msg),
			     "the repository stayed unreachable for the rest of the lease: "
			     "execution %lld is left STARTED and is recognised as dead when its "
			     "lease ends, at %s (a restart or `abandon` then ends it); %s",
			     l.job_execution_id, until, err->message) < 0)
			msg[0] = '\0';
		cb_error_clear(err);
		cb_error_set(err, rc, "%s", msg);
	}
	{
		cb_error ignored = CB_ERROR_INIT;

		/* Only releases if the lock is still ours (owner and token); an
		 * outage is waited out as for the verdict, so that the next run
		 * need not wait for the lease. */
		while (cb__lock_release(conn, lock_name, cb__owner_id(), grant.fencing_token,
					job->lock_at_least_seconds, l.job_execution_id,
					&ignored) == CB_EDB &&
		       PQstatus(conn) == CONNECTION_BAD && reach_repository(conn, &lc, &delay))
			cb_error_clear(&ignored);
	}
out:
	if (saved_timeout[0]) {
		cb_error ignored = CB_ERROR_INIT;

		cb__lock_restore_waits(conn, saved_timeout, &ignored);
	}
	free(lock_name);
	return rc;
}

/* The handlers cover the whole launch, not only the flow: a stop signalled
 * while the execution is being created or started (a scheduler forwards its
 * SIGTERM at any moment) is a graceful stop before the first step, never the
 * default action killing a process that already owns a STARTED execution. */
static int run_execution(cb_job_result *out, PGconn *conn, const cb_job *job,
			 const cb_params *params, long long expect_restart_of,
			 const cb_launch_options *opts, cb_error *err)
{
	int rc;

	if (opts->handle_signals)
		cb__signals_install();
	rc = run_execution_body(out, conn, job, params, expect_restart_of, opts, err);
	if (opts->handle_signals)
		cb__signals_restore();
	return rc;
}

static int check_options(const cb_launch_options *opts, cb_error *err)
{
	return opts ? cb__version_check(opts->version, CB_LAUNCH_OPTIONS_VERSION, "launch options",
					err) :
		      0;
}

int cb_job_launch(cb_job_result *out, PGconn *conn, const cb_job *job, const cb_params *given,
		  const cb_launch_options *opts, cb_error *err)
{
	static const cb_launch_options defaults = CB_LAUNCH_OPTIONS_INIT;
	cb_params *next = NULL, *last = NULL, *empty = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!opts)
		opts = &defaults;
	rc = check_options(opts, err);
	if (rc < 0)
		return rc;
	if (!given) {
		rc = cb_params_new(&empty, err);
		if (rc < 0)
			return rc;
		given = empty;
	}
	if (opts->next) {
		rc = cb__repo_last_instance_params(&last, conn, job->name, err);
		if (rc == 0)
			rc = job->incrementer(job->incrementer_ctx, &next, last, given, err);
		cb_params_free(last);
		if (rc == 0 && !next)
			rc = cb_error_set(err, CB_ECALLBACK,
					  "job '%s': incrementer returned no parameters",
					  job->name);
		if (rc < 0)
			goto done;
		given = next;
	}
	rc = run_execution(out, conn, job, given, 0, opts, err);
done:
	cb_params_free(next);
	cb_params_free(empty);
	return rc;
}

int cb_job_restart(cb_job_result *out, PGconn *conn, const cb_job *job, long long job_execution_id,
		   const cb_launch_options *opts, cb_error *err)
{
	static const cb_launch_options defaults = CB_LAUNCH_OPTIONS_INIT;
	char name[128];
	cb_params *params = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!opts)
		opts = &defaults;
	rc = check_options(opts, err);
	if (rc < 0)
		return rc;
	rc = cb_repo_execution_job_name(name, sizeof(name), conn, job_execution_id, err);
	if (rc < 0)
		return rc;
	if (strcmp(name, job->name) != 0)
		return cb_error_set(err, CB_EINVAL,
				    "job execution %lld belongs to job '%s', not '%s'",
				    job_execution_id, name, job->name);
	rc = cb__repo_load_params(&params, conn, job_execution_id, err);
	if (rc < 0)
		return rc;
	rc = run_execution(out, conn, job, params, job_execution_id, opts, err);
	cb_params_free(params);
	return rc;
}
