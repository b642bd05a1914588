/*
 * The job's flow: which step runs next, and the job's final status.
 *
 * Without transitions steps run in order and a step that does not complete
 * ends the job with its status. With transitions, a step's exit status (set
 * by the step or a listener, else its status) picks the next step or an end.
 * On restart the flow is walked from the start: a step that completed in an
 * earlier execution of the instance is not run again (unless it allows it)
 * but its recorded exit status still drives the transitions.
 */
#include "engine.h"
#include "clock.h"
#include "pgkit.h"
#include "repo.h"
#include "step_context.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most step visits in one execution: a flow that loops without end is a bug. */
#define MAX_VISITS 100000

typedef struct flow_end {
	cb_status status;
	char message[CB_ERROR_MESSAGE_MAX];
} flow_end;

static long find_step(const cb_job *job, const char *name)
{
	for (size_t i = 0; i < job->nsteps; i++)
		if (strcmp(job->steps[i].name, name) == 0)
			return (long)i;
	return -1;
}

/* More specific patterns first: fewer wildcards, then longer. */
static int specificity(const char *p)
{
	int wild = 0, len = 0;

	for (; *p; p++, len++)
		wild += *p == '*' || *p == '?';
	return (wild ? 0 : 1000000) + len * 100 - wild;
}

/*
 * The next step index, or -1 with @p end filled. @p step_status is the
 * step's own status (COMPLETED, FAILED...), @p exit_status what it said.
 */
static long next_step(const cb_job *job, long idx, cb_status step_status, const char *exit_status,
		      const char *step_message, flow_end *end)
{
	const char *from = job->steps[idx].name;
	const struct cb__transition *best = NULL;
	int any = 0;

	for (size_t i = 0; i < job->ntransitions; i++) {
		const struct cb__transition *t = &job->transitions[i];

		if (strcmp(t->from, from) != 0)
			continue;
		any = 1;
		if (cb__pattern_match(t->pattern, exit_status) &&
		    (!best || specificity(t->pattern) > specificity(best->pattern)))
			best = t;
	}
	if (!any) {
		if (step_status == CB_STATUS_COMPLETED) {
			if ((size_t)idx + 1 < job->nsteps)
				return idx + 1;
			end->status = CB_STATUS_COMPLETED;
			return -1;
		}
		end->status = step_status;
		snprintf(end->message, sizeof(end->message), "%s", step_message);
		return -1;
	}
	if (!best) {
		end->status = CB_STATUS_FAILED;
		snprintf(end->message, sizeof(end->message),
			 "step '%s' ended with exit status %s, which no transition handles%s%s",
			 from, exit_status, step_message[0] ? ": " : "", step_message);
		return -1;
	}
	if (strcmp(best->to, CB_FLOW_END) == 0) {
		end->status = CB_STATUS_COMPLETED;
		return -1;
	}
	if (strcmp(best->to, CB_FLOW_FAIL) == 0 || strcmp(best->to, CB_FLOW_STOP) == 0) {
		end->status = best->to[1] == 'f' ? CB_STATUS_FAILED : CB_STATUS_STOPPED;
		snprintf(end->message, sizeof(end->message),
			 "flow: step '%s' exit status %s -> %s%s%s", from, exit_status, best->to,
			 step_message[0] ? ": " : "", step_message);
		return -1;
	}
	return find_step(job, best->to);
}

/*
 * One visit of a step, in its phases: history (passed over when it completed
 * earlier, refused at its start limit), create (its step execution, resuming
 * the last committed context), run (listeners around the step's kind),
 * outcome (status, exit status, message) and record (its end and the job's
 * context in the repository). What the phases hand on lives here.
 */
struct step_visit {
	/* given */
	cb__run *run;
	const cb_step_def *def;
	cb_error *err;
	/* what the visit says: the step's status, exit status and message */
	cb_status *status;
	char *exit_status;
	size_t es_size;
	char *message;
	size_t msg_size;
	/* history, create */
	cb__step_history hist;
	json_t *context; /* owned until the step has run */
	long long step_id;
	json_t *context_at_start;   /* a partitioned step's, while its partitions are made */
	int landed;                 /* what a try lost with its session had committed was found */
	cb_error partition_failure; /* the partitioner's error, when partition_failed */
	int partition_failed;
	/* run */
	cb_step_context sc;
	cb__step_outcome oc;
};

/* Resume callback for work that leaves nothing to look for: try it again. */
static int nothing_to_find(void *v, cb_error *err)
{
	(void)v, (void)err;
	return 0;
}

