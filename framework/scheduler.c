/* The scheduler daemon (scheduler.h).
 *
 * Every node walks each schedule's fire instants with a cursor of its own and
 * offers every due instant to batch_schedule_claim: one node's insert of the
 * (schedule, instant) row wins, the others are told SKIPPED_CLAIMED (counted,
 * not recorded). The clock
 * is the database's, read at every tick; a node's own clock only times its
 * sleeps. The next instant is computed from the claimed one, never from now,
 * so that nodes whose clocks disagree still walk the same instants.
 *
 * The overlap policy is the claim's (sql/009): an instant may come back
 * SKIPPED_OVERLAP or QUEUED instead of claimed. Each tick a node also takes,
 * from the repository, queued firings whose schedule is idle again and due
 * restarts of executions left unfinished, and launches them as claims. */
#include "scheduler.h"

#include "child_log.h"
#include "engine.h"
#include "clock.h"
#include "log.h"
#include "pgkit.h"
#include "repo.h"
#include "runner.h"
#include "schedule_repo.h"
#include "template.h"
#include "worker.h"
#include "zone.h"

#include "cbatch/cron.h"
#include "cbatch/job.h"
#include "cbatch/sys/conn.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

/* Instants counted one by one when working out a misfire; past this, the
 * last missed instant is searched for from the cutoff backwards instead. */
#define MISSED_COUNT_CAP 10000
/* Instants one schedule may take per tick, so that one busy schedule cannot
 * starve the others. */
#define INSTANTS_PER_TICK 64
/* Seconds after a full tick (heartbeat, schedules read, queued firings
 * taken) during which a place freed is filled by a quick tick: the walk
 * alone, on the rows that tick read. */
#define QUICK_TICKS_FOR 1.0
/* Seconds between attempts to reach a lost repository (doubling). */
#define BACKOFF_MIN 0.2
#define BACKOFF_MAX 2.0

/* ---- instants and templates --------------------------------------------- */

static int zone_local(cb_civil *local, int *offset, cb__pg_zone *z, long long t, cb_error *err)
{
	return cb__zone_local(local, offset, t, cb__pg_zone_lookup, z, err);
}

int cb__schedule_next(long long *out, PGconn *conn, const char *cron, const char *zone,
		      long long after, cb_error *err)
{
	cb_cron *c = NULL;
	cb__pg_zone *z = NULL;
	int rc;

	if ((rc = cb_cron_parse(&c, cron, err)) < 0)
		return rc;
	if ((rc = cb__pg_zone_new(&z, zone, err)) == 0) {
		cb__pg_zone_set_conn(z, conn);
		rc = cb__cron_next_instant(out, c, after, cb__pg_zone_lookup, z, err);
	}
	cb__pg_zone_free(z);
	cb_cron_free(c);
	return rc;
}

void cb__schedule_fmt(char *buf, size_t size, cb__pg_zone *z, long long t, const char *tmpl)
{
	cb_error e = CB_ERROR_INIT;
	cb__fire_vars v = { t, { 1970, 1, 1, 0, 0, 0 }, 0, "" };
	char *txt = NULL;

	if (zone_local(&v.local, &v.offset, z, t, &e) < 0 ||
	    cb__template_fill(&txt, tmpl, &v, &e) < 0)
		snprintf(buf, size, "@%lld", t);
	else
		snprintf(buf, size, "%s", txt);
	free(txt);
}

void cb__schedule_words_free(char **words)
{
	if (!words)
		return;
	for (char **w = words; *w; w++)
		free(*w);
	free(words);
}

