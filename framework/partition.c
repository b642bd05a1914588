/*
 * The manager of a partitioned step: split the input once per instance,
 * create the partitions with the manager's step execution, run some of them
 * on threads of this process, and wait for all of them, wherever they run.
 * The repository is the only coordinator: the manager learns what happens
 * by polling its partitions' rows when a NOTIFY arrives (or every second, for
 * the progress line), never from the workers directly.
 */
#include "engine.h"
#include "clock.h"
#include "log.h"
#include "program.h"
#include "repo.h"
#include "reserved.h"
#include "step_context.h"
#include "worker.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Partitions when neither the definition nor `partition.count` says. */
#define DEFAULT_PARTITIONS 4

int cb__step_partitioned(const cb_step_def *def)
{
	return def->version >= 2 && def->partition != NULL;
}

static int param_count(long long *out, const cb__run *run, const char *name, long long dflt,
		       cb_error *err)
{
	return cb__reserved_long(out, run->params, name, dflt, err);
}

/* The partitioner's objects, checked, as {"index", "context": {"partition"}}. */
static int make_partitions(json_t **out, cb__run *run, const cb_step_def *def, cb_error *err)
{
	cb_step_context sc;
	long long count = 0;
	json_t *made, *arr;
	size_t i, n;
	int rc;

	*out = NULL;
	rc = param_count(&count, run, "partition.count",
			 def->partitions ? (long long)def->partitions : DEFAULT_PARTITIONS, err);
	if (rc < 0)
		return rc;
	memset(&sc, 0, sizeof(sc));
	sc.job_name = run->job->name;
	sc.step_name = def->name;
	sc.job_instance_id = run->job_instance_id;
	sc.job_execution_id = run->job_execution_id;
	sc.params = run->params;
	sc.conn = run->conn;
	sc.job_context = run->job_context;
	made = json_array();
	if (!made)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	rc = def->partition(def->user, &sc, (size_t)count, made, err);
	if (rc < 0) {
		json_decref(made);
		if (!err->code)
			cb_error_set(err, rc, "partitioner returned %s without a message",
				     cb_strcode(rc));
		return cb_error_prefix(err, "partitioner");
	}
	n = json_array_size(made);
	if (n == 0 || n > (size_t)count) {
		json_decref(made);
		return cb_error_set(err, CB_EINVAL,
				    "partitioner made %zu partitions (1..%lld allowed)", n, count);
	}
	arr = json_array();
	for (i = 0; arr && i < n; i++) {
		json_t *p = json_array_get(made, i), *item;

		if (!json_is_object(p)) {
			json_decref(arr);
			json_decref(made);
			return cb_error_set(err, CB_EINVAL,
					    "partitioner: partition %zu is not a JSON object", i);
		}
		p = json_deep_copy(p);
		if (!p || json_object_set_new(p, "index", json_integer((json_int_t)i)) < 0 ||
		    json_object_set_new(p, "count", json_integer((json_int_t)n)) < 0) {
			json_decref(p);
			break;
		}
		item = json_pack("{sI s{so}}", "index", (json_int_t)i, "context", "partition", p);
		if (!item || json_array_append_new(arr, item) < 0)
			break;
	}
	json_decref(made);
	if (!arr || i < n) {
		json_decref(arr);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	*out = arr;
	return 0;
}

int cb__partition_begin(long long *manager_id, cb__run *run, const cb_step_def *def,
			json_t *context, cb_error *err)
{
	json_t *earlier = json_object_get(context, "partitions"), *arr = NULL;
	long long total = 0;
	int rc;

	*manager_id = 0;
	/* Earlier partitions of this step whose lock rows remain are superseded
	 * now: a frozen claimant's session ends before the new partitions run
	 * into the rows it holds. */
	rc = cb__repo_partitions_supersede(run->conn, run->job_instance_id, def->name, err);
	if (rc < 0)
		return rc;
	if (json_is_integer(earlier)) {
		/* A restart: the partitions are the ones recorded, not new ones (the
		 * input may have changed since; a partition keeps its range). */
		rc = cb__repo_partitions_unfinished(&arr, &total, run->conn, run->job_instance_id,
						    def->name, json_integer_value(earlier), err);
	} else {
		rc = make_partitions(&arr, run, def, err);
		if (rc == 0) {
			total = (long long)json_array_size(arr);
			if (json_object_set_new(context, "partitions",
						json_integer((json_int_t)total)) < 0)
				rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		}
	}
	if (rc == 0) {
		/* Only workers whose program defines the step as this one does
		 * may claim its partitions (a rolling upgrade runs both). */
		char fp[32];

		rc = cb__step_fingerprint(fp, sizeof(fp), run->job, def);
		if (rc < 0)
			cb_error_set(err, rc, "out of memory");
		else
			rc = cb__repo_partitions_create(manager_id, run->conn,
							run->job_execution_id, def->name, context,
							arr, fp, err);
	}
	json_decref(arr);
	return rc;
}

/* ---- the manager ---- */

static long default_threads(long long partitions)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);

	if (cpus < 1)
		cpus = 1;
	return partitions < cpus ? (long)partitions : cpus;
}