/*
 * @p op, on the run's session. A session lost under it (a switchover, a
 * restart) is ridden through as a chunk's is (cb__run_ride_through: reconnect
 * with backoff within the outage budget, prove the lock still the run's),
 * then @p landed (NULL: nothing to look for) looks for what the lost try
 * committed before its answer was lost, setting v->landed; what did not land
 * is done again. @return @p op's, CB_ECANCELED for a stop asked meanwhile,
 * or the ride's error (CB_EFENCED; CB_EDB past the budget, the run then
 * marked database_lost).
 */
static int through_outages(struct step_visit *v, const char *where, int (*op)(struct step_visit *v),
			   int (*landed)(void *v, cb_error *err))
{
	cb__run *run = v->run;
	int rc;

	for (;;) {
		rc = op(v);
		if (rc == 0 || !cb__pg_lost(v->err, run->conn))
			return rc;
		v->landed = 0;
		rc = cb__run_ride_through(run, run->conn, v->def->name, where,
					  landed ? landed : nothing_to_find, v, v->err);
		if (rc > 0)
			return cb_error_set(v->err, CB_ECANCELED, "stopped");
		if (rc < 0 || v->landed)
			return rc;
	}
}

static int read_history(struct step_visit *v)
{
	return cb__repo_step_history(&v->hist, v->run->conn, v->run->job_instance_id, v->def->name,
				     v->err);
}

static int create_step(struct step_visit *v)
{
	return cb__repo_step_create(&v->step_id, v->run->conn, v->run->job_execution_id,
				    v->def->name, v->context, v->err);
}

/* The step execution the lost session created, if its answer was what was
 * lost: STARTED, not ended, of this job execution (a partitioned step's
 * manager is created with its partitions in one transaction). */
static int step_created(void *vv, cb_error *err)
{
	struct step_visit *v = vv;
	int rc = cb__repo_step_started_of(&v->step_id, v->run->conn, v->run->job_execution_id,
					  v->def->name, err);

	v->landed = rc == 0 && v->step_id != 0;
	return rc;
}

/* The partitions, from the context the step started with: a try that was
 * lost may have recorded its partition count in the context already. */
static int begin_partitions(struct step_visit *v)
{
	if (v->context_at_start) {
		json_t *again = json_deep_copy(v->context_at_start);

		if (!again)
			return cb_error_set(v->err, CB_ENOMEM, "out of memory");
		json_decref(v->context);
		v->context = again;
	} else if (!(v->context_at_start = json_deep_copy(v->context))) {
		return cb_error_set(v->err, CB_ENOMEM, "out of memory");
	}
	return cb__partition_begin(&v->step_id, v->run, v->def, v->context, v->err);
}

/* History: a step that completed in an earlier execution of this instance is
 * not run again (unless it allows it), and one at its start limit fails.
 * @return 1 when that decided the visit, 0 to go on, <0 an error. */
static int visit_history(struct step_visit *v)
{
	const cb_step_def *def = v->def;
	int rc;

	rc = through_outages(v, "reading the step's history", read_history, NULL);
	if (rc == CB_ECANCELED) {
		/* Stop requested while the database was away: not started. */
		cb_error_clear(v->err);
		*v->status = CB_STATUS_STOPPED;
		snprintf(v->exit_status, v->es_size, "STOPPED");
		snprintf(v->message, v->msg_size, "stopped before step '%s'", def->name);
		return 1;
	}
	if (rc < 0)
		return rc;
	if (v->hist.found && v->hist.status == CB_STATUS_COMPLETED &&
	    !def->allow_start_if_complete) {
		/* Completed in an earlier execution of this instance: not rerun. */
		json_decref(v->hist.context);
		*v->status = CB_STATUS_COMPLETED;
		snprintf(v->exit_status, v->es_size, "%s",
			 v->hist.exit_code[0] ? v->hist.exit_code : "COMPLETED");
		return 1;
	}
	if (def->start_limit && v->hist.start_count >= (long long)def->start_limit) {
		json_decref(v->hist.context);
		*v->status = CB_STATUS_FAILED;
		snprintf(v->exit_status, v->es_size, "FAILED");
		snprintf(v->message, v->msg_size,
			 "step '%s' reached its start limit (%u executions)", def->name,
			 def->start_limit);
		return 1;
	}
	return 0;
}

/* Create: the step execution (a partitioned step's with its partitions),
 * from the last committed context. A stop requested between steps ends the
 * visit here. @return 1 when that decided the visit, 0 to go on, <0 an
 * error. */