int cb__schedule_fill(char ***words, cb_params **params, const json_t *templates,
		      const char *schedule, long long t, const cb_civil *local, int offset,
		      cb_error *err)
{
	size_t n = json_array_size(templates), k = 0;
	cb__fire_vars v = { t, *local, offset, schedule };
	char **w = calloc(n + 3, sizeof(*w));
	cb_params *p = NULL;
	int rc;

	*words = NULL;
	if (params)
		*params = NULL;
	if (!w || (rc = cb_params_new(&p, err)) < 0) {
		free(w);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	for (size_t i = 0; i < n; i++) {
		const char *tmpl = json_string_value(json_array_get(templates, i));

		if (!tmpl) {
			rc = cb_error_set(err, CB_EINVAL,
					  "schedule '%s': parameter %zu is not text", schedule,
					  i + 1);
			goto fail;
		}
		if ((rc = cb__template_fill(&w[k], tmpl, &v, err)) < 0)
			goto fail;
		if ((rc = cb_params_parse_arg(p, w[k++], err)) < 0) {
			cb_error_prefix(err, "schedule '%s': template '%.200s'", schedule, tmpl);
			goto fail;
		}
	}
	/* Where a run came from, without changing which instance it is. */
	{
		static const char *const extra[2][2] = {
			{ "schedule.name", "-schedule.name:string={schedule}" },
			{ "schedule.fireTime", "-schedule.fireTime:string={fire_time}" },
		};

		for (int i = 0; i < 2; i++) {
			if (cb_params_find(p, extra[i][0], NULL, NULL, NULL) == 0)
				continue;
			if ((rc = cb__template_fill(&w[k], extra[i][1], &v, err)) < 0 ||
			    (rc = cb_params_parse_arg(p, w[k++], err)) < 0)
				goto fail;
		}
	}
	*words = w;
	if (params)
		*params = p;
	else
		cb_params_free(p);
	return 0;
fail:
	cb__schedule_words_free(w);
	cb_params_free(p);
	return rc;
}

/* ---- a node's view of one schedule -------------------------------------- */

struct sched {
	long long id, version;
	char name[101], job[101];
	cb_cron *cron;
	cb__pg_zone *zone;
	json_t *params;
	int skip_misfires, grace;
	int has_cursor;
	long long cursor; /* the next instant this node will offer */
	int warned;       /* an unknown job was reported */
	int live;         /* still in the repository at the last read */
};

static void sched_clear(struct sched *s)
{
	cb_cron_free(s->cron);
	cb__pg_zone_free(s->zone);
	json_decref(s->params);
	memset(s, 0, sizeof(*s));
}

/* A child: one launched firing. */
struct child {
	pid_t pid;
	long long firing_id;
	char schedule[101];
	char when[64];
	double started;
	int exited, status;  /* reaped, with its waitpid status */
	int runner;          /* run by runner runner - 1 (node.run), 0: its own process */
	int failed;          /* never started: launch_note says why */
	int launch_recorded; /* LAUNCHED is in the repository */
	int buried_checked;  /* its execution, if left running, was buried */
	char launch_note[200];
	/* Its output (child_log.h), stored as its execution's log once the
	 * execution is found: one with an id above log_after whose owner is its
	 * pid (repository/run_log.c); log_after -1: not looked for. */
	cb__child_log *log;
	long long log_after, log_exec;
	int log_stored;   /* a log row was written */
	double log_next;  /* monotonic time of the next store (or look) */
	double exited_at; /* monotonic time it was reaped */
};

/* A runner (runner.h): pid 0 when there is none in its place. */
struct runner {
	pid_t pid;
	int sock;
	int busy; /* a firing of it has not answered yet */
	/* Its newest execution known, or the newest of all when it started: its
	 * next firing's execution comes after (a child's log_after), so that a
	 * firing in a runner needs no look for it before its launch. -1: not
	 * known (looked for per firing then). */
	long long log_after;
};

struct node {
	const cb_registry *reg;
	const cb_scheduler_options *o;
	cb_scheduler_result *res;
	PGconn *conn;
	char id[256], host[256];
	struct sched *s;
	size_t ns;
	struct child *kids;
	size_t nkids, capkids;
	struct runner *run; /* nrun of them, with options version 2's runners */
	int nrun;
	int limit;              /* jobs at once: max_running, or the runners */
	unsigned int walk_seed; /* where schedules_tick starts (not a time judgment) */
	double db_now;          /* the database's clock, as last read (heartbeat, claim) */
	double db_read_at;      /* monotonic time of that reading */
	double orphans_due;     /* monotonic time of the next look for orphans */
	int connected_once;     /* a session was opened before the current one */
	int new_session;        /* its first heartbeat is still to come */
	/* The last full tick's schedule rows and when (monotonic): a quick
	 * tick walks them again. */
	cb__schedule *rows;
	size_t nrows;
	double full_at;
	int place_freed; /* the wait ended for a child's end or a runner's answer */
	int notified;    /* the wait ended for a notice (a schedule changed) */
	int stopping;
	int pause_before; /* test-only stall point (test_pause), 0 when none */
};

enum {
	PAUSE_CLAIM = 1,
	PAUSE_LAUNCH
};

/* Test-only: CBATCH_TEST_SCHEDULER_PAUSE=claim or =launch makes the node stop
 * itself (SIGSTOP) once, just before its first claim (after it read the
 * database's clock) or its first launch (after its claim), so that tests can
 * stall a node at an exact point and SIGCONT it later. Otherwise it costs one
 * comparison. */
static void test_pause(struct node *n, int where)
{
	if (n->pause_before != where)
		return;
	n->pause_before = 0;
	fflush(NULL);
	raise(SIGSTOP);
}

/* A line of the node's log (core/log.h), said at verbosity @p verb and up:
 * SAY(n, 1, INFO, FIRING_FIRED, CB__LOG_WITH(...), "fmt", ...). */
#define SAY(n, verb, level, event, fields, ...)                                                    \
	do {                                                                                       \
		if ((n)->o->verbose >= (verb))                                                     \
			cb__log("scheduler", CB__LOG_##level, CB__EV_##event, (fields),            \
				__VA_ARGS__);                                                      \
	} while (0)

/* The fire instant as people read it: local time with offset. */
static void fmt_instant(char *buf, size_t size, struct sched *s, long long t)
{
	cb__schedule_fmt(buf, size, s->zone, t, "{fire_time}");
}

/* Bring the node's schedules in line with the repository's rows. */
static int sync_schedules(struct node *n, const cb__schedule *rows, size_t nrows, cb_error *err)
{
	for (size_t i = 0; i < n->ns; i++) {
		n->s[i].live = 0;
		/* the connection changes at every reconnect */
		if (n->s[i].zone)
			cb__pg_zone_set_conn(n->s[i].zone, n->conn);
	}
	for (size_t r = 0; r < nrows; r++) {
		const cb__schedule *row = &rows[r];
		struct sched *s = NULL;

		for (size_t i = 0; i < n->ns && !s; i++)
			if (n->s[i].id == row->id)
				s = &n->s[i];
		if (!s) {
			struct sched *grown = realloc(n->s, (n->ns + 1) * sizeof(*grown));

			if (!grown)
				return cb_error_set(err, CB_ENOMEM, "out of memory");
			n->s = grown;
			s = &n->s[n->ns++];
			memset(s, 0, sizeof(*s));
			s->version = -1;
		}
		s->live = 1;
		if (s->version == row->version && s->cron)
			continue;
		/* New or changed (pause, resume, edit): start over from the
		 * repository's cursor. */
		sched_clear(s);
		s->live = 1;
		s->id = row->id;
		s->version = row->version;
		snprintf(s->name, sizeof(s->name), "%s", row->name);
		snprintf(s->job, sizeof(s->job), "%s", row->job);
		s->skip_misfires = row->skip_misfires;
		s->grace = row->grace_seconds;
		s->params = json_incref(row->parameters);
		if (row->paused || !row->has_next) {
			s->has_cursor = 0;
		} else {
			s->has_cursor = 1;
			s->cursor = row->next_fire;
		}
		if (cb_cron_parse(&s->cron, row->cron, err) < 0 ||
		    cb__pg_zone_new(&s->zone, row->zone, err) < 0) {
			cb_cron_free(s->cron);
			s->cron = NULL;
			SAY(n, 1, WARN, SCHEDULE_UNUSABLE,
			    CB__LOG_WITH(.schedule = row->name, .node = n->id,
					 .code = cb_strcode(err->code)),
			    "schedule '%s' is unusable and is left alone: %s", row->name,
			    err->message);
			cb_error_clear(err);
			s->has_cursor = 0;
		} else {
			cb__zone_segment seg;

			cb__pg_zone_set_conn(s->zone, n->conn);
			/* The zone's segment at the cursor, read now, not at the
			 * instant: the first walk after a burst of new schedules
			 * would otherwise ask the server once per schedule while
			 * their instants wait (100 due at once: ~0.2 s). A failure
			 * here is asked again, and reported, at the instant. */
			if (s->has_cursor && cb__pg_zone_lookup(s->zone, s->cursor, &seg, err) < 0)
				cb_error_clear(err);
		}
	}
	/* Removed schedules. */
	for (size_t i = 0; i < n->ns;) {
		if (n->s[i].live) {
			i++;
			continue;
		}
		sched_clear(&n->s[i]);
		n->s[i] = n->s[--n->ns];
	}
	return 0;
}

/* From instant *x, step to the last instant before @p cutoff, at most
 * @p cap steps (0: no cap). @return the steps taken, or <0. */
static long long walk(long long *x, struct sched *s, long long cutoff, long long cap, cb_error *err)
{
	long long nx, k = 0;
	int rc;

	while (cap == 0 || k < cap) {
		rc = cb__cron_next_instant(&nx, s->cron, *x, cb__pg_zone_lookup, s->zone, err);
		if (rc == CB_ENOTFOUND) {
			cb_error_clear(err);
			break;
		}
		if (rc < 0)
			return rc;
		if (nx >= cutoff)
			break;
		*x = nx;
		k++;
	}
	return k;
}

/* Instants in [first, cutoff), first being one: the last of them and how
 * many (-1: MISSED_COUNT_CAP or more). */
static int missed_range(struct sched *s, long long first, long long cutoff, long long *last,
			long long *count, cb_error *err)
{
	long long x = first, nx, k = walk(&x, s, cutoff, MISSED_COUNT_CAP - 1, err);
	int rc;

	if (k < 0)
		return (int)k;
	if (k < MISSED_COUNT_CAP - 1) {
		*count = k + 1;
		*last = x;
		return 0;
	}
	/* Too many to count: find the last one before the cutoff by widening a
	 * window back from the cutoff, then walking it. */
	*count = -1;
	for (long long d = 1;; d *= 2) {
		long long probe = cutoff - 1 - d;

		if (probe <= x)
			break;
		if ((rc = cb__cron_next_instant(&nx, s->cron, probe, cb__pg_zone_lookup, s->zone,
						err)) < 0)
			return rc;
		if (nx < cutoff) {
			x = nx;
			break;
		}
	}
	if ((k = walk(&x, s, cutoff, 0, err)) < 0)
		return (int)k;
	*last = x;
	return 0;
}

/* ---- children ------------------------------------------------------------ */

static struct child *child_add(struct node *n)
{
	if (n->nkids == n->capkids) {
		size_t cap = n->capkids ? n->capkids * 2 : 8;
		struct child *k = realloc(n->kids, cap * sizeof(*k));

		if (!k)
			return NULL;
		n->kids = k;
		n->capkids = cap;
	}
	memset(&n->kids[n->nkids], 0, sizeof(n->kids[0]));
	return &n->kids[n->nkids++];
}

/* Seconds the oldest ended child has waited for its end to be recorded. */
static double ends_waiting(const struct node *n)
{
	double now = cb__clock_mono(), most = 0;

	for (size_t i = 0; i < n->nkids; i++)
		if (n->kids[i].exited && now - n->kids[i].exited_at > most)
			most = now - n->kids[i].exited_at;
	return most;
}

static int running_children(const struct node *n)
{
	int k = 0;

	for (size_t i = 0; i < n->nkids; i++)
		k += !n->kids[i].exited;
	return k;
}

/* The command line of a firing: `PROG VERB JOB WORDS...`, NULL-terminated
 * (the words not copied). NULL when out of memory. */
static char **firing_argv(const struct node *n, const char *verb, const char *job, char **words)
{
	size_t nw = 0;
	char **argv;

	while (words[nw])
		nw++;
	if (!(argv = calloc(nw + 4, sizeof(*argv))))
		return NULL;
	argv[0] = (char *)n->o->prog;
	argv[1] = (char *)verb;
	argv[2] = (char *)job;
	for (size_t i = 0; i < nw; i++)
		argv[3 + i] = words[i];
	return argv;
}

/* The launch as the firing records it: "pid PID: VERB JOB WORDS...". */
static void note_launch(struct child *k, pid_t pid, const char *verb, const char *job, char **words)
{
	size_t len = (size_t)snprintf(k->launch_note, sizeof(k->launch_note), "pid %d: %s %s",
				      (int)pid, verb, job);

	for (size_t w = 0; words[w] && len < sizeof(k->launch_note); w++)
		len += (size_t)snprintf(k->launch_note + len, sizeof(k->launch_note) - len, " %s",
					words[w]);
}

/*
 * Confirm the claim of @p k before its launch by child (or runner) @p pid
 * (batch_schedule_launch). A repository lost on the way (a switchover) must
 * not lose the instant: the confirmation is asked again, on a connection of
 * its own, for at most the node's lease; the database decides (still CLAIMED
 * and the lease holding: launched; its own first confirmation that went
 * through: launched; the lease gone: FAILED_TO_LAUNCH).
 */
static int confirm_launch(struct node *n, struct child *k, pid_t pid, int *launched, char *found,
			  size_t found_size, cb_error *err)
{
	double until = cb__clock_mono() + n->o->lease_seconds, pause = 0.2;
	int rc = cb__repo_schedule_launch(launched, found, found_size, n->conn, k->firing_id, n->id,
					  (int)pid, k->launch_note, err);

	while (rc < 0 && cb__pg_lost(err, n->conn) && cb__clock_mono() < until &&
	       !cb__stop_signalled()) {
		PGconn *c;

		cb__clock_sleep(pause);
		pause = pause * 2 > 1 ? 1 : pause * 2;
		c = cb_pg_connect_like(n->conn, "cbatch-scheduler");
		if (PQstatus(c) == CONNECTION_OK) {
			cb_error_clear(err);
			rc = cb__repo_schedule_launch(launched, found, found_size, c, k->firing_id,
						      n->id, (int)pid, k->launch_note, err);
		}
		PQfinish(c);
	}
	return rc;
}

/* Why a launch whose claim was not confirmed (batch_schedule_launch: @p rc
 * < 0 failed, else the firing is @p found) did not happen, for spawn's
 * caller. */
static void not_confirmed(char *why, size_t whysize, int *refused, int rc, const char *found,
			  const cb_error *err)
{
	if (rc < 0) {
		*refused = -1;
		snprintf(why, whysize, "could not confirm the claim before the launch: %s",
			 err->message);
	} else {
		*refused = 1;
		snprintf(why, whysize,
			 "not launched: the firing is %s, no longer this node's claim "
			 "(this node stalled between its claim and its launch)",
			 found);
	}
}

/* Start the child: `prog VERB JOB WORDS...` for firing @p k->firing_id (`run
 * JOB PARAMS...`, or `restart EXECUTION` for a recovery). The
 * child waits on a pipe until the claim is confirmed (batch_schedule_launch:
 * still this node's, still CLAIMED) and only then execs, so that a node that
 * stalled since its claim never runs a firing the others have reported
 * ORPHANED; refused, it exits unexec'd. An exec failure comes back over a
 * close-on-exec pipe, so that it is FAILED_TO_LAUNCH and not an exit code.
 * @return the pid (k->pid, k->launch_note set, LAUNCHED recorded), or -1
 * with @p why set and *refused: 1 the claim is no longer ours (recorded),
 * 0 the launch failed (to be recorded), -1 the repository failed. */
static pid_t spawn(struct node *n, struct child *k, const char *verb, const char *job, char **words,
		   char *why, size_t whysize, int *refused, cb_error *err)
{
	char **argv, found[256] = "", go = 'g';
	int pfd[2], gfd[2], ofd[2] = { -1, -1 }, efd[2] = { -1, -1 }, e = 0, launched = 0, rc;
	cb_error me = CB_ERROR_INIT;
	pid_t parent = getpid(), pid;
	ssize_t got;

	*refused = 0;
	if (!(argv = firing_argv(n, verb, job, words))) {
		snprintf(why, whysize, "out of memory");
		return -1;
	}
	if (pipe(pfd) != 0) {
		snprintf(why, whysize, "pipe: %s", strerror(errno));
		free(argv);
		return -1;
	}
	if (pipe(gfd) != 0) {
		snprintf(why, whysize, "pipe: %s", strerror(errno));
		close(pfd[0]);
		close(pfd[1]);
		free(argv);
		return -1;
	}
	/* Its stdout and stderr, for its log: close-on-exec, so that no other
	 * child holds them open; the child's own ends are dup2'ed over 1 and 2. */
	if (pipe(ofd) != 0 || pipe(efd) != 0) {
		snprintf(why, whysize, "pipe: %s", strerror(errno));
		for (int i = 0; i < 2; i++) {
			if (ofd[i] >= 0)
				close(ofd[i]);
			if (efd[i] >= 0)
				close(efd[i]);
		}
		close(pfd[0]);
		close(pfd[1]);
		close(gfd[0]);
		close(gfd[1]);
		free(argv);
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		fcntl(ofd[i], F_SETFD, FD_CLOEXEC);
		fcntl(efd[i], F_SETFD, FD_CLOEXEC);
	}
	/* The newest execution before the launch: the child's comes after. */
	if (cb__repo_run_log_mark(&k->log_after, n->conn, &me) < 0)
		k->log_after = -1;
	fcntl(pfd[1], F_SETFD, FD_CLOEXEC);
	fcntl(gfd[1], F_SETFD, FD_CLOEXEC);
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		int devnull = open("/dev/null", O_RDONLY);
		char c;

		close(pfd[0]);
		close(gfd[1]);
		close(ofd[0]);
		close(efd[0]);
		/* If the scheduler dies, the job is asked to stop after its chunk
		 * (STOPPED, restartable) rather than run on unwatched. */
		prctl(PR_SET_PDEATHSIG, SIGTERM);
		if (getppid() != parent)
			_exit(127);
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		/* Its output goes to a pipe this node reads: should the node die, a
		 * write must fail (EPIPE), not kill the run that was asked to stop
		 * after its chunk. */
		signal(SIGPIPE, SIG_IGN);
		/* No exec without the confirmed claim: EOF means refused. */
		do
			got = read(gfd[0], &c, 1);
		while (got < 0 && errno == EINTR);
		if (got != 1)
			_exit(127);
		close(gfd[0]);
		if (devnull >= 0) {
			dup2(devnull, 0);
			close(devnull);
		}
		dup2(ofd[1], STDOUT_FILENO);
		dup2(efd[1], STDERR_FILENO);
		if (n->o->conninfo)
			setenv("CBATCH_DB", n->o->conninfo, 1);
		/* This node reached the repository a moment ago: a refused
		 * first connection is an outage beginning, waited out within
		 * the run's budget, not a wrong address (cli/connect.c). */
		setenv("CBATCH_SCHEDULER_NODE", n->id, 1);
		execv(n->o->exe, argv);
		e = errno;
		if (write(pfd[1], &e, sizeof(e)) < 0) {
			/* the parent then sees EOF and exit code 127 */
		}
		_exit(127);
	}
	free(argv);
	close(pfd[1]);
	close(gfd[0]);
	close(ofd[1]);
	close(efd[1]);
	if (pid < 0) {
		snprintf(why, whysize, "fork: %s", strerror(errno));
		close(pfd[0]);
		close(gfd[1]);
		close(ofd[0]);
		close(efd[0]);
		return -1;
	}
	/* Read by this loop from now on (node_wait, children_tick). */
	if (cb__child_log_new(&k->log, ofd[0], efd[0], 0) < 0)
		k->log = NULL;
	note_launch(k, pid, verb, job, words);
	rc = confirm_launch(n, k, pid, &launched, found, sizeof(found), err);
	if (rc == 0 && launched && write(gfd[1], &go, 1) != 1) {
		/* The child is gone already: its exit is the firing's end. */
	}
	close(gfd[1]);
	if (rc < 0 || !launched) {
		waitpid(pid, NULL, 0);
		cb__child_log_free(k->log);
		k->log = NULL;
		close(pfd[0]);
		not_confirmed(why, whysize, refused, rc, found, err);
		return -1;
	}
	k->pid = pid;
	k->launch_recorded = 1;
	do
		got = read(pfd[0], &e, sizeof(e));
	while (got < 0 && errno == EINTR);
	close(pfd[0]);
	if (got == (ssize_t)sizeof(e)) {
		snprintf(why, whysize, "cannot run %s: %s", n->o->exe, strerror(e));
		waitpid(pid, NULL, 0);
		cb__child_log_free(k->log);
		k->log = NULL;
		/* LAUNCHED was recorded: FAILED_TO_LAUNCH replaces it. */
		k->pid = 0;
		k->launch_recorded = 0;
		return -1;
	}
	return pid;
}

