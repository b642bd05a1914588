/* Launch and restart: from parameters to a finished job execution. */
#include "engine.h"
#include "clock.h"
#include "heartbeat.h"
#include "log.h"
#include "program.h"
#include "pgkit.h"
#include "repo.h"

#include "cbatch/lock.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* What cb__launched_last reads. */
static _Atomic long long last_execution;

long long cb__launched_last(int reset)
{
	return reset ? atomic_exchange(&last_execution, 0) : atomic_load(&last_execution);
}

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
	double renewed;    /* cb__clock_mono() of the last known extension */
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
	return cb__outage_reach(conn, lease_end(lc), delay, NULL) == 1;
}

/* Did @p rc fail for a lost session that may come back (closed, ended by
 * the server, or one that refuses writes: a demoted primary)? */
static int outage(int rc, const cb_error *err, PGconn *conn)
{
	return rc == CB_EDB && cb__pg_lost(err, conn);
}

/*
 * One execution from its parameters to its released lock, in the phases of
 * run_execution_body: validate, lock, launch, start, heartbeat, flow, fence
 * verdict, audit, finish, release. What the phases hand on to each other
 * lives here and nowhere else; each phase is a function of this struct.
 */
struct launch_run {
	/* given */
	cb_job_result *out;
	PGconn *conn;
	const cb_job *job;
	const cb_params *params;
	long long expect_restart_of;
	const cb_launch_options *opts;
	cb_error *err; /* the launch's own error: what the caller gets */
	/* validate */
	char key[CB_JOB_KEY_LEN + 1];
	char *lock_name; /* owned */
	/* lock */
	double lease;
	cb__lock_grant grant;
	char dead_why[512];
	char saved_timeout[64]; /* lock waits to restore, "" when not bounded */
	/* launch, start, heartbeat, flow */
	cb__launch l;
	cb__run run;
	cb_error runerr; /* what the run failed with, apart from the verdict's (zeroed: none) */
	cb_status started;
	struct lease_clock lc;
	double delay;    /* the reconnect backoff, shared by every wait */
	int outage_said; /* an outage in the launch was logged */
	/* fence verdict, audit */
	int lost; /* the heartbeat found the lock gone */
	char lost_why[CB_ERROR_MESSAGE_MAX];
	int audited; /* HEARTBEAT_FAILED or FENCED is recorded */
};

/* Validate: the parameters (and the job's own validator), the preflight of
 * the steps' parts, then the job key and the lock name they give. Nothing
 * is written before this passes. */
static int launch_validate(struct launch_run *lr)
{
	const cb_job *job = lr->job;
	cb_error *err = lr->err;
	int rc;

	rc = cb_job_validate_params(job, lr->params, err);
	if (rc == 0 && job->validator) {
		rc = job->validator(job->validator_ctx, lr->conn, lr->params, err);
		if (rc > 0)
			rc = 0;
		else if (rc < 0 && !err->code)
			cb_error_set(err, rc,
				     "job '%s': parameter validator returned %s without "
				     "a message",
				     job->name, cb_strcode(rc));
	}
	/* The parameters are a launch's as the job declares them
	 * (cb_job_launch), or a restart's as its execution stored them. */
	if (rc == 0)
		rc = cb_params_job_key(lr->key, lr->params, err);
	if (rc == 0)
		rc = cb_job_lock_name(&lr->lock_name, job, lr->params, err);
	/* A refusal that needs no lock is made without one: no lock audit row,
	 * no acquire counted, no holder kept out meanwhile. */
	if (rc == 0)
		rc = cb__repo_launch_precheck(lr->conn, job->name, lr->key, job->restartable,
					      lr->expect_restart_of, err);
	/* The configuration against the catalog: a wrong table, column, type
	 * or key is refused here, with no instance, execution or audit row. */
	if (rc == 0)
		rc = cb__job_preflight(lr->conn, job, lr->params, err);
	return rc;
}