static int visit_create(struct step_visit *v)
{
	const cb_step_def *def = v->def;
	cb_error *err = v->err;
	int rc;

	/* Resume from the last committed context, unless the step completed
	 * and is being run again on purpose. */
	if (v->hist.found && v->hist.status != CB_STATUS_COMPLETED) {
		v->context = v->hist.context;
	} else {
		json_decref(v->hist.context);
		v->context = json_object();
	}
	if (!v->context)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	if (cb__step_partitioned(def)) {
		rc = through_outages(v, "creating its partitions", begin_partitions, step_created);
		json_decref(v->context_at_start);
		v->context_at_start = NULL;
		if (rc < 0 && rc != CB_ECANCELED && rc != CB_EDB && rc != CB_EFENCED) {
			/* The partitioner (or what it left) failed: the step is
			 * recorded as a failed execution of its own. */
			cb_error why = *err;

			cb_error_clear(err);
			rc = through_outages(v, "creating the step execution", create_step,
					     step_created);
			if (rc == 0) {
				v->partition_failure = why;
				v->partition_failed = 1;
			}
		}
	} else {
		rc = through_outages(v, "creating the step execution", create_step, step_created);
	}
	if (rc == CB_ECANCELED) {
		/* Stop requested between steps: this step does not start. */
		json_decref(v->context);
		cb_error_clear(err);
		*v->status = CB_STATUS_STOPPED;
		snprintf(v->exit_status, v->es_size, "STOPPED");
		snprintf(v->message, v->msg_size, "stopped before step '%s'", def->name);
		return 1;
	}
	if (rc < 0) {
		json_decref(v->context);
		return rc;
	}
	return 0;
}

/* Run: the step's kind between the before_step and after_step listeners. */
static void visit_run(struct step_visit *v)
{
	cb__run *run = v->run;
	const cb_step_def *def = v->def;
	cb_step_context *sc = &v->sc;

	memset(sc, 0, sizeof(*sc));
	sc->job_name = run->job->name;
	sc->step_name = def->name;
	sc->job_instance_id = run->job_instance_id;
	sc->job_execution_id = run->job_execution_id;
	sc->step_execution_id = v->step_id;
	sc->params = run->params;
	sc->conn = run->conn;
	sc->job_context = run->job_context;
	memset(&v->oc, 0, sizeof(v->oc));
	CB__NOTIFY(run->job, before_step, sc);
	if (v->partition_failed) {
		v->oc.status = CB_STATUS_FAILED;
		v->oc.error = v->partition_failure;
		v->oc.before_chunks = 1;
	} else if (cb__step_partitioned(def)) {
		cb__step_partitioned_run(run, def, sc, v->context, &v->oc);
	} else if (def->kind == CB_STEP_TASKLET) {
		cb__step_tasklet_run(run, def, sc, v->context, &v->oc);
	} else {
		cb__step_chunk_run(run, def, sc, v->context, &v->oc);
	}
	json_decref(v->context);
	v->context = NULL;
	CB__NOTIFY(run->job, after_step, sc, v->oc.status);
}

/* Outcome: what the step ended with, as the flow reads it. */
static void visit_outcome(struct step_visit *v)
{
	cb__step_outcome *oc = &v->oc;

	if (oc->status == CB_STATUS_FAILED) {
		if (oc->error.code == CB_EFENCED)
			v->run->fenced = 1;
		/* e.g. a writer's file exists, a reader's is missing: nothing written */
		v->run->invalid_input = oc->before_chunks && oc->error.code == CB_EINVAL;
		cb_error_prefix(&oc->error, "step '%s'", v->def->name);
		snprintf(v->message, v->msg_size, "%s", oc->error.message);
	} else if (oc->status == CB_STATUS_STOPPED) {
		snprintf(v->message, v->msg_size, "stopped during step '%s'", v->def->name);
	}
	snprintf(v->exit_status, v->es_size, "%s",
		 v->sc.exit_status[0] ? v->sc.exit_status : cb_status_name(oc->status));
	*v->status = oc->status;
}

/* The step's end (a partitioned step's partitions with it) and the job's
 * context: both writes leave the same rows when made twice. */