static void report(const cb__run *run, const cb_step_def *def, const cb__partition_poll *p)
{
	const cb_launch_options *o = run->opts;

	if (o->progress)
		o->progress(o->progress_ctx, def->name, p->read, p->written,
			    cb__clock_mono() - run->started);
}

/* Seconds without a running partition before the manager says that its
 * partitions wait for a worker, and between two such lines. */
#define WAIT_NOTICE_FIRST 5.0
#define WAIT_NOTICE_AGAIN 60.0

/*
 * Partitions wait and nothing runs them (partition.threads 0 and no worker,
 * or only workers of other definitions): say so, with the command that
 * starts a worker, instead of waiting silently.
 */
static void notice_waiting(const cb__run *run, const cb_step_def *def, const cb__partition_poll *p,
			   double idle)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	if (n <= 0)
		snprintf(exe, sizeof(exe), "<this program>");
	else
		exe[n] = '\0';
	cb__log(cb__program_name(), CB__LOG_WARN, CB__EV_PARTITION_WAITING,
		CB__LOG_WITH(.job = run->job->name, .execution = run->job_execution_id,
			     .step = def->name),
		"%s execution %lld step '%s': %lld of %lld partitions wait and none has run for "
		"%.0f s; start a worker (same --db or CBATCH_DB as this run): %s worker --job %s",
		run->job->name, run->job_execution_id, def->name, p->open, p->total, idle, exe,
		run->job->name);
}

/* Poll; after a lost connection, reconnect within the outage budget, prove
 * the job's lock is still ours (and record the new session on it), listen
 * again, and poll again. */
static int poll_partitions(cb__partition_poll *p, cb__run *run, long long manager_id, cb_error *err)
{
	double until = cb__clock_mono() + cb__run_outage_budget(run), delay = 0.2;

	for (;;) {
		int rc = cb__repo_partitions_poll(p, run->conn, manager_id, err);

		if (rc == 0 || !cb__pg_lost(err, run->conn) || cb__clock_mono() > until)
			return rc;
		cb_error_clear(err);
		cb__outage_pause(run, until, &delay);
		PQreset(run->conn);
		if (PQstatus(run->conn) == CONNECTION_OK) {
			cb_error ignored = CB_ERROR_INIT;

			if (cb__run_prove_lock(run, run->conn, err) == CB_EFENCED)
				return CB_EFENCED;
			cb_error_clear(err);
			cb__work_listen(run->conn, &ignored);
		}
	}
}