/*
 * Validate, riding through an outage as a run does (a failover while a
 * scheduled child checks its configuration must not lose the instant: it
 * has recorded nothing yet, so nothing would restart it). Validation only
 * reads, so it starts again once the database is back, within the run's
 * outage budget (outage.budget, else the lease).
 */
static int launch_validate_through_outages(struct launch_run *lr)
{
	cb__run budget = { .params = lr->params, .lease_seconds = lr->lease };
	double deadline = 0;
	int rc, tries = 0;

	for (;;) {
		rc = launch_validate(lr);
		if (rc == 0 || !outage(rc, lr->err, lr->conn))
			return rc;
		if (deadline == 0)
			deadline = cb__clock_mono() + cb__run_outage_budget(&budget);
		if (cb__outage_again(lr->conn, deadline, &lr->delay, &tries, NULL) != 1)
			return rc;
		cb_error_clear(lr->err);
		free(lr->lock_name);
		lr->lock_name = NULL;
	}
}

/* Lock: take the job's lock; a takeover says why the old owner is dead. */
static int launch_lock(struct launch_run *lr)
{
	cb__lock_grant *grant = &lr->grant;
	int rc;

	rc = cb__lock_take(grant, lr->conn, lr->job, lr->lock_name, lr->lease, lr->err);
	if (rc < 0)
		return rc;
	lr->lc.renewed = cb__clock_mono();
	lr->lc.lease = lr->lease;
	if (grant->outcome == CB__LOCK_TAKEOVER)
		snprintf(lr->dead_why, sizeof(lr->dead_why), "owner %s lost: lease expired at %s",
			 grant->holder, grant->held_until);
	else if (grant->outcome == CB__LOCK_OWNER_DEAD)
		snprintf(lr->dead_why, sizeof(lr->dead_why),
			 "owner %s lost: its process on this host is gone (lease was until %s)",
			 grant->holder, grant->held_until);
	if (!grant->old_session_ended) {
		/* The replaced owner's session could not be ended (privilege): its
		 * open transaction may hold rows this run needs. Wait for them at
		 * most a lease (55P03, retryable), never for as long as it is frozen. */
		cb_error ignored = CB_ERROR_INIT;

		cb__lock_bound_waits(lr->saved_timeout, sizeof(lr->saved_timeout), lr->conn,
				     lr->lease, &ignored);
	}
	return 0;
}

/* Say (once per launch) that the database was lost @p where, with @p err. */
static void say_outage(struct launch_run *lr, const char *where, const cb_error *err)
{
	cb__run budget = { .params = lr->params, .lease_seconds = lr->lease };

	if (lr->outage_said)
		return;
	lr->outage_said = 1;
	cb__log(cb__program_name(), CB__LOG_WARN, CB__EV_REPOSITORY_LOST,
		CB__LOG_WITH(.job = lr->job->name, .code = cb_strcode(CB_EDB)),
		"%s: the database was lost while %s (%.300s); waiting for it up to the outage "
		"budget (%.0f s)",
		lr->job->name, where, err->message, cb__run_outage_budget(&budget));
}

/* The launched execution (lr->l) becomes the result and the run. */
static void launch_adopt(struct launch_run *lr)
{
	cb_job_result *out = lr->out;
	cb__run *run = &lr->run;

	out->job_instance_id = lr->l.job_instance_id;
	out->job_execution_id = lr->l.job_execution_id;
	atomic_store(&last_execution, lr->l.job_execution_id);
	out->restarted = lr->l.restart_of != 0;
	out->dead_owner = lr->l.dead_owner;
	out->fencing_token = lr->grant.fencing_token;
	snprintf(out->lock_name, sizeof(out->lock_name), "%s", lr->lock_name);

	memset(run, 0, sizeof(*run));
	run->conn = lr->conn;
	run->job = lr->job;
	run->opts = lr->opts;
	run->params = lr->params;
	run->job_instance_id = lr->l.job_instance_id;
	run->job_execution_id = lr->l.job_execution_id;
	run->started = cb__clock_mono();
	run->lock_name = lr->lock_name;
	run->fencing_token = lr->grant.fencing_token;
	run->lease_seconds = lr->lease;
}