static int record_end(struct step_visit *v)
{
	cb__run *run = v->run;
	int rc;

	if (cb__step_partitioned(v->def) && !v->partition_failed)
		rc = cb__repo_partitions_end(run->conn, v->step_id, v->oc.status, v->exit_status,
					     v->message, v->err);
	else
		rc = cb__repo_step_finish(run->conn, v->step_id, v->oc.status, v->exit_status,
					  v->message, v->oc.rollbacks, v->err);
	if (rc == 0)
		rc = cb__repo_save_job_context(run->conn, run->job_execution_id, run->job_context,
					       v->err);
	return rc;
}

/*
 * Record: the step's end is what an outage must not lose. A session lost
 * before or while it is written is waited out within the outage budget, a
 * stop request notwithstanding, and the end written again on a new session
 * (which is recorded on the lock). Paced by the outage backoff: a session
 * that is there but refuses writes (a demoted primary) is not retried at once.
 */
static int visit_record(struct step_visit *v)
{
	cb__run *run = v->run;
	cb_error *err = v->err;
	double deadline = 0, delay = 0.2;
	int rc, tries = 0, lost = PQstatus(run->conn) == CONNECTION_BAD;

	for (;;) {
		if (lost) {
			cb_error ignored = CB_ERROR_INIT;

			if (deadline == 0)
				deadline = cb__run_outage_deadline(run);
			cb__outage_again(run->conn, deadline, &delay, &tries, NULL);
			if (cb__run_prove_lock(run, run->conn, &ignored) < 0 &&
			    cb__pg_lost(&ignored, run->conn) && cb__clock_mono() < deadline)
				continue;
		}
		rc = record_end(v);
		if (rc == 0 || !cb__pg_lost(err, run->conn) ||
		    (deadline != 0 && cb__clock_mono() >= deadline))
			break;
		cb_error_clear(err);
		lost = 1;
	}
	if (rc < 0 && v->message[0]) {
		/* The repository went away with the step: its own error first. */
		char both[CB_ERROR_MESSAGE_MAX];

		if (snprintf(both, sizeof(both), "%s; then: %s", v->message, err->message) < 0)
			both[0] = '\0';
		cb_error_clear(err);
		cb_error_set(err, rc, "%s", both);
	}
	return rc;
}

/* Run (or pass over) step @p idx. Fills its status, exit status and message. */
static int visit(cb__run *run, long idx, cb_status *status, char *exit_status, size_t es_size,
		 char *message, size_t msg_size, cb_error *err)
{
	struct step_visit v;
	int rc;

	memset(&v, 0, sizeof(v));
	v.run = run;
	v.def = &run->job->steps[idx];
	v.err = err;
	v.status = status;
	v.exit_status = exit_status;
	v.es_size = es_size;
	v.message = message;
	v.msg_size = msg_size;
	message[0] = '\0';
	if ((rc = visit_history(&v)) != 0 || (rc = visit_create(&v)) != 0)
		return rc < 0 ? rc : 0;
	visit_run(&v);
	visit_outcome(&v);
	return visit_record(&v);
}

int cb__flow_run(cb__run *run, cb_job_result *out, cb_error *err)
{
	const cb_job *job = run->job;
	flow_end end = { CB_STATUS_COMPLETED, "" };
	long idx = job->nsteps ? 0 : -1;
	int visits = 0, rc;

	while (idx >= 0) {
		cb_status status = CB_STATUS_FAILED;
		char exit_status[64], message[CB_ERROR_MESSAGE_MAX];

		if (++visits > MAX_VISITS) {
			end.status = CB_STATUS_FAILED;
			snprintf(end.message, sizeof(end.message),
				 "flow visited %d steps: a transition loop never ends", MAX_VISITS);
			break;
		}
		rc = visit(run, idx, &status, exit_status, sizeof(exit_status), message,
			   sizeof(message), err);
		if (rc < 0)
			return rc;
		if (status == CB_STATUS_STOPPED) {
			/* A stop is not a flow decision: the job stops here, restartable. */
			end.status = CB_STATUS_STOPPED;
			snprintf(end.message, sizeof(end.message), "%s", message);
			break;
		}
		idx = next_step(job, idx, status, exit_status, message, &end);
	}
	out->status = end.status;
	out->invalid_input = end.status == CB_STATUS_FAILED && run->invalid_input;
	/* Data, not text, for a schedule's recovery policy: the run failed
	 * because its database stayed away, not because of its input. */
	snprintf(out->exit_code, sizeof(out->exit_code), "%s",
		 end.status == CB_STATUS_FAILED && run->database_lost ? CB_EXIT_CODE_DATABASE_LOST :
									cb_status_name(end.status));
	snprintf(out->exit_message, sizeof(out->exit_message), "%s", end.message);
	return 0;
}
