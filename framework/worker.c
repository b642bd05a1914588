/*
 * Workers of partitioned steps: claim an open partition, run it as a chunk
 * step under its own lock (lease, heartbeat, fencing token), end it, repeat;
 * sleep on LISTEN cbatch_partitions when there is nothing to claim. The same
 * loop serves the threads of a launching process (one execution's
 * partitions) and the `worker` command (any running execution of its jobs).
 */
#include "engine.h"
#include "clock.h"
#include "heartbeat.h"
#include "log.h"
#include "repo.h"
#include "step_context.h"
#include "worker.h"

#include "cbatch/cli.h"
#include "cbatch/sys/conn.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdarg.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <xxhash.h>

static int quitting(const cb__work *w)
{
	return cb__stop_signalled() || (w->quit && atomic_load(w->quit));
}

static const cb_step_def *find_step(const cb_job *job, const char *name)
{
	for (size_t i = 0; i < job->nsteps; i++)
		if (strcmp(job->steps[i].name, name) == 0)
			return &job->steps[i];
	return NULL;
}

/*
 * The fingerprint of a partitioned step's definition: XXH3-64 (hex) of a
 * canonical text of what changes what a partition does and is visible in the
 * definition: the job and step names, that it is a partitioned chunk step,
 * its default skip and retry limits, which classifier (the default, the
 * skip-invalid one or its own) and its declared revision. Left out: the
 * chunk size, the partition count, the retry backoff and the start limit
 * (how a run is paced or split, not what a partition does; the partitions
 * exist already when workers meet them), and the callbacks' addresses,
 * which differ between builds of the same code. The reader, processor and
 * writers are made by `build` when a partition runs: a program that changes
 * them says so with the step's revision. Length-prefixed strings keep the
 * text unambiguous; a format change must change the first line.
 */
#define FINGERPRINT_TEXT                                                                           \
	"cbatch step fingerprint 1\njob %zu:%s\nstep %zu:%s\nkind %s\npartitioned %d\n"            \
	"skip_limit %u\nretry_limit %u\nclassify %s\nrevision %zu:%s\n"

int cb__step_fingerprint(char *out, size_t size, const cb_job *job, const cb_step_def *def)
{
	const char *rev = def->version >= 3 && def->revision ? def->revision : "";
	const char *classify = !def->classify                            ? "default" :
			       def->classify == cb_classify_default      ? "default" :
			       def->classify == cb_classify_skip_invalid ? "skip_invalid" :
									   "custom";
	const char *kind = def->kind == CB_STEP_CHUNK ? "chunk" : "tasklet";
	int n = snprintf(NULL, 0, FINGERPRINT_TEXT, strlen(job->name), job->name, strlen(def->name),
			 def->name, kind, def->partition != NULL, def->skip_limit, def->retry_limit,
			 classify, strlen(rev), rev);
	char *text = n >= 0 ? malloc((size_t)n + 1) : NULL;

	if (!text)
		return CB_ENOMEM;
	snprintf(text, (size_t)n + 1, FINGERPRINT_TEXT, strlen(job->name), job->name,
		 strlen(def->name), def->name, kind, def->partition != NULL, def->skip_limit,
		 def->retry_limit, classify, strlen(rev), rev);
	snprintf(out, size, "%016" PRIx64, (uint64_t)XXH3_64bits(text, (size_t)n));
	free(text);
	return 0;
}