/* Launch: the instance and a new STARTING execution (burying a dead owner's);
 * the result names them, and the run is set up. */
static int launch_execution(struct launch_run *lr)
{
	int rc;

	rc = cb__repo_launch(&lr->l, lr->conn, lr->job->name, lr->key, lr->params,
			     lr->job->restartable, cb__owner_id(), lr->expect_restart_of,
			     lr->lock_name, lr->grant.fencing_token,
			     lr->dead_why[0] ? lr->dead_why : NULL, lr->err);
	if (rc < 0) {
		cb_error ignored = CB_ERROR_INIT;

		/* Nothing ran: give the lock back at once. */
		cb__lock_release(lr->conn, lr->lock_name, cb__owner_id(), lr->grant.fencing_token,
				 0, 0, &ignored);
		return rc;
	}
	launch_adopt(lr);
	return 0;
}

/*
 * After the session was lost in the lock or launch phase (a switchover met
 * a scheduled child there: it would end with no execution, nothing to
 * restart, the instant lost), on the session reached again: what the lost
 * session committed is looked up by the backend that took the lock. An
 * execution created and not started is this launch's: it goes on with it
 * (its lock now recorded as this session's). A lock taken with nothing
 * under it is given back, and the launch tried again. @return 1 adopted,
 * 0 to try again, or an error.
 */
static int launch_recover(struct launch_run *lr, int lost_pid)
{
	cb__launch left;
	long long token;
	int rc;

	rc = cb__repo_launch_left(&left, &token, lr->conn, lr->lock_name, cb__owner_id(), lost_pid,
				  lr->err);
	if (rc < 0 || token == 0)
		return rc;
	if (left.job_execution_id) {
		lr->grant.fencing_token = token;
		lr->l = left;
		lr->l.dead_owner = left.restart_of != 0 && lr->dead_why[0];
		rc = cb__lock_record_session(lr->conn, lr->lock_name, cb__owner_id(), token,
					     lr->err);
		if (rc < 0)
			return rc;
		launch_adopt(lr);
		return 1;
	}
	return cb__lock_release(lr->conn, lr->lock_name, cb__owner_id(), token, 0, 0, lr->err);
}

/* Lock and launch, riding through an outage within the outage budget. */
static int launch_through_outages(struct launch_run *lr)
{
	cb__run budget = { .params = lr->params, .lease_seconds = lr->lease };
	double deadline = 0;
	int rc, lost_pid, tries = 0;

	for (;;) {
		/* The session that takes the lock (libpq forgets it once lost). */
		lost_pid = PQbackendPID(lr->conn);
		rc = launch_lock(lr);
		if (rc == 0)
			rc = launch_execution(lr);
		if (rc == 0 || !outage(rc, lr->err, lr->conn))
			return rc;
		say_outage(lr, "taking its lock and creating its execution", lr->err);
		if (deadline == 0)
			deadline = cb__clock_mono() + cb__run_outage_budget(&budget);
		do {
			if (cb__outage_again(lr->conn, deadline, &lr->delay, &tries, NULL) != 1)
				return rc;
			cb_error_clear(lr->err);
			rc = launch_recover(lr, lost_pid);
		} while (rc < 0 && outage(rc, lr->err, lr->conn));
		if (rc != 0)
			return rc == 1 ? 0 : rc;
		memset(&lr->grant, 0, sizeof(lr->grant));
		lr->dead_why[0] = '\0';
	}
}

/* Start: STARTING -> STARTED, and the job's context. A stop that arrived
 * while it was starting ends it here. An outage is ridden through within
 * the outage budget: once the lock is proven still ours (and recorded as the
 * new session's), the start is made again; one that had committed before
 * the session was lost (STARTED: only this lock's owner starts it) is
 * this run's own. */