/* ---- runners (runner.h) --------------------------------------------------- */

static void runner_gone(struct runner *r)
{
	if (r->sock >= 0)
		close(r->sock);
	r->sock = -1;
	r->pid = 0;
	r->busy = 0;
}

/* Start runner @p i. The node's own descriptors are none of its business:
 * its repository connection and the other runners' sockets are closed in it
 * (the firings' pipes of the others are close-on-exec and read ends only). */
static int runner_spawn(struct node *n, int i)
{
	/* Every other runner's socket: a runner that kept one open would keep
	 * that runner from ever reading the node's end of it. */
	int *fds = malloc(((size_t)n->nrun + 1) * sizeof(*fds)), rc;
	size_t m = 0;

	if (!fds) {
		errno = ENOMEM;
		return -1;
	}
	if (n->conn && PQsocket(n->conn) >= 0)
		fds[m++] = PQsocket(n->conn);
	for (int j = 0; j < n->nrun; j++)
		if (j != i && n->run[j].pid > 0)
			fds[m++] = n->run[j].sock;
	n->run[i].busy = 0;
	n->run[i].log_after = -1;
	if (n->conn) {
		cb_error me = CB_ERROR_INIT;

		if (cb__repo_run_log_mark(&n->run[i].log_after, n->conn, &me) < 0)
			n->run[i].log_after = -1;
	}
	rc = cb__runner_start(&n->run[i].pid, &n->run[i].sock, n->o->conninfo, n->o->run,
			      n->o->run_ctx, fds, m);
	free(fds);
	return rc;
}

/* Reap the idle runners that died (a signal to the process group, a kill). */
static void runners_tick(struct node *n)
{
	for (int i = 0; i < n->nrun; i++) {
		struct runner *r = &n->run[i];

		if (r->pid > 0 && !r->busy && waitpid(r->pid, NULL, WNOHANG) == r->pid)
			runner_gone(r);
	}
}

/* An idle runner, one started in an empty place if need be. @return its
 * index, or -1 (errno set). */
static int runner_idle(struct node *n)
{
	runners_tick(n);
	for (int i = 0; i < n->nrun; i++)
		if (n->run[i].pid > 0 && !n->run[i].busy)
			return i;
	for (int i = 0; i < n->nrun; i++)
		if (n->run[i].pid <= 0)
			return runner_spawn(n, i) == 0 ? i : -1;
	errno = EBUSY;
	return -1;
}

/* Whether runner child @p k has ended, as children_tick asks of a process:
 * its answer (an exit code), or the runner's death (its wait status). */
static void runner_child_tick(struct node *n, struct child *k)
{
	struct runner *r = &n->run[k->runner - 1];
	long long exec = 0;
	int code, st;

	if (k->exited)
		return;
	if (cb__runner_result(r->sock, &code, &exec) == 1) {
		k->status = W_EXITCODE(code, 0);
	} else if (waitpid(r->pid, &st, WNOHANG) == r->pid) {
		/* It may have answered just before it died. */
		k->status =
			cb__runner_result(r->sock, &code, &exec) == 1 ? W_EXITCODE(code, 0) : st;
		runner_gone(r);
	} else {
		return;
	}
	/* Its execution, as it said: the runner's next one comes after it. */
	if (exec > 0) {
		k->log_exec = exec;
		if (k->log_after < 0)
			k->log_after = 0;
		if (r->log_after < exec)
			r->log_after = exec;
	}
	r->busy = 0;
	k->exited = 1;
	k->exited_at = cb__clock_mono();
}