int cb__work_runnable(char **out, const cb_job *const *jobs, size_t njobs, cb_error *err)
{
	json_t *arr = json_array();
	int rc = 0;

	*out = NULL;
	for (size_t i = 0; arr && rc == 0 && i < njobs; i++) {
		size_t found = 0;

		for (size_t k = 0; rc == 0 && k < jobs[i]->nsteps; k++) {
			const cb_step_def *def = &jobs[i]->steps[k];
			char fp[32];

			if (!cb__step_partitioned(def))
				continue;
			found++;
			if (cb__step_fingerprint(fp, sizeof(fp), jobs[i], def) < 0 ||
			    json_array_append_new(arr, json_pack("{ssssss}", "job", jobs[i]->name,
								 "step", def->name, "fingerprint",
								 fp)) < 0)
				rc = CB_ENOMEM;
		}
		/* The job without any partitioned step: `show` tells such a
		 * worker from one that lacks the job. */
		if (rc == 0 && !found &&
		    json_array_append_new(arr, json_pack("{sssnsn}", "job", jobs[i]->name, "step",
							 "fingerprint")) < 0)
			rc = CB_ENOMEM;
	}
	if (arr && rc == 0)
		*out = json_dumps(arr, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref(arr);
	if (!*out)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	return 0;
}

int cb__work_listen(PGconn *conn, cb_error *err)
{
	return cb__repo_command(conn, "listen for partitions", "LISTEN cbatch_partitions", 0, NULL,
				err);
}

void cb__work_wait(PGconn *conn, double seconds)
{
	struct pollfd pfd[2];
	PGnotify *n;
	double end = cb__clock_mono() + (seconds > 0 ? seconds : 0);

	/* A notice that came with an earlier answer is already buffered. */
	if (PQstatus(conn) == CONNECTION_OK && PQconsumeInput(conn) &&
	    (n = PQnotifies(conn)) != NULL) {
		do
			PQfreemem(n);
		while ((n = PQnotifies(conn)) != NULL);
		return;
	}
	/* Only a live connection's socket is waited on: after a failed
	 * PQreset libpq may leave a refused host's socket open, and a poll on
	 * it returns at once (a busy loop through a failover). poll() skips a
	 * negative descriptor. */
	pfd[0].fd = PQstatus(conn) == CONNECTION_OK ? PQsocket(conn) : -1;
	pfd[0].events = POLLIN;
	pfd[0].revents = 0;
	/* a stop signal wakes every sleeping thread, not only the one it hit */
	pfd[1].fd = cb__signals_wake_fd();
	pfd[1].events = POLLIN;
	pfd[1].revents = 0;
	if (pfd[0].fd < 0 && pfd[1].fd < 0) {
		cb__clock_sleep(seconds);
		return;
	}
	if (cb__clock_poll(pfd, 2, seconds) > 0 && (pfd[0].revents & POLLIN) &&
	    PQconsumeInput(conn)) {
		while ((n = PQnotifies(conn)) != NULL)
			PQfreemem(n);
		return;
	}
	if (pfd[0].revents & (POLLHUP | POLLERR | POLLNVAL | POLLIN)) {
		/* The socket woke us for no notice (closed, or an error): wait the
		 * rest of the time without it, a stop still waking us. */
		double left = end - cb__clock_mono();

		pfd[0].fd = -1;
		if (left > 0 && pfd[1].fd >= 0)
			cb__clock_poll(pfd, 2, left);
		else if (left > 0)
			cb__clock_sleep(left);
	}
}

/* Test-only: CBATCH_TEST_WORKER_PAUSE=finish stops the worker (SIGSTOP) once,
 * before it records its first partition's end, so that a test can end its
 * session at that exact point. Never set it otherwise. */
static void test_pause_before_finish(void)
{
	static atomic_int done;
	const char *e = getenv("CBATCH_TEST_WORKER_PAUSE");

	if (e && strcmp(e, "finish") == 0 && atomic_exchange(&done, 1) == 0) {
		fflush(NULL);
		raise(SIGSTOP);
	}
}

/* The fields of a line about claim @p c. */
#define CLAIM_FIELDS(w, c)                                                                         \
	CB__LOG_WITH(.job = (c)->job_name, .execution = (c)->job_execution_id,                     \
		     .step = (c)->step_name, .partition = (c)->partition_index,                    \
		     .has_partition = 1, .node = (w)->worker)

/* A line of the worker's log, "worker NAME: ..." in text. */
static void say(const cb__work *w, int level, int event, const cb__log_fields *f, const char *fmt,
		...) __attribute__((format(printf, 5, 6)));
static void say(const cb__work *w, int level, int event, const cb__log_fields *f, const char *fmt,
		...)
{
	char source[300];
	va_list ap;

	if (!w->verbose)
		return;
	snprintf(source, sizeof(source), "worker %s", w->worker);
	va_start(ap, fmt);
	cb__vlog(source, level, event, f, fmt, ap);
	va_end(ap);
}

/* Run the claimed partition @p c; its end is recorded by the caller. */
static void run_claim(PGconn *conn, const cb__work *w, const cb_job *job, const cb_step_def *def,
		      const cb__claim *c, double lease, cb__step_outcome *oc)
{
	static const cb_launch_options no_options = CB_LAUNCH_OPTIONS_INIT;
	cb_params *params = NULL;
	json_t *job_context = NULL, *context = NULL;
	long long version = 0;
	cb__run run;
	cb_step_context sc;
	cb_error *err = &oc->error;

	memset(oc, 0, sizeof(*oc));
	oc->status = CB_STATUS_FAILED;
	oc->before_chunks = 1;
	if (cb__repo_load_params(&params, conn, c->job_execution_id, err) < 0 ||
	    cb__repo_job_context(&job_context, conn, c->job_execution_id, err) < 0 ||
	    cb__repo_step_state(&version, &context, conn, c->step_execution_id, err) < 0)
		goto out;
	memset(&run, 0, sizeof(run));
	run.conn = conn;
	run.job = job;
	run.opts = &no_options;
	run.params = params;
	run.job_instance_id = c->job_instance_id;
	run.job_execution_id = c->job_execution_id;
	run.job_context = job_context;
	run.started = cb__clock_mono();
	run.lock_name = c->lock_name;
	run.fencing_token = c->fencing_token;
	run.lease_seconds = lease;
	run.quit = w->quit;
	/* The heartbeat keeps the partition's lease, not the job's: a manager
	 * that died must look dead even while its workers still run. */
	if (cb__heartbeat_start(&run.heartbeat, conn, c->lock_name, cb__owner_id(),
				c->fencing_token, lease, cb__run_outage_budget(&run), 0, err) < 0)
		goto out;
	memset(&sc, 0, sizeof(sc));
	sc.job_name = job->name;
	sc.step_name = c->step_name;
	sc.job_instance_id = c->job_instance_id;
	sc.job_execution_id = c->job_execution_id;
	sc.step_execution_id = c->step_execution_id;
	sc.params = params;
	sc.conn = conn;
	sc.job_context = job_context;
	sc.partition = json_object_get(context, "partition");
	sc.version = version;
	CB__NOTIFY(job, before_step, &sc);
	cb__step_chunk_run(&run, def, &sc, context, oc);
	CB__NOTIFY(job, after_step, &sc, oc->status);
	{
		char why[CB_ERROR_MESSAGE_MAX];

		if (oc->status != CB_STATUS_FAILED &&
		    cb__heartbeat_lost(run.heartbeat, why, sizeof(why))) {
			/* Completed while the lease lapsed: the checkpoint decided
			 * what counted; the partition is no longer ours to end. */
			oc->status = CB_STATUS_FAILED;
			cb_error_set(err, CB_EFENCED, "lost the partition lock: %s", why);
		}
	}
	cb__heartbeat_stop(run.heartbeat);
out:
	json_decref(context);
	json_decref(job_context);
	cb_params_free(params);
}

int cb__work_one(PGconn *conn, const cb__work *w, int *claimed, cb_worker_result *res,
		 cb_error *err)
{
	cb__claim c;
	cb__step_outcome oc;
	const cb_job *job;
	const cb_step_def *def;
	const char *status;
	char message[CB_ERROR_MESSAGE_MAX] = "";
	int rc, ours = 0;

	*claimed = 0;
	rc = cb__repo_partition_claim(&c, conn, cb__owner_id(), w->worker, w->lease, w->job_names,
				      w->njobs, w->job_execution_id, w->runnable, err);
	if (rc < 0 || !c.found)
		return rc;
	*claimed = 1;
	res->claimed++;
	say(w, CB__LOG_INFO, CB__EV_PARTITION_CLAIMED, CLAIM_FIELDS(w, &c),
	    "%s %s execution %lld %s%s", c.takeover ? "took over" : "claimed", c.job_name,
	    c.job_execution_id, c.step_name,
	    c.takeover ? " (its previous claimant's lease expired or its process is gone)" : "");
	job = w->job ? w->job : cb_registry_find(w->reg, c.job_name);
	def = job ? find_step(job, c.manager_name) : NULL;
	if (!def || def->kind != CB_STEP_CHUNK || !def->partition) {
		memset(&oc, 0, sizeof(oc));
		oc.status = CB_STATUS_FAILED;
		cb_error_set(&oc.error, CB_EINVAL,
			     "worker %s: this program has no partitioned step '%s' in job '%s'",
			     w->worker, c.manager_name, c.job_name);
	} else {
		run_claim(conn, w, job, def, &c, w->lease, &oc);
	}
	switch (oc.status) {
	case CB_STATUS_COMPLETED:
		status = "COMPLETED";
		break;
	case CB_STATUS_STOPPED:
		/* A stop of the job ends the partition STOPPED; a worker that is
		 * leaving (signal, its manager gave up) hands it back instead, to
		 * be resumed by the next claimant. */
		status = (quitting(w) && !w->local) ? "STARTING" : "STOPPED";
		snprintf(message, sizeof(message), "%s",
			 status[2] == 'A' ? "handed back by its worker" : "stopped");
		break;
	default:
		status = "FAILED";
		snprintf(message, sizeof(message), "%s", oc.error.message);
		break;
	}
	test_pause_before_finish();
	if (PQstatus(conn) == CONNECTION_BAD)
		PQreset(conn);
	rc = cb__repo_partition_finish(&ours, conn, &c, cb__owner_id(), status, status, message,
				       oc.rollbacks, err);
	if (rc < 0 && cb__pg_lost(err, conn)) {
		/* Its session was ended under it (a burial or a takeover ends the
		 * claimants' sessions) before libpq knew: once more on a new
		 * one, which records the end if the partition is still ours, or
		 * says whose it is now. */
		char why[300];

		cb_error_clear(err);
		PQreset(conn);
		cb__pg_message_line(why, sizeof(why), PQerrorMessage(conn));
		rc = PQstatus(conn) == CONNECTION_OK ?
			     cb__repo_partition_finish(&ours, conn, &c, cb__owner_id(), status,
						       status, message, oc.rollbacks, err) :
			     cb_error_set(err, CB_EDB, "finish partition: %s", why);
	}
	if (rc < 0) {
		/* Its end is not recorded: its lease runs out and another
		 * claimant resumes it, so it counts as lost here. */
		res->failed++;
		return rc;
	}
	if (!ours) {
		/* Taken over or ended by another process meanwhile: say which,
		 * once, in cbatch's words (not "to another worker" for a burial). */
		char fate[600];
		cb_error ignored = CB_ERROR_INIT;

		res->failed++;
		if (w->verbose) {
			if (cb__repo_partition_fate(fate, sizeof(fate), conn, &c, &ignored) < 0)
				snprintf(fate, sizeof(fate),
					 "taken over or ended by another process");
			say(w, CB__LOG_WARN, CB__EV_PARTITION_GAVE_UP, CLAIM_FIELDS(w, &c),
			    "gave up %s execution %lld %s: %s", c.job_name, c.job_execution_id,
			    c.step_name, fate);
		}
	} else if (strcmp(status, "COMPLETED") == 0) {
		res->completed++;
		say(w, CB__LOG_INFO, CB__EV_PARTITION_ENDED, CLAIM_FIELDS(w, &c),
		    "completed %s execution %lld %s", c.job_name, c.job_execution_id, c.step_name);
	} else if (strcmp(status, "STARTING") == 0) {
		res->handed_back++;
		say(w, CB__LOG_INFO, CB__EV_PARTITION_ENDED, CLAIM_FIELDS(w, &c),
		    "handed back %s execution %lld %s", c.job_name, c.job_execution_id,
		    c.step_name);
	} else {
		if (strcmp(status, "FAILED") == 0)
			res->failed++;
		else
			res->stopped++;
		say(w, CB__LOG_WARN, CB__EV_PARTITION_ENDED, CLAIM_FIELDS(w, &c),
		    "%s execution %lld %s ended %s: %s", c.job_name, c.job_execution_id,
		    c.step_name, status, message);
	}
	return 0;
}

int cb__work_loop(PGconn *conn, const cb__work *w, double exit_when_idle, cb_worker_result *res)
{
	double idle_since = cb__clock_mono(), backoff = 0.2;
	int listening = 0;

	while (!quitting(w)) {
		cb_error err = CB_ERROR_INIT;
		int claimed = 0, rc;
		double wait;

		if (!listening)
			listening = cb__work_listen(conn, &err) == 0;
		rc = listening ? cb__work_one(conn, w, &claimed, res, &err) : err.code;
		if (w->health) {
			pthread_mutex_lock(&w->health->mu);
			if (rc == 0)
				w->health->failing_since = 0;
			else if (w->health->failing_since == 0)
				w->health->failing_since = cb__clock_mono();
			if (rc < 0)
				snprintf(w->health->why, sizeof(w->health->why), "%s", err.message);
			pthread_mutex_unlock(&w->health->mu);
		}
		if (rc < 0) {
			/* Never work blind: a worker that cannot reach the database
			 * claims nothing; its partitions' leases run out. */
			say(w, CB__LOG_WARN, CB__EV_WORKER_RETRY,
			    CB__LOG_WITH(.node = w->worker, .code = cb_strcode(err.code)),
			    "%s (retrying in %.1f s)", err.message, backoff);
			cb__work_wait(conn, backoff);
			/* Connected to a server that is no longer the primary (LISTEN
			 * refused on a standby) is as lost as a closed connection. */
			if (cb__pg_lost(&err, conn)) {
				PQreset(conn);
				listening = 0;
			}
			backoff = backoff * 2 > 5 ? 5 : backoff * 2;
			continue;
		}
		backoff = 0.2;
		if (claimed) {
			idle_since = cb__clock_mono();
			continue;
		}
		if (exit_when_idle > 0 && cb__clock_mono() - idle_since >= exit_when_idle)
			break;
		/* Nothing open: wait for a notice, and look again at least once
		 * per half lease for partitions whose owner's lease ran out. */
		wait = w->lease / 2;
		if (wait > (w->local ? 0.5 : 5.0))
			wait = w->local ? 0.5 : 5.0;
		if (exit_when_idle > 0 && wait > exit_when_idle - (cb__clock_mono() - idle_since))
			wait = exit_when_idle - (cb__clock_mono() - idle_since);
		if (wait > 0)
			cb__work_wait(conn, wait);
	}
	return 0;
}

void cb__work_name(char *out, size_t size, unsigned int thread)
{
	char host[64] = "";

	if (gethostname(host, sizeof(host) - 1) != 0)
		snprintf(host, sizeof(host), "unknown");
	snprintf(out, size, "%s/%ld/%u", host, (long)getpid(), thread);
}

/* ---- a pool of worker threads, each on its own connection ---- */

struct cb__worker_pool {
	unsigned int n;
	atomic_int quit;
	char *runnable; /* of the launching process's job, when the work did not say */
	struct pool_thread {
		pthread_t thread;
		int started;
		cb__work work;
		cb__work_health health;
		PGconn *conn;
		cb_worker_result res;
	} t[];
};

static void *pool_main(void *arg)
{
	struct pool_thread *t = arg;

	cb__work_loop(t->conn, &t->work, t->work.exit_when_idle, &t->res);
	if (!t->work.local && PQstatus(t->conn) == CONNECTION_OK) {
		/* Each thread after its own last claim: the last one to leave
		 * deletes the row after every claim of the process. */
		cb_error ignored = CB_ERROR_INIT;

		cb__repo_partition_worker_gone(t->conn, cb__owner_id(), &ignored);
	}
	return NULL;
}

int cb__workers_start(cb__worker_pool **out, PGconn *like, unsigned int n, const cb__work *work,
		      const char *what, cb_error *err)
{
	cb__worker_pool *p = calloc(1, sizeof(*p) + (size_t)n * sizeof(p->t[0]));
	int rc = 0;

	*out = p;
	if (!p)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	p->n = n;
	cb__owner_id(); /* computed once, before threads share it */
	if (!work->runnable && work->job) {
		const cb_job *jobs[1] = { work->job };

		rc = cb__work_runnable(&p->runnable, jobs, 1, err);
		if (rc < 0)
			return rc;
	}
	for (unsigned int i = 0; i < n; i++) {
		struct pool_thread *t = &p->t[i];
		char app[64];

		t->work = *work;
		if (p->runnable)
			t->work.runnable = p->runnable;
		t->work.quit = &p->quit;
		pthread_mutex_init(&t->health.mu, NULL);
		t->work.health = &t->health;
		cb__work_name(t->work.worker, sizeof(t->work.worker), i);
		snprintf(app, sizeof(app), "cbatch %s %u", what, i);
		t->conn = cb_pg_connect_like(like, app);
		if (!t->conn || PQstatus(t->conn) != CONNECTION_OK) {
			rc = cb_pg_error(err, t->conn, NULL, "connecting a thread");
			cb_error_prefix(err, "%s thread %u", what, i);
			break;
		}
		if (pthread_create(&t->thread, NULL, pool_main, t) != 0) {
			rc = cb_error_set(err, CB_ENOMEM, "cannot start %s thread %u", what, i);
			break;
		}
		t->started = 1;
	}
	if (rc < 0)
		atomic_store(&p->quit, 1); /* the threads already running leave at once */
	return rc;
}

void cb__workers_quit(cb__worker_pool *p)
{
	if (p)
		atomic_store(&p->quit, 1);
}

void cb__workers_stop(cb__worker_pool *p, cb_worker_result *sum)
{
	if (!p)
		return;
	atomic_store(&p->quit, 1);
	for (unsigned int i = 0; i < p->n; i++) {
		struct pool_thread *t = &p->t[i];

		if (t->started)
			pthread_join(t->thread, NULL);
		if (t->conn)
			PQfinish(t->conn);
		pthread_mutex_destroy(&t->health.mu);
		if (sum) {
			sum->claimed += t->res.claimed;
			sum->completed += t->res.completed;
			sum->failed += t->res.failed;
			sum->stopped += t->res.stopped;
			sum->handed_back += t->res.handed_back;
		}
	}
	free(p->runnable);
	free(p);
}

int cb__workers_failing(cb__worker_pool *p, double seconds, char *why, size_t size)
{
	int failing = p && p->n > 0;

	for (unsigned int i = 0; failing && i < p->n; i++) {
		cb__work_health *h = &p->t[i].health;

		pthread_mutex_lock(&h->mu);
		failing = h->failing_since > 0 && cb__clock_mono() - h->failing_since >= seconds;
		if (failing)
			snprintf(why, size, "%s", h->why);
		pthread_mutex_unlock(&h->mu);
	}
	return failing;
}

void cb__workers_wait(cb__worker_pool *p, cb_worker_result *sum)
{
	/* The threads leave by themselves (idle, or a signal). */
	for (unsigned int i = 0; p && i < p->n; i++)
		if (p->t[i].started) {
			pthread_join(p->t[i].thread, NULL);
			p->t[i].started = 0;
		}
	cb__workers_stop(p, sum);
}

int cb_worker_run(cb_worker_result *out, const cb_registry *reg, PGconn *like,
		  const cb_worker_options *opts, cb_error *err)
{
	const char **names = NULL;
	const cb_job **jobs = NULL;
	char *runnable = NULL;
	size_t njobs;
	unsigned int threads;
	cb__worker_pool *pool = NULL;
	cb__work work;
	double lease = 0;
	int rc = 0;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !reg || !like || !opts)
		return cb_error_set(err, CB_EINVAL, "worker: NULL argument");
	if (cb__version_check(opts->version, CB_WORKER_OPTIONS_VERSION, "worker options", err) < 0)
		return err->code;
	threads = opts->threads ? opts->threads : 1;
	if (threads > 256)
		return cb_error_set(err, CB_EINVAL, "worker: %u threads (at most 256)", threads);
	njobs = opts->job_names ? opts->njobs : cb_registry_count(reg);
	if (opts->job_names && njobs == 0)
		while (opts->job_names[njobs])
			njobs++;
	if (njobs == 0)
		return cb_error_set(err, CB_EINVAL, "worker: no jobs to work for");
	names = calloc(njobs, sizeof(*names));
	jobs = calloc(njobs, sizeof(*jobs));
	if (!names || !jobs) {
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		goto out;
	}
	for (size_t i = 0; i < njobs; i++) {
		const cb_job *job = opts->job_names ? cb_registry_find(reg, opts->job_names[i]) :
						      cb_registry_at(reg, i);

		if (!job) {
			rc = cb_error_set(err, CB_EINVAL,
					  "worker: no job named '%s' in this program",
					  opts->job_names[i]);
			goto out;
		}
		names[i] = job->name;
		jobs[i] = job;
		if (job->lease_seconds > lease)
			lease = job->lease_seconds;
	}
	rc = cb__work_runnable(&runnable, jobs, njobs, err);
	if (rc < 0)
		goto out;
	memset(&work, 0, sizeof(work));
	work.reg = reg;
	work.runnable = runnable;
	work.job_names = names;
	work.njobs = njobs;
	work.lease = opts->lease_seconds > 0 ? opts->lease_seconds : lease;
	work.verbose = opts->verbose;
	work.exit_when_idle = opts->exit_when_idle_seconds;
	if (opts->handle_signals)
		cb__signals_install();
	rc = cb__workers_start(&pool, like, threads, &work, "worker", err);
	cb__workers_wait(pool, out);
	if (opts->handle_signals)
		cb__signals_restore();
out:
	free(runnable);
	free(jobs);
	free(names);
	return rc;
}