static int launch_start(struct launch_run *lr)
{
	double deadline = 0;
	int rc, again = 0, tries = 0;

	for (;;) {
		rc = cb__repo_job_started(&lr->started, lr->conn, lr->l.job_execution_id,
					  &lr->runerr);
		if (rc == CB_EFENCED && again && lr->started == CB_STATUS_STARTED) {
			cb_error_clear(&lr->runerr);
			rc = 0;
		}
		if (rc == 0 && lr->started == CB_STATUS_STOPPING) {
			/* A stop arrived between the launch and the start: honour it
			 * without running a step; the instance stays restartable. */
			result_set(lr->out, CB_STATUS_STOPPED, "STOPPED",
				   "stopped before it started: a stop was requested while it "
				   "was starting");
			return 0;
		}
		if (rc == 0)
			rc = cb__repo_job_context(&lr->run.job_context, lr->conn,
						  lr->l.job_execution_id, &lr->runerr);
		if (rc == 0 || !outage(rc, &lr->runerr, lr->conn))
			return rc;
		say_outage(lr, "starting its execution", &lr->runerr);
		if (deadline == 0)
			deadline = cb__run_outage_deadline(&lr->run);
		do {
			if (cb__outage_again(lr->conn, deadline, &lr->delay, &tries, NULL) != 1) {
				lr->run.database_lost = 1; /* past the budget: not its fault */
				return rc;
			}
			cb_error_clear(&lr->runerr);
			rc = cb__run_prove_lock(&lr->run, lr->conn, &lr->runerr);
		} while (rc < 0 && outage(rc, &lr->runerr, lr->conn));
		if (rc < 0)
			return rc;
		json_decref(lr->run.job_context);
		lr->run.job_context = NULL;
		again = 1;
	}
}

/* Heartbeat: the lease thread, for a started execution. Its connection is
 * opened here: a server that refuses it for now (a switchover) is waited
 * for within the outage budget, and past it the run ends DATABASE_LOST (a
 * database loss, which a schedule's recovery restarts), not as its fault. */
static int launch_heartbeat(struct launch_run *lr, int rc)
{
	double deadline = 0;

	while (rc == 0 && lr->started == CB_STATUS_STARTED &&
	       (rc = cb__heartbeat_start(&lr->run.heartbeat, lr->conn, lr->lock_name,
					 cb__owner_id(), lr->grant.fencing_token, lr->lease,
					 cb__run_outage_budget(&lr->run), lr->l.job_execution_id,
					 &lr->runerr)) < 0 &&
	       cb__pg_lost(&lr->runerr, NULL)) {
		say_outage(lr, "opening its heartbeat connection", &lr->runerr);
		if (deadline == 0)
			deadline = cb__run_outage_deadline(&lr->run);
		if (cb__run_quitting(&lr->run))
			break;
		if (cb__clock_mono() >= deadline) {
			lr->run.database_lost = 1;
			break;
		}
		cb__outage_pause(&lr->run, deadline, &lr->delay);
		cb_error_clear(&lr->runerr);
		rc = 0;
	}
	lr->lc.hb = lr->run.heartbeat;
	return rc;
}

/* Flow: the steps. A repository that failed mid-run (here or in an earlier
 * phase) makes the outcome FAILED, and the repository is waited for so that
 * the verdict can be written. */
static void launch_flow(struct launch_run *lr, int rc)
{
	if (rc == 0 && lr->started == CB_STATUS_STARTED) {
		CB__NOTIFY(lr->job, before_job, lr->job->name, lr->l.job_execution_id);
		rc = cb__flow_run(&lr->run, lr->out, &lr->runerr);
	}
	json_decref(lr->run.job_context);
	if (rc < 0) {
		/* The repository itself failed mid-run: record what we can. */
		result_set(lr->out, CB_STATUS_FAILED,
			   lr->run.database_lost ? CB_EXIT_CODE_DATABASE_LOST : "FAILED",
			   lr->runerr.message);
		reach_repository(lr->conn, &lr->lc, &lr->delay);
	}
}

/* Fence verdict: stop the heartbeat, and decide whether this run lost its
 * lock (the heartbeat saw it, a chunk was refused by the fence, or the lock
 * no longer carries our token). */