/* Stop the runners: each reads the end of its socket and exits. */
static void runners_end(struct node *n)
{
	for (int i = 0; i < n->nrun; i++) {
		pid_t pid = n->run[i].pid;

		runner_gone(&n->run[i]);
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	free(n->run);
	n->run = NULL;
	n->nrun = 0;
}

/* spawn's twin for a node with runners: the firing goes to an idle runner
 * once the claim is confirmed (batch_schedule_launch, with the runner's
 * pid), with fresh pipes for its output. @return as spawn. */
static pid_t spawn_in_runner(struct node *n, struct child *k, const char *verb, const char *job,
			     char **words, char *why, size_t whysize, int *refused, cb_error *err)
{
	char **argv, found[256] = "";
	int ofd[2] = { -1, -1 }, efd[2] = { -1, -1 }, launched = 0, rc, i;
	cb_error me = CB_ERROR_INIT;
	struct runner *r;

	*refused = 0;
	if ((i = runner_idle(n)) < 0) {
		snprintf(why, whysize, "no runner to run it: %s", strerror(errno));
		return -1;
	}
	r = &n->run[i];
	if (!(argv = firing_argv(n, verb, job, words))) {
		snprintf(why, whysize, "out of memory");
		return -1;
	}
	if (pipe(ofd) != 0 || pipe(efd) != 0) {
		snprintf(why, whysize, "pipe: %s", strerror(errno));
		for (int j = 0; j < 2; j++) {
			if (ofd[j] >= 0)
				close(ofd[j]);
			if (efd[j] >= 0)
				close(efd[j]);
		}
		free(argv);
		return -1;
	}
	/* Close-on-exec: no exec'd child of this node holds them open. */
	for (int j = 0; j < 2; j++) {
		fcntl(ofd[j], F_SETFD, FD_CLOEXEC);
		fcntl(efd[j], F_SETFD, FD_CLOEXEC);
	}
	k->log_after = r->log_after;
	if (k->log_after < 0 && cb__repo_run_log_mark(&k->log_after, n->conn, &me) < 0)
		k->log_after = -1;
	note_launch(k, r->pid, verb, job, words);
	rc = confirm_launch(n, k, r->pid, &launched, found, sizeof(found), err);
	if (rc < 0 || !launched) {
		close(ofd[0]);
		close(ofd[1]);
		close(efd[0]);
		close(efd[1]);
		free(argv);
		not_confirmed(why, whysize, refused, rc, found, err);
		return -1;
	}
	rc = cb__runner_send(r->sock, argv, ofd[1], efd[1]);
	free(argv);
	close(ofd[1]);
	close(efd[1]);
	if (rc < 0) {
		/* LAUNCHED was recorded: FAILED_TO_LAUNCH replaces it. */
		snprintf(why, whysize, "could not hand it to runner %d: %s", (int)r->pid,
			 strerror(errno));
		close(ofd[0]);
		close(efd[0]);
		return -1;
	}
	if (cb__child_log_new(&k->log, ofd[0], efd[0], 0) < 0)
		k->log = NULL;
	r->busy = 1;
	k->runner = i + 1;
	k->pid = r->pid;
	k->launch_recorded = 1;
	return k->pid;
}

static const char *exit_meaning(int code)
{
	switch (code) {
	case CB_EXIT_COMPLETED:
		return "completed";
	case CB_EXIT_FAILED:
		return "failed";
	case CB_EXIT_USAGE:
		return "usage error";
	case CB_EXIT_COMPLETE:
		return "instance already complete";
	case CB_EXIT_RUNNING:
		return "skipped: already running";
	case CB_EXIT_STOPPED:
		return "stopped, restartable";
	case CB_EXIT_UNREACHABLE:
		return "database unreachable, restartable";
	default:
		return "unexpected exit";
	}
}

/* Seconds between two stores of a running child's log, and the longest wait
 * for its output's end after it exited (a process it left behind may hold the
 * pipe open). */
#define LOG_EVERY     2.0
#define LOG_LAST_WAIT 5.0

/* Store child @p k's log when it is due: every LOG_EVERY seconds while it
 * runs, if it printed anything new, and once its output has ended. The log
 * is no part of the firing's record: a store that fails is said, not
 * retried. @return 1 when the log is over (stored, or none to store), 0
 * while its output may still come. */
static int log_tick(struct node *n, struct child *k)
{
	cb_error err = CB_ERROR_INIT;
	double now = cb__clock_mono();
	long long dropped, total;
	int last;
	char *text;

	if (!k->log)
		return 1;
	cb__child_log_drain(k->log);
	last = k->exited && (cb__child_log_done(k->log) || now - k->exited_at >= LOG_LAST_WAIT);
	if (!last && now < k->log_next)
		return 0;
	k->log_next = now + LOG_EVERY;
	if (k->log_after < 0)
		return last;
	if (!k->log_exec &&
	    cb__repo_run_log_find(&k->log_exec, n->conn, (int)k->pid, k->log_after, &err) < 0) {
		SAY(n, 2, WARN, FIRING_NOTE,
		    CB__LOG_WITH(.schedule = k->schedule, .instant = k->when,
				 .firing = k->firing_id, .node = n->id),
		    "%s %s: its log is not stored: %s", k->schedule, k->when, err.message);
		return last;
	}
	if (!k->log_exec)
		return last;
	if (k->runner && n->run[k->runner - 1].pid == k->pid &&
	    n->run[k->runner - 1].log_after < k->log_exec)
		n->run[k->runner - 1].log_after = k->log_exec;
	/* At the end, a child that printed nothing gets its empty log. */
	text = cb__child_log_take(k->log, last && !k->log_stored, &dropped, &total);
	if (text && cb__repo_run_log_save(n->conn, k->log_exec, text, dropped, total, &err) < 0)
		SAY(n, 1, WARN, FIRING_NOTE,
		    CB__LOG_WITH(.schedule = k->schedule, .instant = k->when,
				 .firing = k->firing_id, .execution = k->log_exec, .node = n->id),
		    "%s %s: execution %lld: its log is not stored: %s", k->schedule, k->when,
		    k->log_exec, err.message);
	else if (text)
		k->log_stored = 1;
	free(text);
	return last;
}

/* Reap exited children and write down what is not written yet. Entries
 * stay until the repository has them (the connection may be down). */
static void children_tick(struct node *n, int record)
{
	cb_error err = CB_ERROR_INIT;

	runners_tick(n);
	for (size_t i = 0; i < n->nkids; i++) {
		struct child *k = &n->kids[i];

		if (k->log)
			cb__child_log_drain(k->log);
		if (k->runner) {
			runner_child_tick(n, k);
			continue;
		}
		if (!k->exited && k->pid > 0 && waitpid(k->pid, &k->status, WNOHANG) == k->pid) {
			k->exited = 1;
			k->exited_at = cb__clock_mono();
		}
	}
	if (!record || !n->conn)
		return;
	for (size_t i = 0; i < n->nkids;) {
		struct child *k = &n->kids[i];
		long long exec_id = 0;
		char st[16], msg[600];
		int code;

		if (!k->launch_recorded) {
			if (cb__repo_schedule_launched(n->conn, k->firing_id, n->id,
						       k->failed ? 0 : k->pid, k->launch_note,
						       &err) < 0)
				return;
			k->launch_recorded = 1;
		}
		if (k->failed) {
			n->kids[i] = n->kids[--n->nkids];
			continue;
		}
		/* Until its output has ended: the last lines come with its exit. */
		if (!log_tick(n, k) || !k->exited) {
			i++;
			continue;
		}
		code = WIFEXITED(k->status) ? WEXITSTATUS(k->status) : 128 + WTERMSIG(k->status);
		if (!k->buried_checked) {
			/* A child that could not record its end (an outage, a kill)
			 * leaves its execution claiming to run: it is gone, so its
			 * execution is buried before the firing's outcome is read. */
			long long buried = 0;
			char how[64];

			if (WIFEXITED(k->status))
				snprintf(how, sizeof(how), "exited with %d", code);
			else
				snprintf(how, sizeof(how), "was killed by signal %d",
					 WTERMSIG(k->status));
			if (cb__repo_schedule_bury_dead(&buried, n->conn, k->firing_id, n->id,
							n->o->lease_seconds, how, &err) < 0)
				return;
			k->buried_checked = 1;
			if (buried > 0)
				SAY(n, 1, WARN, FIRING_RECOVERY,
				    CB__LOG_WITH(.schedule = k->schedule, .instant = k->when,
						 .firing = k->firing_id, .execution = buried,
						 .node = n->id),
				    "%s %s: execution %lld still claimed to run after its process "
				    "%s: ended FAILED (owner lost)",
				    k->schedule, k->when, buried, how);
		}
		if (WIFEXITED(k->status))
			snprintf(msg, sizeof(msg), "exit %d (%s) after %.1fs", code,
				 exit_meaning(code), cb__clock_mono() - k->started);
		else
			snprintf(msg, sizeof(msg), "killed by signal %d after %.1fs",
				 WTERMSIG(k->status), cb__clock_mono() - k->started);
		if (k->log && !k->log_exec) {
			/* No execution to hold its log (it ended before recording
			 * one: bad parameters, the repository out of reach): its
			 * last words go with the firing's message. */
			char line[400];
			size_t at = strlen(msg);

			cb__child_log_last_line(k->log, line, sizeof(line));
			if (line[0] && at + 3 < sizeof(msg))
				snprintf(msg + at, sizeof(msg) - at, ": %.*s",
					 (int)(sizeof(msg) - at - 3), line);
		}
		if (cb__repo_schedule_finished(&exec_id, st, n->conn, k->firing_id, n->id, code,
					       msg, n->stopping, &err) < 0)
			return;
		if (exec_id > 0)
			SAY(n, 1, INFO, FIRING_ENDED,
			    CB__LOG_WITH(.schedule = k->schedule, .instant = k->when,
					 .firing = k->firing_id, .execution = exec_id,
					 .node = n->id, .exit_code = code,
					 .has_exit_code = WIFEXITED(k->status)),
			    "%s %s: execution %lld %s, %s", k->schedule, k->when, exec_id, st, msg);
		else
			SAY(n, 1, WARN, FIRING_ENDED,
			    CB__LOG_WITH(.schedule = k->schedule, .instant = k->when,
					 .firing = k->firing_id, .node = n->id, .exit_code = code,
					 .has_exit_code = WIFEXITED(k->status)),
			    "%s %s: no execution, %s", k->schedule, k->when, msg);
		cb__child_log_free(k->log);
		n->kids[i] = n->kids[--n->nkids];
	}
}

/* ---- one schedule's due instants ---------------------------------------- */

/* Launch claimed firing @p firing_id of schedule @p schedule as `prog VERB
 * TARGET WORDS...` (@p fill_error: the parameters could not be made, so it is
 * a failure to launch). @return 0 (launched, or its failure recorded), or <0
 * when the repository failed. */
static int launch_firing(struct node *n, long long firing_id, const char *schedule,
			 const char *when, const char *job, const char *verb, const char *target,
			 char **words, const char *fill_error, cb_error *err)
{
	struct child *k = child_add(n);
	char why[CB_ERROR_MESSAGE_MAX + 64] = "", *none[1] = { NULL };
	pid_t pid = -1;
	int refused = 0;

	if (!k)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	k->firing_id = firing_id;
	snprintf(k->schedule, sizeof(k->schedule), "%s", schedule);
	snprintf(k->when, sizeof(k->when), "%s", when);
	k->started = cb__clock_mono();
	/* Its execution is looked for once it can have printed for a while (or
	 * at its end), not at once: it is not there yet. */
	k->log_next = k->started + LOG_EVERY;
	if (fill_error && fill_error[0]) {
		snprintf(why, sizeof(why), "%s", fill_error);
	} else if (!cb_registry_find(n->reg, job)) {
		snprintf(why, sizeof(why), "job '%s' is not registered in this program", job);
	} else {
		test_pause(n, PAUSE_LAUNCH);
		pid = n->nrun > 0 ? spawn_in_runner(n, k, verb, target, words ? words : none, why,
						    sizeof(why), &refused, err) :
				    spawn(n, k, verb, target, words ? words : none, why,
					  sizeof(why), &refused, err);
	}
	if (pid < 0) {
		n->res->failed_to_launch++;
		SAY(n, 1, WARN, FIRING_NOT_LAUNCHED,
		    CB__LOG_WITH(.schedule = schedule, .instant = when, .firing = firing_id,
				 .job = job, .node = n->id),
		    "%s %s: %s%s", schedule, when, refused == 1 ? "" : "failed to launch: ", why);
		if (refused == 1) {
			/* The confirmation recorded why; nothing ran. */
			n->nkids--;
			return 0;
		}
		/* Kept as an exited child until FAILED_TO_LAUNCH is written. */
		k->exited = k->failed = 1;
		/* A longer reason is cut: the note is the first words of it. */
		snprintf(k->launch_note, sizeof(k->launch_note), "%.*s",
			 (int)sizeof(k->launch_note) - 1, why);
		if (refused < 0 ||
		    cb__repo_schedule_launched(n->conn, firing_id, n->id, 0, why, err) < 0)
			return CB_EDB;
		n->nkids--;
		return 0;
	}
	if (strcmp(verb, "restart") == 0) {
		n->res->restarted++;
		SAY(n, 1, INFO, FIRING_RESTARTED,
		    CB__LOG_WITH(.schedule = schedule, .instant = when, .firing = firing_id,
				 .job = job, .node = n->id),
		    "%s %s: restarted (firing %lld), %s", schedule, when, firing_id,
		    k->launch_note);
	} else {
		n->res->fired++;
		SAY(n, 1, INFO, FIRING_FIRED,
		    CB__LOG_WITH(.schedule = schedule, .instant = when, .firing = firing_id,
				 .job = job, .node = n->id),
		    "%s %s: fired (firing %lld), %s", schedule, when, firing_id, k->launch_note);
	}
	return 0;
}

/*
 * One offer of the instant at a schedule's cursor, in its phases: instants
 * (a misfire range behind the grace cutoff, and the next instant after it),
 * parameters (the templates filled for the instant the run is as of), claim
 * (batch_schedule_claim, judged by the database's clock), cursor (past what
 * the claim covered) and outcome (what the claim said: launch, skip, queue,
 * or read the schedule again). What the phases hand on lives here.
 */
struct offering {
	/* given */
	struct node *n;
	struct sched *s;
	cb_error *err;
	/* instants */
	long long at;         /* the instant at the cursor */
	long long next;       /* the instant after the last one this claim covers */
	long long last;       /* the last instant of a misfire range, else at */
	long long count;      /* instants in the misfire range (-1: too many to count) */
	long long param_time; /* the instant the run's parameters are as of */
	const char *kind;     /* SCHEDULED, MISFIRE_RUN or MISFIRE_SKIP */
	int launch;           /* a run follows a claim (not MISFIRE_SKIP) */
	/* parameters */
	char **words;      /* owned; NULL when they could not be made */
	cb_params *params; /* owned */
	char key[CB_JOB_KEY_LEN + 1];
	char fill_error[CB_ERROR_MESSAGE_MAX]; /* why not: the firing's failure to launch */
	/* claim */
	cb__claim_res r;
	char when[64]; /* the instant as people read it */
};

/* Instants: a cursor behind the grace cutoff starts a misfire range, run
 * once as of its last instant or skipped; the claim covers up to @p next. */
static int offer_instants(struct offering *o)
{
	struct sched *s = o->s;
	long long cutoff = (long long)o->n->db_now - s->grace;
	int rc;

	if (o->at < cutoff) {
		if ((rc = missed_range(s, o->at, cutoff, &o->last, &o->count, o->err)) < 0)
			return rc;
		o->kind = s->skip_misfires ? "MISFIRE_SKIP" : "MISFIRE_RUN";
		o->param_time = o->last;
	}
	rc = cb__cron_next_instant(&o->next, s->cron, o->last, cb__pg_zone_lookup, s->zone, o->err);
	if (rc == CB_ENOTFOUND) {
		/* It never fires again: park the cursor far away. */
		o->next = o->at + 400LL * 366 * 86400;
		cb_error_clear(o->err);
	} else if (rc < 0) {
		return rc;
	}
	o->launch = strcmp(o->kind, "MISFIRE_SKIP") != 0;
	return 0;
}

/* Parameters: the schedule's templates filled for the instant, and the job
 * key they make: the key of the instance the run will make, as the job
 * declares its parameters (a node offers only the instants of jobs it has). */
static int offer_parameters(struct offering *o)
{
	struct sched *s = o->s;
	const cb_job *job = cb_registry_find(o->n->reg, s->job);
	cb_error fe = CB_ERROR_INIT;
	cb_civil local;
	int offset;

	if (!o->launch)
		return 0;
	if (zone_local(&local, &offset, s->zone, o->param_time, o->err) < 0)
		return CB_EDB;
	/* A template that cannot be filled is this firing's failure to
	 * launch, recorded as such, not the node's. */
	if (cb__schedule_fill(&o->words, &o->params, s->params, s->name, o->param_time, &local,
			      offset, &fe) < 0 ||
	    cb_job_key(o->key, job, o->params, &fe) < 0) {
		snprintf(o->fill_error, sizeof(o->fill_error), "%s", fe.message);
		cb__schedule_words_free(o->words);
		o->words = NULL;
	}
	return 0;
}

/* Claim: one node's insert of (schedule, instant) wins. The database's clock
 * at the claim may make an instant taken on time by the tick's a misfire. */
static int offer_claim(struct offering *o)
{
	struct node *n = o->n;
	struct sched *s = o->s;
	cb__claim_req q;
	char *ptext;
	json_t *arr;
	int rc;

	arr = json_array();
	for (size_t w = 0; arr && o->words && o->words[w]; w++)
		json_array_append_new(arr, json_string(o->words[w]));
	ptext = arr ? json_dumps(arr, JSON_COMPACT) : NULL;
	json_decref(arr);
	if (!ptext)
		return cb_error_set(o->err, CB_ENOMEM, "out of memory");
	memset(&q, 0, sizeof(q));
	q.schedule_id = s->id;
	q.version = s->version;
	q.fire_time = o->at;
	q.kind = o->kind;
	q.missed_until = o->last;
	q.missed_count = o->count;
	q.param_time = o->param_time;
	q.next_fire = o->next;
	q.node = n->id;
	q.job_key = o->key[0] ? o->key : NULL;
	q.parameters = ptext;
	test_pause(n, PAUSE_CLAIM);
	rc = cb__repo_schedule_claim(&o->r, n->conn, &q, o->err);
	free(ptext);
	if (rc < 0)
		return rc;
	/* The claim read the database's clock after any stall: after one, the
	 * instants still due are judged by it, not by the tick's reading (not
	 * after the mere milliseconds of a claim, which would split a misfire
	 * range at a second's boundary). */
	if (o->r.db_now > n->db_now + 1.0) {
		n->db_now = o->r.db_now;
		n->db_read_at = cb__clock_mono();
	}
	fmt_instant(o->when, sizeof(o->when), s, o->at);
	if (o->r.outcome == CB__CLAIM_CLAIMED && o->r.kind[0] && strcmp(o->r.kind, o->kind) != 0) {
		/* Taken on time by the tick's clock, late by the database's at the
		 * claim: recorded as a misfire of this one instant. */
		SAY(n, 1, WARN, FIRING_MISFIRED,
		    CB__LOG_WITH(.schedule = s->name, .instant = o->when, .job = s->job,
				 .node = n->id),
		    "%s %s: claimed %.1fs after the instant, past the grace of %ds", s->name,
		    o->when, o->r.db_now - (double)o->at, s->grace);
		o->kind = strcmp(o->r.kind, "MISFIRE_SKIP") == 0 ? "MISFIRE_SKIP" : "MISFIRE_RUN";
		o->launch = strcmp(o->kind, "MISFIRE_SKIP") != 0;
		o->count = 1;
	}
	return 0;
}

/* Cursor: past this instant, and past whatever another node's claim covered,
 * before anything else can fail: an instant is offered once by each node. */
static void offer_cursor(struct offering *o)
{
	int outcome = o->r.outcome;

	if (outcome == CB__CLAIM_CLAIMED || outcome == CB__CLAIM_SKIPPED ||
	    outcome == CB__CLAIM_OVERLAP || outcome == CB__CLAIM_QUEUED) {
		o->s->cursor = o->next;
		if (o->r.has_next && o->r.next_fire > o->s->cursor)
			o->s->cursor = o->r.next_fire;
	}
}

/* Outcome: what the claim said. @return 1 to go on with the next instant, 0
 * to leave this schedule for this tick, <0 a database error. */
static int offer_outcome(struct offering *o)
{
	struct node *n = o->n;
	struct sched *s = o->s;
	int rc;

	switch (o->r.outcome) {
	case CB__CLAIM_CHANGED:
	case CB__CLAIM_GONE:
		s->version = -1; /* read it again next tick */
		s->has_cursor = 0;
		return 0;
	case CB__CLAIM_SKIPPED:
		n->res->skipped_claimed++;
		SAY(n, 2, DEBUG, FIRING_CLAIMED_ELSEWHERE,
		    CB__LOG_WITH(.schedule = s->name, .instant = o->when, .node = n->id),
		    "%s %s: claimed by %s", s->name, o->when, o->r.claimed_by);
		break;
	case CB__CLAIM_OVERLAP:
		n->res->skipped_overlap++;
		SAY(n, 1, INFO, FIRING_SKIPPED,
		    CB__LOG_WITH(.schedule = s->name, .instant = o->when, .job = s->job,
				 .node = n->id),
		    "%s %s: skipped, %s", s->name, o->when, o->r.claimed_by);
		break;
	case CB__CLAIM_QUEUED:
		n->res->queued++;
		SAY(n, 1, INFO, FIRING_QUEUED,
		    CB__LOG_WITH(.schedule = s->name, .instant = o->when, .job = s->job,
				 .node = n->id),
		    "%s %s: queued, %s", s->name, o->when, o->r.claimed_by);
		break;
	default:
		if (!o->launch) {
			n->res->misfired++;
			SAY(n, 1, WARN, FIRING_MISFIRED,
			    CB__LOG_WITH(.schedule = s->name, .instant = o->when, .job = s->job,
					 .node = n->id),
			    "%s: %lld firings missed from %s on recorded, none run (misfire "
			    "policy SKIP)",
			    s->name, o->count, o->when);
			break;
		}
		if (strcmp(o->kind, "MISFIRE_RUN") == 0) {
			char first[64];

			n->res->misfired++;
			snprintf(first, sizeof(first), "%s", o->when);
			fmt_instant(o->when, sizeof(o->when), s, o->last);
			if (o->count < 0)
				SAY(n, 1, WARN, FIRING_MISFIRED,
				    CB__LOG_WITH(.schedule = s->name, .instant = o->when,
						 .job = s->job, .node = n->id),
				    "%s: over %d firings missed from %s to %s; running once "
				    "now, as of the last",
				    s->name, MISSED_COUNT_CAP, first, o->when);
			else
				SAY(n, 1, WARN, FIRING_MISFIRED,
				    CB__LOG_WITH(.schedule = s->name, .instant = o->when,
						 .job = s->job, .node = n->id),
				    "%s: %lld firings missed from %s to %s; running once now, "
				    "as of the last",
				    s->name, o->count, first, o->when);
		}
		if ((rc = launch_firing(n, o->r.firing_id, s->name, o->when, s->job, "run", s->job,
					o->words, o->fill_error, o->err)) < 0)
			return rc;
		break;
	}
	return 1;
}

/* Offer the instant at the cursor. @return 1 to go on with the next, 0 to
 * leave this schedule for this tick, <0 a database error. */
static int offer(struct node *n, struct sched *s, cb_error *err)
{
	struct offering o;
	int rc;

	memset(&o, 0, sizeof(o));
	o.n = n;
	o.s = s;
	o.err = err;
	o.at = s->cursor;
	o.last = o.at;
	o.param_time = o.at;
	o.kind = "SCHEDULED";
	/* Full: an instant that would run is left to other nodes before its
	 * next instant is worked out (a burst's walk while full crossed every
	 * schedule); only a misfire range the policy skips (nothing runs) is
	 * still recorded here (offer_instants makes it MISFIRE_SKIP). */
	if (running_children(n) >= n->limit &&
	    !(s->skip_misfires && o.at < (long long)n->db_now - s->grace)) {
		SAY(n, 2, DEBUG, FIRING_LEFT, CB__LOG_WITH(.schedule = s->name, .node = n->id),
		    "%s: %d jobs running here, leaving the instant to other nodes", s->name,
		    n->limit);
		return 0;
	}
	if ((rc = offer_instants(&o)) < 0)
		return rc;
	if ((rc = offer_parameters(&o)) == 0 && (rc = offer_claim(&o)) == 0) {
		offer_cursor(&o);
		rc = offer_outcome(&o);
	}
	cb__schedule_words_free(o.words);
	cb_params_free(o.params);
	return rc;
}

/* Launch what this node takes: queued firings whose schedule is idle again,
 * then due restarts of executions that ended unfinished (sql/009), of the
 * jobs it has. Each was CLAIMED for this node by the repository, under the
 * schedule's row lock, and goes through the same launch confirmation as a
 * claim. */
static int take_and_launch(struct node *n, const cb__schedule *rows, size_t nrows, cb_error *err)
{
	json_t *jobs = json_array(), *taken = NULL;
	int rc = 0;

	if (!jobs)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	for (size_t r = 0; r < nrows; r++)
		if (cb_registry_find(n->reg, rows[r].job))
			json_array_append_new(jobs, json_string(rows[r].job));
	for (int recovery = 0; recovery < 2 && rc == 0 && json_array_size(jobs) > 0; recovery++) {
		if (n->stopping || running_children(n) >= n->limit)
			break;
		if ((rc = cb__repo_schedule_take(&taken, n->conn, n->id, jobs, recovery, err)) < 0)
			break;
		for (size_t i = 0; i < json_array_size(taken) && rc == 0; i++) {
			json_t *t = json_array_get(taken, i),
			       *params = json_object_get(t, "parameters");
			long long id =
				(long long)json_integer_value(json_object_get(t, "firing_id"));
			long long sid =
				(long long)json_integer_value(json_object_get(t, "schedule_id"));
			const char *job = json_string_value(json_object_get(t, "job_name"));
			const char *kind = json_string_value(json_object_get(t, "kind"));
			const char *name = NULL;
			char when[64], target[24], **words = NULL;

			for (size_t k = 0; k < nrows && !name; k++)
				if (rows[k].id == sid)
					name = rows[k].name;
			snprintf(when, sizeof(when), "%s",
				 json_string_value(json_object_get(t, "fire_time")) ?
					 json_string_value(json_object_get(t, "fire_time")) :
					 "?");
			if (!job || !name)
				continue;
			if (recovery) {
				SAY(n, 1, INFO, FIRING_RECOVERY,
				    CB__LOG_WITH(.schedule = name, .instant = when, .firing = id,
						 .job = job, .node = n->id,
						 .execution = (long long)json_integer_value(
							 json_object_get(t, "job_execution_id"))),
				    "%s %s: restart attempt %lld of %lld of execution %lld", name,
				    when,
				    (long long)json_integer_value(json_object_get(t, "attempt")),
				    (long long)json_integer_value(json_object_get(t, "attempts")),
				    (long long)json_integer_value(
					    json_object_get(t, "job_execution_id")));
				snprintf(target, sizeof(target), "%lld",
					 (long long)json_integer_value(
						 json_object_get(t, "job_execution_id")));
				rc = launch_firing(n, id, name, when, job, "restart", target, NULL,
						   NULL, err);
				continue;
			}
			/* The queued firing runs with the parameters of its own instant. */
			if (!(words = calloc(json_array_size(params) + 1, sizeof(*words)))) {
				rc = cb_error_set(err, CB_ENOMEM, "out of memory");
				break;
			}
			for (size_t w = 0; w < json_array_size(params) && rc == 0; w++) {
				const char *word = json_string_value(json_array_get(params, w));

				if (!(words[w] = strdup(word ? word : "")))
					rc = cb_error_set(err, CB_ENOMEM, "out of memory");
			}
			if (rc == 0) {
				SAY(n, 1, INFO, FIRING_NOTE,
				    CB__LOG_WITH(.schedule = name, .instant = when, .firing = id,
						 .job = job, .node = n->id),
				    "%s %s: the queued %sfiring %lld runs now", name, when,
				    kind && strcmp(kind, "BACKFILL") == 0 ? "backfill " : "", id);
				rc = launch_firing(n, id, name, when, job, "run", job, words, NULL,
						   err);
			}
			cb__schedule_words_free(words);
		}
		json_decref(taken);
		taken = NULL;
	}
	json_decref(jobs);
	return rc;
}

/* Offer the due instants of the schedules, @p rows being the repository's. */
static int walk_schedules(struct node *n, const cb__schedule *rows, size_t nrows, cb_error *err)
{
	int rc;

	/* Each tick starts its walk at a place of its own: nodes that walked
	 * the schedules in the same order would meet at every instant due at
	 * once, one waiting on the other's claim, so that a burst is claimed no
	 * faster by two nodes than by one. Any order is right: the claim decides. */
	size_t start = n->ns > 1 ? (size_t)rand_r(&n->walk_seed) % n->ns : 0;

	for (size_t w = 0; w < n->ns && !n->stopping; w++) {
		struct sched *s = &n->s[(start + w) % n->ns];
		const cb__schedule *row = NULL;

		for (size_t r = 0; r < nrows && !row; r++)
			if (rows[r].id == s->id)
				row = &rows[r];
		if (!row || !s->has_cursor || !s->cron)
			continue;
		if (!cb_registry_find(n->reg, s->job)) {
			/* Another program's job: its own nodes fire it. */
			if (!s->warned)
				SAY(n, 1, INFO, SCHEDULE_UNUSABLE,
				    CB__LOG_WITH(.schedule = s->name, .job = s->job, .node = n->id),
				    "%s: job '%s' is not registered here; leaving it to "
				    "nodes that have it",
				    s->name, s->job);
			s->warned = 1;
			continue;
		}
		/* Others have moved on: instants far behind were theirs, and
		 * offering them would only log noise. */
		if (row->has_next && s->cursor < row->next_fire &&
		    row->next_fire - s->cursor > s->grace)
			s->cursor = row->next_fire;
		for (int k = 0; k < INSTANTS_PER_TICK && s->has_cursor &&
				s->cursor <= (long long)n->db_now && !n->stopping;
		     k++) {
			if ((rc = offer(n, s, err)) < 0)
				return rc;
			if (rc == 0)
				break;
		}
	}
	return 0;
}

static int schedules_tick(struct node *n, const cb__schedule *rows, size_t nrows, cb_error *err)
{
	int rc;

	if ((rc = sync_schedules(n, rows, nrows, err)) < 0 ||
	    (rc = take_and_launch(n, rows, nrows, err)) < 0)
		return rc;
	return walk_schedules(n, rows, nrows, err);
}

/* ---- the loop ------------------------------------------------------------ */

/* Wait as cb__work_wait does (a notice on @p conn or, if @p stop_wakes, a
 * stop signal ends the wait; @p conn NULL: no notice), at most @p seconds,
 * draining the children's output meanwhile: a child never waits on a full
 * pipe while its node sleeps (an outage's backoff included). */
/* Children whose output has ended (an exec'd child that exited, a runner
 * done with its firing). */
static size_t kids_ended(const struct node *n)
{
	size_t k = 0;

	for (size_t i = 0; i < n->nkids; i++)
		k += n->kids[i].log && cb__child_log_done(n->kids[i].log);
	return k;
}

static void node_wait(struct node *n, PGconn *conn, double seconds, int stop_wakes)
{
	double end = cb__clock_mono() + (seconds > 0 ? seconds : 0);
	struct pollfd *p = NULL;
	size_t room = 0, ended = kids_ended(n);
	int conn_fd;
	PGnotify *note;

	for (size_t i = 0; i < n->nkids; i++)
		room += n->kids[i].log ? 2 : 0;
	room += (size_t)n->nrun;
	if (room == 0 || !(p = calloc(room + 2, sizeof(*p)))) {
		if (conn)
			cb__work_wait(conn, seconds);
		else if (stop_wakes)
			cb__signals_nap(seconds);
		else
			cb__clock_sleep(seconds);
		return;
	}
	conn_fd = conn && PQstatus(conn) == CONNECTION_OK ? PQsocket(conn) : -1;
	/* A notice that came with an earlier answer is already buffered. */
	if (conn_fd >= 0 && PQconsumeInput(conn) && (note = PQnotifies(conn)) != NULL) {
		do
			PQfreemem(note);
		while ((note = PQnotifies(conn)) != NULL);
		n->notified = 1;
		end = 0;
	}
	for (;;) {
		double left;
		size_t m = 0;

		for (size_t i = 0; i < n->nkids; i++)
			if (n->kids[i].log) {
				cb__child_log_drain(n->kids[i].log);
				m += cb__child_log_pollfds(n->kids[i].log, p + m);
			}
		/* A child's end frees its place: the loop takes the instants that
		 * waited for one at once, not at its next look. */
		if (kids_ended(n) > ended) {
			n->place_freed = 1;
			break;
		}
		for (int i = 0; i < n->nrun; i++)
			if (n->run[i].busy && n->run[i].sock >= 0) {
				p[m].fd = n->run[i].sock;
				p[m].events = POLLIN;
				p[m++].revents = 0;
			}
		if ((left = end - cb__clock_mono()) <= 0)
			break;
		p[m].fd = conn_fd;
		p[m].events = POLLIN;
		p[m].revents = 0;
		p[m + 1].fd = stop_wakes ? cb__signals_wake_fd() : -1;
		p[m + 1].events = POLLIN;
		p[m + 1].revents = 0;
		if (cb__clock_poll(p, (nfds_t)(m + 2), left) <= 0)
			continue;
		if (p[m + 1].revents)
			break; /* a stop */
		for (size_t i = 0; i < m; i++)
			for (int r = 0; r < n->nrun; r++)
				if (p[i].revents && p[i].fd == n->run[r].sock)
					end = 0; /* a runner answered: its firing ended */
		if (end == 0) {
			n->place_freed = 1;
			break;
		}
		if (p[m].revents) {
			if ((p[m].revents & POLLIN) && PQconsumeInput(conn)) {
				while ((note = PQnotifies(conn)) != NULL)
					PQfreemem(note);
				n->notified = 1;
				break;
			}
			/* Closed, or an error: the rest of the wait without it. */
			conn_fd = -1;
		}
	}
	free(p);
}

static int connect_repo(struct node *n, cb_error *err)
{
	/* Opened again: the others were cut off as long as this node was, so
	 * their silence counts from this session on (its first heartbeat says
	 * so, batch_scheduler_heartbeat). */
	n->new_session = n->connected_once;
	if (cb__pg_connect(&n->conn, n->o->conninfo, err) < 0 ||
	    cb_repo_schema_check(n->conn, err) < 0 ||
	    cb__repo_command(n->conn, "listen for schedule changes", "LISTEN cbatch_schedules", 0,
			     NULL, err) < 0) {
		PQfinish(n->conn);
		n->conn = NULL;
		return CB_EDB;
	}
	n->connected_once = 1;
	return 0;
}

/* One tick: heartbeat (and the database's time), children, orphans,
 * schedules. */
static int tick(struct node *n, cb_error *err)
{
	cb__schedule *rows = NULL;
	size_t nrows = 0;
	json_t *orphans = NULL;
	int rc, quick = n->place_freed && !n->notified && n->rows && !n->stopping &&
			cb__clock_mono() - n->full_at < QUICK_TICKS_FOR;

	n->place_freed = n->notified = 0;
	if (quick) {
		/* A place freed during a burst: the next instant that was due
		 * at the last full tick is claimed at once, on that tick's rows
		 * and by its reading of the database's clock (no heartbeat, no
		 * load, no queued firings; a schedule changed meanwhile is
		 * refused by its claim, CHANGED, and read again). An instant due
		 * since waits for a full tick, which follows within
		 * QUICK_TICKS_FOR: the lease, the rows and the queue are never
		 * older. */
		children_tick(n, 0);
		rc = walk_schedules(n, n->rows, n->nrows, err);
		if (rc == 0 && (running_children(n) < n->limit || ends_waiting(n) > 1.0))
			children_tick(n, 1);
		return rc;
	}
	if ((rc = cb__repo_scheduler_heartbeat(&n->db_now, n->conn, n->id, n->host, (int)getpid(),
					       n->o->lease_seconds, n->new_session, err)) < 0)
		return rc;
	n->new_session = 0;
	n->db_read_at = cb__clock_mono();
	children_tick(n, 0);
	/* Orphans need a lease to run out: looking a few times per lease is
	 * enough, and keeps two queries off most ticks. */
	if (cb__clock_mono() >= n->orphans_due) {
		n->orphans_due = cb__clock_mono() +
				 (n->o->lease_seconds < 8 ? n->o->lease_seconds / 4 : 2.0);
		if ((rc = cb__repo_schedule_orphans(&orphans, n->conn, n->id, err)) < 0)
			return rc;
	}
	for (size_t i = 0; i < json_array_size(orphans); i++) {
		json_t *o = json_array_get(orphans, i);

		n->res->orphans_reported++;
		SAY(n, 1, WARN, FIRING_RECOVERY,
		    CB__LOG_WITH(.firing = (long long)json_integer_value(
					 json_object_get(o, "firing_id")),
				 .instant = json_string_value(json_object_get(o, "fire_time")),
				 .node = n->id),
		    "firing %lld (schedule %lld at %s) was left open by node %s, which is "
		    "gone; not repeated%s",
		    (long long)json_integer_value(json_object_get(o, "firing_id")),
		    (long long)json_integer_value(json_object_get(o, "schedule_id")),
		    json_string_value(json_object_get(o, "fire_time")),
		    json_string_value(json_object_get(o, "node_id")),
		    json_is_integer(json_object_get(o, "job_execution_id")) ?
			    "; its execution is restarted, if the schedule recovers, once "
			    "its lease is over" :
			    "");
	}
	json_decref(orphans);
	if (n->stopping) {
		children_tick(n, 1);
		return 0;
	}
	if ((rc = cb__repo_schedules_load(&rows, &nrows, n->conn, err)) < 0)
		return rc;
	cb__repo_schedules_free(n->rows, n->nrows);
	n->rows = rows;
	n->nrows = nrows;
	n->full_at = cb__clock_mono();
	if ((rc = schedules_tick(n, rows, nrows, err)) < 0)
		return rc;
	/* Ends are written down after the walk: a place is free once its child
	 * ended, not once its end is in the repository, and the firings due
	 * now are not kept waiting behind the records of those that ended.
	 * While the walk stopped for want of a place (a burst), the records
	 * wait, but never longer than a second. */
	if (running_children(n) < n->limit || ends_waiting(n) > 1.0)
		children_tick(n, 1);
	return 0;
}

/* Seconds until the earliest cursor, by the database's clock. */
static double sleep_for(const struct node *n)
{
	/* The last reading advanced by the time since (a quick tick reads no
	 * clock): waking early costs a tick, waking late an instant's delay. */
	double best = 1.0, now = n->db_now + (cb__clock_mono() - n->db_read_at);

	for (size_t i = 0; i < n->ns; i++) {
		double d;

		if (!n->s[i].has_cursor)
			continue;
		d = (double)n->s[i].cursor - now;
		if (d < best)
			best = d;
	}
	/* Children's ends are reaped at ticks: look more often while some run. */
	if (running_children(n) > 0 && best > 0.2)
		best = 0.2;
	/* Full, with instants due: they wait for a place, and a child's end
	 * wakes the wait (node_wait), so no tick spins meanwhile. */
	if (running_children(n) >= n->limit && best < 0.2)
		best = 0.2;
	/* A hair past the instant, so that the database's clock has reached it. */
	return best < 0 ? 0.0 : best + 0.002;
}

int cb_scheduler_run(cb_scheduler_result *out, const cb_registry *reg,
		     const cb_scheduler_options *o, cb_error *err)
{
	struct node n;
	/* The runs' backoff (0.2 s doubling to 2 s): a node that waits longer
	 * than that after the repository is back looks gone to the others for
	 * no reason, and every reconnect is one cheap attempt. */
	double started = cb__clock_mono(), backoff = BACKOFF_MIN;
	int rc = 0, down = 0, said_unreachable = 0;

	memset(out, 0, sizeof(*out));
	if ((rc = cb__version_check(o ? o->version : 0u, CB_SCHEDULER_OPTIONS_VERSION,
				    "scheduler options", err)) < 0)
		return rc;
	if (!o->exe || !o->prog || !(o->lease_seconds > 0) || o->max_running < 1 ||
	    o->exit_after_seconds < 0)
		return cb_error_set(err, CB_EINVAL,
				    "scheduler options: exe and prog are required, lease_seconds "
				    "and max_running must be positive");
	memset(&n, 0, sizeof(n));
	n.reg = reg;
	n.o = o;
	n.res = out;
	n.limit = o->max_running;
	if (o->version >= 2 && o->runners > 0) {
		if (!o->run || o->runners > 1000)
			return cb_error_set(err, CB_EINVAL,
					    "scheduler options: runners need a run function, and "
					    "at most 1000 of them");
		if (!(n.run = calloc((size_t)o->runners, sizeof(*n.run))))
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		n.nrun = n.limit = o->runners;
		for (int i = 0; i < n.nrun; i++)
			n.run[i].sock = -1;
	}
	{
		const char *pause = getenv("CBATCH_TEST_SCHEDULER_PAUSE");

		n.pause_before = !pause                       ? 0 :
				 strcmp(pause, "claim") == 0  ? PAUSE_CLAIM :
				 strcmp(pause, "launch") == 0 ? PAUSE_LAUNCH :
								0;
	}
	snprintf(n.id, sizeof(n.id), "%s", cb__owner_id());
	for (const char *c = n.id; *c; c++)
		n.walk_seed = n.walk_seed * 31u + (unsigned char)*c;
	if (gethostname(n.host, sizeof(n.host) - 1) != 0)
		snprintf(n.host, sizeof(n.host), "unknown");
	/* The runners before the handlers: each installs its own. Started
	 * ahead, so that the first firings find them warm; one that cannot be
	 * started now is started when a firing needs it. */
	for (int i = 0; i < n.nrun; i++)
		if (runner_spawn(&n, i) < 0)
			runner_gone(&n.run[i]);
	cb__signals_install();
	SAY(&n, 1, INFO, NODE_STARTED, CB__LOG_WITH(.node = n.id),
	    "node %s started (lease %.1fs, at most %d jobs at once%s)", n.id, o->lease_seconds,
	    n.limit, n.nrun > 0 ? ", in runners" : "");
	while (!n.stopping) {
		cb_error e = CB_ERROR_INIT;

		if (cb__stop_signalled() || (o->exit_after_seconds > 0 &&
					     cb__clock_mono() - started >= o->exit_after_seconds))
			break;
		if (!n.conn && connect_repo(&n, &e) < 0) {
			/* Never fire blind: without the repository no claim, so no run. */
			if (!said_unreachable || o->verbose >= 2)
				SAY(&n, 1, WARN, REPOSITORY_LOST,
				    CB__LOG_WITH(.node = n.id, .code = cb_strcode(e.code)),
				    "repository unreachable (%s); retrying in %.1fs, firing "
				    "nothing meanwhile",
				    e.message, backoff);
			said_unreachable = 1;
			down = 1;
			children_tick(&n, 0);
			node_wait(&n, NULL, backoff, 1);
			backoff = backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : backoff * 2;
			continue;
		}
		if (tick(&n, &e) < 0) {
			if (e.code == CB_ENOMEM) {
				*err = e;
				rc = e.code;
				break;
			}
			SAY(&n, 1, WARN, REPOSITORY_LOST,
			    CB__LOG_WITH(.node = n.id, .code = cb_strcode(e.code)),
			    "lost the repository (%s); reconnecting in %.1fs, firing nothing "
			    "meanwhile",
			    e.message, backoff);
			PQfinish(n.conn);
			n.conn = NULL;
			/* A quick tick never follows a reconnect: the zones ask the
			 * new connection once a full tick has synced them. */
			n.full_at = -QUICK_TICKS_FOR;
			down = 1;
			node_wait(&n, NULL, backoff, 1);
			backoff = backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : backoff * 2;
			continue;
		}
		if (down)
			SAY(&n, 1, INFO, REPOSITORY_BACK, CB__LOG_WITH(.node = n.id),
			    "repository reachable again");
		down = 0;
		said_unreachable = 0;
		backoff = BACKOFF_MIN;
		node_wait(&n, n.conn, sleep_for(&n), 1);
	}
	/* Stop: no new firing; running jobs stop after their chunk. */
	n.stopping = 1;
	if (running_children(&n) > 0)
		SAY(&n, 1, INFO, NODE_STOPPING, CB__LOG_WITH(.node = n.id),
		    "stopping: asking %d running jobs to stop after their chunk",
		    running_children(&n));
	for (size_t i = 0; i < n.nkids; i++)
		if (!n.kids[i].exited)
			kill(n.kids[i].pid, SIGTERM);
	while (n.nkids > 0) {
		cb_error e = CB_ERROR_INIT;

		if (!n.conn)
			connect_repo(&n, &e);
		if (n.conn && tick(&n, &e) < 0) {
			PQfinish(n.conn);
			n.conn = NULL;
		}
		if (!n.conn) {
			/* Nothing can be recorded: reap, and give up once all are gone. */
			children_tick(&n, 0);
			if (running_children(&n) == 0)
				break;
		}
		node_wait(&n, NULL, 0.1, 0);
	}
	if (n.conn) {
		cb_error e = CB_ERROR_INIT;

		cb__repo_scheduler_stopped(n.conn, n.id, &e);
	}
	SAY(&n, 1, INFO, NODE_STOPPED, CB__LOG_WITH(.node = n.id),
	    "stopped: fired %lld, skipped %lld (claimed elsewhere), misfires %lld, "
	    "failed to launch %lld, skipped for overlap %lld, queued %lld, restarted %lld",
	    out->fired, out->skipped_claimed, out->misfired, out->failed_to_launch,
	    out->skipped_overlap, out->queued, out->restarted);
	for (size_t i = 0; i < n.ns; i++)
		sched_clear(&n.s[i]);
	cb__repo_schedules_free(n.rows, n.nrows);
	for (size_t i = 0; i < n.nkids; i++)
		cb__child_log_free(n.kids[i].log);
	runners_end(&n);
	free(n.s);
	free(n.kids);
	PQfinish(n.conn);
	cb__signals_restore();
	return rc;
}