int cb__step_partitioned_run(cb__run *run, const cb_step_def *def, cb_step_context *sc,
			     json_t *context, cb__step_outcome *out)
{
	cb_error *err = &out->error;
	cb__partition_poll p;
	cb__worker_pool *pool = NULL;
	cb__work work;
	long long threads = 0;
	char why[CB_ERROR_MESSAGE_MAX];
	int stop_asked = 0, rc;
	double last_report = 0, idle_since = cb__clock_mono(), last_notice = 0;
	long long ended_seen = 0;

	(void)context;
	memset(&p, 0, sizeof(p));
	out->status = CB_STATUS_FAILED;
	out->before_chunks = 1;
	rc = cb__work_listen(run->conn, err);
	if (rc == 0)
		rc = poll_partitions(&p, run, sc->step_execution_id, err);
	if (rc == 0)
		rc = param_count(&threads, run, "partition.threads", default_threads(p.total), err);
	if (rc < 0)
		return rc;
	if (threads > p.total)
		threads = p.total;
	out->before_chunks = 0;
	memset(&work, 0, sizeof(work));
	work.job = run->job;
	work.job_execution_id = run->job_execution_id;
	work.lease = run->lease_seconds;
	work.local = 1;
	if (threads > 0)
		rc = cb__workers_start(&pool, run->conn, (unsigned int)threads, &work, "partition",
				       err);
	while (rc == 0) {
		if (p.completed + p.failed + p.stopped >= p.total)
			break;
		if (cb__clock_mono() - last_report >= 1.0) {
			report(run, def, &p);
			last_report = cb__clock_mono();
		}
		if (p.running > 0 || p.open == 0 ||
		    p.completed + p.failed + p.stopped != ended_seen) {
			idle_since = cb__clock_mono();
			ended_seen = p.completed + p.failed + p.stopped;
		} else if (cb__clock_mono() - idle_since >= WAIT_NOTICE_FIRST &&
			   (last_notice == 0 ||
			    cb__clock_mono() - last_notice >= WAIT_NOTICE_AGAIN)) {
			notice_waiting(run, def, &p, cb__clock_mono() - idle_since);
			last_notice = cb__clock_mono();
		}
		if (cb__run_check_lock(run, err) < 0) {
			rc = err->code;
			break;
		}
		if (p.running == 0 &&
		    cb__workers_failing(pool, run->lease_seconds, why, sizeof(why))) {
			/* Its own threads cannot claim (and nobody else runs a
			 * partition): waiting would hang, failing is restartable. */
			rc = cb_error_set(err, CB_EDB,
					  "the partition threads could not claim a partition "
					  "for %.0f s: %s",
					  run->lease_seconds, why);
			break;
		}
		if (cb__stop_signalled() && !stop_asked) {
			/* A signal here stops the whole execution, on every host: the
			 * workers see STOPPING at their next checkpoint. */
			cb_error ignored = CB_ERROR_INIT;

			cb_status now;

			stop_asked = cb__repo_stop_as(&now, run->conn, run->job_execution_id,
						      "SIGNAL", &ignored) == 0;
		}
		cb__work_wait(run->conn, 1.0);
		rc = poll_partitions(&p, run, sc->step_execution_id, err);
	}
	if (pool) {
		/* Idle threads sleep on LISTEN: a notice wakes them to leave now. */
		cb_error ignored = CB_ERROR_INIT;

		cb__workers_quit(pool);
		cb__repo_command(run->conn, "wake the partition threads",
				 "NOTIFY cbatch_partitions", 0, NULL, &ignored);
	}
	cb__workers_stop(pool, NULL);
	{
		cb_error ignored = CB_ERROR_INIT;

		cb__repo_command(run->conn, "unlisten", "UNLISTEN cbatch_partitions", 0, NULL,
				 &ignored);
	}
	if (rc < 0)
		return rc;
	report(run, def, &p);
	out->rollbacks = 0; /* the partitions' own, summed when the manager ends */
	if (p.failed > 0) {
		return cb_error_set(err, CB_ERROR, "%lld of %lld partitions failed; first: %s",
				    p.failed, p.total, p.first_failure);
	}
	out->status = p.stopped > 0 ? CB_STATUS_STOPPED : CB_STATUS_COMPLETED;
	return 0;
}