static void launch_fence_verdict(struct launch_run *lr)
{
	cb_job_result *out = lr->out;
	cb_error ignored = CB_ERROR_INIT;

	lr->lost = cb__heartbeat_lost(lr->run.heartbeat, lr->lost_why, sizeof(lr->lost_why));
	lease_end(&lr->lc);
	lr->lc.hb = NULL;
	cb__heartbeat_stop(lr->run.heartbeat);
	if (out->status == CB_STATUS_FAILED && !lr->run.fenced) {
		/* A takeover ends the old owner's session: its chunk then fails
		 * on the connection, not on the fence. Say what happened. */
		int held = 1;

		reach_repository(lr->conn, &lr->lc, &lr->delay);
		if (cb__lock_held(&held, lr->conn, lr->lock_name, cb__owner_id(),
				  lr->grant.fencing_token, &ignored) == 0 &&
		    !held) {
			char msg[CB_ERROR_MESSAGE_MAX];

			if (snprintf(msg, sizeof(msg),
				     "fenced off: lock '%s' no longer carries fencing token "
				     "%lld (taken over or released); %s",
				     lr->lock_name, lr->grant.fencing_token, out->exit_message) < 0)
				msg[0] = '\0';
			result_set(out, CB_STATUS_FAILED, "FAILED", msg);
			lr->run.fenced = !lr->lost;
		}
	}
}

/* Audit: a lost lock is recorded as such. Both when both: a chunk refused by
 * the fence counts as fenced even if the heartbeat had noticed the loss
 * first. */
static void launch_audit(struct launch_run *lr)
{
	cb_error ignored = CB_ERROR_INIT;

	if (lr->lost)
		cb__lock_audit(lr->conn, lr->lock_name, cb__owner_id(), "HEARTBEAT_FAILED",
			       lr->grant.fencing_token, lr->l.job_execution_id, lr->lost_why,
			       &ignored);
	if (lr->run.fenced)
		cb__lock_audit(lr->conn, lr->lock_name, cb__owner_id(), "FENCED",
			       lr->grant.fencing_token, lr->l.job_execution_id,
			       lr->out->exit_message, &ignored);
	lr->audited = lr->lost || lr->run.fenced;
}

/* The launch's error after a failed verdict says what happened first: the
 * run's own failure, and an outage that leaves the execution to its lease. */
static int launch_explain(struct launch_run *lr, int rc)
{
	cb_error *err = lr->err;

	if (rc < 0 && lr->runerr.code) {
		/* What the run failed with first: it may be long (a step's own
		 * error and a failed reconnect), so not cut at a prefix's length. */
		char both[CB_ERROR_MESSAGE_MAX];

		if (snprintf(both, sizeof(both), "%s; then: %s", lr->runerr.message, err->message) <
		    0)
			both[0] = '\0';
		cb_error_clear(err);
		cb_error_set(err, rc, "%s", both);
	}
	if (outage(rc, err, lr->conn)) {
		/* First, so that the long errors of libpq after it cannot cut it. */
		char until[64], msg[CB_ERROR_MESSAGE_MAX];
		time_t t =
			(time_t)(cb__clock_wall() + lease_end(&lr->lc) - cb__clock_mono() + 0.999);
		struct tm tm;

		if (!gmtime_r(&t, &tm) ||
		    !strftime(until, sizeof(until), "%Y-%m-%dT%H:%M:%SZ", &tm))
			snprintf(until, sizeof(until), "the end of its lease");
		if (snprintf(msg, sizeof(msg),
			     "the repository stayed unreachable for the rest of the lease: "
			     "execution %lld is left STARTED and is recognised as dead when its "
			     "lease ends, at %s (a restart or `abandon` then ends it); %s",
			     lr->l.job_execution_id, until, err->message) < 0)
			msg[0] = '\0';
		cb_error_clear(err);
		cb_error_set(err, rc, "%s", msg);
	}
	return rc;
}

/* Finish: write the verdict (the execution's end), which an outage must not
 * lose; a takeover since makes this process's outcome FAILED. */
static int launch_finish(struct launch_run *lr)
{
	cb_job_result *out = lr->out;
	cb_error *err = lr->err;
	double deadline = 0;
	int rc, tries = 0;

	/* The verdict is what an outage must not lose: retried until the lease
	 * ends (from when the outage began: a heartbeat still running extends
	 * the lease meanwhile). Stopped without a stop request (whose origin stays): by this
	 * process's own SIGTERM/SIGINT, or by the engine. */
	for (;;) {
		rc = cb__repo_job_finish(lr->conn, lr->l.job_execution_id, out->status,
					 out->exit_code, out->exit_message,
					 cb__stop_signalled() ? "SIGNAL" : "ENGINE", err);
		if (!outage(rc, err, lr->conn))
			break;
		if (deadline == 0)
			deadline = lease_end(&lr->lc);
		if (cb__outage_again(lr->conn, deadline, &lr->delay, &tries, NULL) != 1)
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
		if (!lr->audited) {
			/* A zombie woken after the takeover may find nothing left to
			 * write before its heartbeat notices: it lost its lock all the
			 * same, and the audit must say so. */
			cb_error ignored = CB_ERROR_INIT;

			cb__lock_audit(lr->conn, lr->lock_name, cb__owner_id(), "FENCED",
				       lr->grant.fencing_token, lr->l.job_execution_id, msg,
				       &ignored);
		}
	}
	return launch_explain(lr, rc);
}

/* Release: give the lock back. Only releases if the lock is still ours
 * (owner and token); an outage is waited out as for the verdict, so that the
 * next run need not wait for the lease. */
static void launch_release(struct launch_run *lr)
{
	cb_error ignored = CB_ERROR_INIT;
	double deadline = lease_end(&lr->lc);
	int tries = 0;

	while (outage(cb__lock_release(lr->conn, lr->lock_name, cb__owner_id(),
				       lr->grant.fencing_token, lr->job->lock_at_least_seconds,
				       lr->l.job_execution_id, &ignored),
		      &ignored, lr->conn) &&
	       cb__outage_again(lr->conn, deadline, &lr->delay, &tries, NULL) == 1)
		cb_error_clear(&ignored);
}

static int run_execution_body(cb_job_result *out, PGconn *conn, const cb_job *job,
			      const cb_params *params, long long expect_restart_of,
			      const cb_launch_options *opts, cb_error *err)
{
	struct launch_run lr;
	int rc;

	memset(&lr, 0, sizeof(lr));
	lr.out = out;
	lr.conn = conn;
	lr.job = job;
	lr.params = params;
	lr.expect_restart_of = expect_restart_of;
	lr.opts = opts;
	lr.err = err;
	lr.lease = opts->lease_seconds > 0 ? opts->lease_seconds : job->lease_seconds;
	lr.started = CB_STATUS_UNKNOWN;
	lr.delay = 0.2;

	rc = launch_validate_through_outages(&lr);
	if (rc == 0 && (rc = launch_through_outages(&lr)) == 0) {
		rc = launch_start(&lr);
		rc = launch_heartbeat(&lr, rc);
		launch_flow(&lr, rc);
		launch_fence_verdict(&lr);
		launch_audit(&lr);
		if (lr.started != CB_STATUS_STOPPING) /* after_job pairs with before_job */
			CB__NOTIFY(job, after_job, job->name, lr.l.job_execution_id, out->status,
				   out->exit_message);
		rc = launch_finish(&lr);
		launch_release(&lr);
	}
	if (lr.saved_timeout[0]) {
		cb_error ignored = CB_ERROR_INIT;

		cb__lock_restore_waits(conn, lr.saved_timeout, &ignored);
	}
	free(lr.lock_name);
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
	cb_params *next = NULL, *last = NULL, *empty = NULL, *resolved = NULL;
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
	/* What the run keys, locks and stores: the parameters as the job
	 * declares them (a declared non-identifying one is so however given). */
	rc = cb_job_params_resolve(&resolved, job, given, err);
	if (rc == 0)
		rc = run_execution(out, conn, job, resolved, 0, opts, err);
done:
	cb_params_free(resolved);
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
