/*
 * The simulator's entry point: options, the decisions, one run, the trace,
 * replay and the shrinker.
 *
 *   sim [--seed S] [--seeds K] [--steps N] [--procs P] [--quiet Q] [--bug NAME]
 *       [--trace FILE] [--trace-out FILE] [--no-shrink] [--expect-violation]
 *       [--keep-going] [-v]
 *
 * --keep-going: after a violation, go on with the next seed (the exit status
 * still says that one failed).
 *
 * A run is a pure function of its decisions, and the decisions of (seed,
 * steps, procs, quiet): a seeded splitmix64 makes them up front, one per
 * step (a fault or none, then which process acts and a number that picks
 * its action among those its state allows). A violation prints the seed, the
 * step, the invariant and the step trace, then the shrinker replays the
 * decisions with steps removed (delta debugging: chunks of half, then a
 * quarter... of the steps), each on a fresh database, keeping a removal
 * while the same invariant still fails, and prints the shortest trace found
 * with the command that replays it (--trace FILE).
 *
 * Each run gets its own database, copied from a template that holds the
 * repository (the real `schema init`) and the data's tables. Every time the
 * repository reads goes through batch_now() (issue 27.1, merged from
 * h-csql), so the virtual clock needs nothing else. (Before that merge the
 * template shadowed clock_timestamp()/now() and the clock defaults; see this
 * file's history.)
 *
 * Exit: 0 no violation (or, with --expect-violation, a violation found and
 * shrunk to fewer steps), 1 otherwise, 2 on usage or setup errors.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cbatch.h>

#include "cbtest.h"
#include "schedule_repo.h"
#include "sim.h"

/* ---- the PRNG: splitmix64 (never rand()) ---- */

static uint64_t next(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int below(uint64_t *x, int n)
{
	return (int)(next(x) % (uint64_t)n);
}

/* ---- options ---- */

struct opts {
	uint64_t seed;
	int seeds, steps, procs, quiet, shrink, expect, verbose, keep_going;
	enum sim_bug bug;
	const char *trace_in, *trace_out;
};

static const char *const bug_names[] = { "none", "nofence", "ignore-lost", "nocas" };
#define NBUGS 4

/* ---- the decisions ---- */

typedef struct plan {
	sim_decision *d;
	int n;
} plan;

static void make_plan(plan *out, const struct opts *o)
{
	uint64_t x = o->seed;

	out->n = o->steps + o->quiet;
	out->d = calloc((size_t)out->n, sizeof(*out->d));
	for (int i = 0; i < out->n; i++) {
		sim_decision *d = &out->d[i];
		int faulty = i < o->steps;

		d->quiet = !faulty;
		d->advance = 1;
		if (faulty && below(&x, 100) < 22) {
			d->fault = 1 + below(&x, F_NFAULTS - 1);
			d->target = below(&x, o->procs);
			d->param = d->fault == F_FREEZE     ? 1 + below(&x, 6) :
				   d->fault == F_CLOCK_JUMP ? below(&x, (int)(2 * SIM_LEASE) + 1) :
				   d->fault == F_SKEW       ? below(&x, (int)SIM_LEASE + 1) :
							      0;
		}
		d->actor = faulty && below(&x, 10) == 0 ? SIM_OPERATOR : below(&x, o->procs);
		d->choice = (uint32_t)next(&x);
	}
}

static const char *const fault_names[] = { "-", "die", "freeze", "disconnect", "clock", "skew" };

static int write_plan(const char *path, const plan *p, const struct opts *o)
{
	FILE *f = fopen(path, "w");

	if (!f)
		return -1;
	fprintf(f, "# cbatch sim trace: seed %llu procs %d bug %s\n", (unsigned long long)o->seed,
		o->procs, bug_names[o->bug]);
	fprintf(f, "# step quiet advance fault target param actor choice\n");
	for (int i = 0; i < p->n; i++) {
		const sim_decision *d = &p->d[i];

		fprintf(f, "%d %d %d %s %d %d %d %u\n", i, d->quiet, d->advance,
			fault_names[d->fault], d->target, d->param, d->actor, d->choice);
	}
	return fclose(f);
}

static int read_plan(plan *out, struct opts *o, const char *path)
{
	FILE *f = fopen(path, "r");
	char line[256], fault[32], bug[32];
	unsigned long long seed;
	int cap = 64;

	if (!f)
		return -1;
	out->n = 0;
	out->d = calloc((size_t)cap, sizeof(*out->d));
	while (fgets(line, sizeof(line), f)) {
		sim_decision d = { 0 };
		int step;

		if (sscanf(line, "# cbatch sim trace: seed %llu procs %d bug %31s", &seed,
			   &o->procs, bug) == 3) {
			o->seed = seed;
			for (int b = 0; b < NBUGS; b++)
				if (strcmp(bug, bug_names[b]) == 0)
					o->bug = (enum sim_bug)b;
			continue;
		}
		if (line[0] == '#' ||
		    sscanf(line, "%d %d %d %31s %d %d %d %u", &step, &d.quiet, &d.advance, fault,
			   &d.target, &d.param, &d.actor, &d.choice) != 8)
			continue;
		for (int k = 0; k < F_NFAULTS; k++)
			if (strcmp(fault, fault_names[k]) == 0)
				d.fault = k;
		if (out->n == cap) {
			cap *= 2;
			out->d = realloc(out->d, (size_t)cap * sizeof(*out->d));
		}
		out->d[out->n++] = d;
	}
	fclose(f);
	return 0;
}

/* ---- the database ---- */

static char base_db[CBT_CONNINFO_MAX];
static char server[CBT_CONNINFO_MAX]; /* host/port/user, no dbname */
static int db_counter;

PGresult *sim_q(sim *s, const char *sql, int n, const char *const *p)
{
	PGresult *res = PQexecParams(s->admin, sql, n, NULL, p, NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK && PQresultStatus(res) != PGRES_COMMAND_OK) {
		fprintf(stderr, "sim: %s: %s", sql, PQresultErrorMessage(res));
		PQclear(res);
		return NULL;
	}
	return res;
}

long long sim_q_ll(sim *s, const char *sql, int n, const char *const *p)
{
	PGresult *res = sim_q(s, sql, n, p);
	long long v = -1;

	if (res && PQntuples(res) > 0 && !PQgetisnull(res, 0, 0))
		v = atoll(PQgetvalue(res, 0, 0));
	PQclear(res);
	return v;
}

static int exec_on(PGconn *c, const char *sql)
{
	PGresult *res = PQexec(c, sql);
	int ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;

	if (!ok)
		fprintf(stderr, "sim: %s: %s", sql, PQresultErrorMessage(res));
	PQclear(res);
	return ok ? 0 : -1;
}

static const char sim_schema_sql[] =
	"CREATE TABLE public.sim_item (id bigserial PRIMARY KEY, run int NOT NULL, "
	" part int NOT NULL, amount bigint NOT NULL, status text NOT NULL DEFAULT 'new');"
	"CREATE TABLE public.sim_total (run int PRIMARY KEY, total bigint NOT NULL);"
	"CREATE TABLE public.sim_token_seen (lock_name text PRIMARY KEY, token bigint NOT NULL);"
	"CREATE TABLE public.sim_chunk (chunk_id bigserial PRIMARY KEY, job_execution_id bigint,"
	" run int, lock_name text, token bigint, cur_token bigint, amount bigint NOT NULL);";

/* The template: a repository by the real `schema init`, plus the data's tables. */
static int make_template(void)
{
	PGconn *c = NULL;
	const char *host = getenv("CBATCH_TEST_PGHOST"), *port = getenv("CBATCH_TEST_PGPORT"),
		   *user = getenv("CBATCH_TEST_PGUSER");
	int rc;

	if (cbt_repo_db(base_db, sizeof(base_db), "sim_base", &c) < 0) {
		PQfinish(c);
		return -1;
	}
	rc = exec_on(c, sim_schema_sql);
	PQfinish(c);
	snprintf(server, sizeof(server), "host=%s port=%s user=%s", host ? host : "",
		 port ? port : "5432", user ? user : "postgres");
	return rc;
}

static const char *dbname_of(const char *conninfo)
{
	const char *d = strstr(conninfo, "dbname=");

	return d ? d + 7 : "";
}

static int new_db(char *out, size_t size, char *name, size_t nsize)
{
	char sql[512], ci[CBT_CONNINFO_MAX + 64];
	PGconn *c;
	int rc;

	snprintf(name, nsize, "sim_run_%d_%d", (int)getpid(), ++db_counter);
	snprintf(ci, sizeof(ci), "%s dbname=postgres", server);
	c = PQconnectdb(ci);
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "sim: %s", PQerrorMessage(c));
		PQfinish(c);
		return -1;
	}
	snprintf(sql, sizeof(sql), "CREATE DATABASE %s TEMPLATE %s", name, dbname_of(base_db));
	rc = exec_on(c, sql);
	PQfinish(c);
	if (snprintf(out, size, "%s dbname=%s", server, name) >= (int)size)
		return -1;
	return rc;
}

static void drop_db(const char *name)
{
	char sql[256], ci[CBT_CONNINFO_MAX + 64];
	PGconn *c;

	snprintf(ci, sizeof(ci), "%s dbname=postgres", server);
	c = PQconnectdb(ci);
	snprintf(sql, sizeof(sql), "DROP DATABASE IF EXISTS %s WITH (FORCE)", name);
	if (PQstatus(c) == CONNECTION_OK)
		exec_on(c, sql);
	PQfinish(c);
}

/* ---- one run ---- */

/* pg_terminate_backend warns of a session already gone: expected here. */
static void quiet_notice(void *arg, const char *msg)
{
	(void)arg;
	(void)msg;
}

static void trace_add(sim *s, const char *line)
{
	s->trace = realloc(s->trace, (size_t)(s->ntrace + 1) * sizeof(*s->trace));
	s->trace[s->ntrace++] = strdup(line);
	if (s->verbose) {
		static double last;
		struct timespec ts;
		double now;

		clock_gettime(CLOCK_MONOTONIC, &ts);
		now = (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
		printf("%s  [%.0f ms]\n", line, last > 0 ? (now - last) * 1000 : 0);
		last = now;
	}
}

/* The schedule its nodes fire: every 10 s of virtual time from t=10,
 * overlap SKIP (the default), through the real cb__repo_schedule_add. */
static int add_schedule(sim *s)
{
	cb__schedule def;
	cb_error err = CB_ERROR_INIT;
	long long id;
	int rc;

	memset(&def, 0, sizeof(def));
	snprintf(def.name, sizeof(def.name), "%s", SIM_SCHEDULE);
	snprintf(def.cron, sizeof(def.cron), "*/10 * * * * *");
	snprintf(def.zone, sizeof(def.zone), "UTC");
	snprintf(def.job, sizeof(def.job), "%s", SIM_FIRED_JOB);
	snprintf(def.overlap, sizeof(def.overlap), "SKIP");
	def.parameters = json_array();
	def.grace_seconds = 3600;
	def.recover_attempts = 3;
	def.recover_delay = 25; /* past the dead child's lease */
	def.has_next = 1;
	def.next_fire = SIM_EPOCH_UNIX + 10;
	rc = cb__repo_schedule_add(&id, s->admin, &def, &err);
	json_decref(def.parameters);
	if (rc < 0)
		fprintf(stderr, "sim: add schedule: %s\n", err.message);
	return rc;
}

static int seed_items(sim *s)
{
	uint64_t x = s->seed ^ 0x5eed5eedULL;
	char sql[256];

	for (int r = 1; r <= SIM_RUNS; r++)
		for (int i = 0; i < SIM_ITEMS; i++) {
			snprintf(sql, sizeof(sql),
				 "INSERT INTO sim_item (run, part, amount) VALUES (%d, %d, %d)", r,
				 i % SIM_PARTS, 1 + below(&x, 1000));
			if (exec_on(s->admin, sql) < 0)
				return -1;
		}
	return 0;
}

/*
 * Run the decisions @p pl. Returns 1 on a violation (s->invariant,
 * s->violation, s->step say which, where), 0 without, -1 on a setup error.
 * s->trace receives one line per step.
 */
static int run(sim *s, const plan *pl)
{
	char name[64], who[16], line[SIM_MSG * 4], fault[SIM_MSG], act[SIM_MSG];
	char beats[SIM_MSG * 2];
	int rc = 0, quiet_ok = 0;

	s->violation[0] = s->invariant[0] = '\0';
	if (new_db(s->conninfo, sizeof(s->conninfo), name, sizeof(name)) < 0)
		return -1;
	s->admin = PQconnectdb(s->conninfo);
	PQsetNoticeProcessor(s->admin, quiet_notice, NULL);
	if (PQstatus(s->admin) != CONNECTION_OK || seed_items(s) < 0 || add_schedule(s) < 0) {
		fprintf(stderr, "sim: %s", PQerrorMessage(s->admin));
		rc = -1;
		goto done;
	}
	for (int i = 0; i <= SIM_MAX_PROCS; i++) {
		sim_proc *p = &s->procs[i];

		if (i >= s->nprocs && i != SIM_OPERATOR)
			continue;
		p->index = i;
		p->state = S_DEAD;
		if (sim_proc_start(s, p) < 0) {
			rc = -1;
			goto done;
		}
		if (i == SIM_OPERATOR) {
			p->conn = PQconnectdb(s->conninfo);
			p->pid = PQbackendPID(p->conn);
			p->state = S_IDLE;
			snprintf(p->owner, sizeof(p->owner), "operator");
		} else {
			sim_proc_turn(s, p, 0, act, sizeof(act)); /* born */
		}
	}
	for (s->step = 0; s->step < pl->n; s->step++) {
		const sim_decision *d = &pl->d[s->step];
		sim_proc *p = &s->procs[d->actor];
		int was_waiting[SIM_MAX_PROCS + 1];

		if (d->actor != SIM_OPERATOR && d->actor >= s->nprocs)
			continue;
		if (d->target >= s->nprocs)
			continue;
		s->quiet_now = d->quiet;
		s->vnow += d->advance;
		s->launched_firing = 0;
		for (int i = 0; i <= SIM_MAX_PROCS; i++)
			was_waiting[i] = s->procs[i].has_thread && s->procs[i].busy;
		sim_fault(s, d, fault, sizeof(fault));
		if (!sim_proc_can_act(s, p))
			snprintf(act, sizeof(act), "%s", p->busy ? "(waiting)" : "(frozen)");
		else
			sim_proc_turn(s, p, d->choice, act, sizeof(act));
		sim_background(s, beats, sizeof(beats));
		if (d->actor == SIM_OPERATOR)
			snprintf(who, sizeof(who), "op");
		else
			snprintf(who, sizeof(who), "p%d", d->actor);
		snprintf(line, sizeof(line), "%4d t=%-6.0f %-4s %-30s %s%.*s", s->step, s->vnow,
			 who, fault[0] ? fault : "-", d->quiet ? "[quiet] " : "", 300, act);
		if (beats[0]) {
			size_t l = strlen(line);

			snprintf(line + l, sizeof(line) - l, "%s", beats);
		}
		for (int i = 0; i <= SIM_MAX_PROCS; i++) {
			sim_proc *w = &s->procs[i];

			if (was_waiting[i] && !w->busy && w != p) {
				size_t l = strlen(line);

				snprintf(line + l, sizeof(line) - l, " | %s's wait ended: %s",
					 i == SIM_OPERATOR ? "op" : w->owner, w->result);
			}
		}
		trace_add(s, line);
		if (sim_check(s) < 0) {
			rc = 1;
			break;
		}
		if (d->quiet && !quiet_ok && sim_check_live(s, 0) == 0) {
			int any = 0;

			for (int i = 0; i <= SIM_MAX_PROCS; i++)
				any |= s->procs[i].has_thread && s->procs[i].busy;
			if (!any) {
				trace_add(s,
					  "     quiet: every execution ended, every run complete");
				quiet_ok = 1;
				break;
			}
		}
	}
	if (rc == 0 && !quiet_ok && pl->n > 0 && pl->d[pl->n - 1].quiet && sim_check_live(s, 1) < 0)
		rc = 1;
	if (rc == 1 && s->step >= pl->n)
		s->step = pl->n - 1;
done:
	/* End every session of the run's database: blocked threads then return. */
	if (s->admin && PQstatus(s->admin) == CONNECTION_OK)
		PQclear(sim_q(s,
			      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
			      "datname = current_database() AND pid <> pg_backend_pid()",
			      0, NULL));
	for (int i = 0; i <= SIM_MAX_PROCS; i++)
		sim_proc_stop(s, &s->procs[i]);
	PQfinish(s->admin);
	s->admin = NULL;
	drop_db(name);
	return rc;
}

static void sim_reset(sim *s, const struct opts *o)
{
	for (int i = 0; i < s->ntrace; i++)
		free(s->trace[i]);
	free(s->trace);
	memset(s, 0, sizeof(*s));
	s->seed = o->seed;
	s->nprocs = o->procs;
	s->bug = o->bug;
	s->verbose = o->verbose;
	s->epoch = "2030-01-01 00:00:00+00";
}

static void print_trace(const sim *s)
{
	for (int i = 0; i < s->ntrace; i++)
		printf("%s\n", s->trace[i]);
}

/* ---- the shrinker ---- */

/* Replay @p pl; 1 when it fails with @p invariant (its steps cut after the
 * failing one in @p pl). */
static int still_fails(sim *s, const struct opts *o, plan *pl, const char *invariant)
{
	int rc;

	sim_reset(s, o);
	rc = run(s, pl);
	if (rc == 1 && strcmp(s->invariant, invariant) == 0) {
		pl->n = s->step + 1;
		return 1;
	}
	return 0;
}

static void shrink(sim *s, const struct opts *o, plan *pl, const char *invariant, int budget)
{
	plan c = { calloc((size_t)pl->n, sizeof(*pl->d)), 0 };
	int runs = 0;
	time_t t0 = time(NULL);

	for (int chunk = pl->n / 2; chunk >= 1 && runs < budget; chunk /= 2) {
		for (int i = 0; i < pl->n && runs < budget && time(NULL) - t0 < 120;) {
			int k = 0, carry = 0;

			/* The removed steps' time goes to the next step kept: what
			 * stays happens at the same virtual times. */
			for (int j = 0; j < pl->n; j++) {
				if (j >= i && j < i + chunk && !pl->d[j].quiet) {
					carry += pl->d[j].advance;
					continue;
				}
				c.d[k] = pl->d[j];
				c.d[k++].advance += carry;
				carry = 0;
			}
			c.n = k;
			if (k == pl->n) { /* only quiet steps there: kept */
				i += chunk;
				continue;
			}
			runs++;
			if (k > 0 && still_fails(s, o, &c, invariant)) {
				memcpy(pl->d, c.d, (size_t)c.n * sizeof(*c.d));
				pl->n = c.n;
				printf("shrink: %d steps still fail (%s)\n", pl->n, invariant);
			} else {
				i += chunk;
			}
		}
	}
	/* Then each fault alone: a step kept may not need its fault. */
	for (int i = 0; i < pl->n && runs < budget && time(NULL) - t0 < 120; i++) {
		if (pl->d[i].fault == F_NONE)
			continue;
		memcpy(c.d, pl->d, (size_t)pl->n * sizeof(*c.d));
		c.n = pl->n;
		c.d[i].fault = F_NONE;
		runs++;
		if (still_fails(s, o, &c, invariant)) {
			memcpy(pl->d, c.d, (size_t)c.n * sizeof(*c.d));
			pl->n = c.n;
			printf("shrink: step %d needs no fault\n", i);
		}
	}
	free(c.d);
	printf("shrink: %d replays\n", runs);
}

/* ---- main ---- */

static int usage(void)
{
	fprintf(stderr, "usage: sim [--seed S] [--seeds K] [--steps N] [--procs P] [--quiet Q] "
			"[--bug nofence|ignore-lost|nocas] [--trace FILE] [--trace-out FILE] "
			"[--no-shrink] [--expect-violation] [--keep-going] [-v]\n");
	return 2;
}

static int parse(struct opts *o, int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--no-shrink") == 0) {
			o->shrink = 0;
			continue;
		}
		if (strcmp(a, "--expect-violation") == 0) {
			o->expect = 1;
			continue;
		}
		if (strcmp(a, "--keep-going") == 0) {
			o->keep_going = 1;
			continue;
		}
		if (strcmp(a, "-v") == 0) {
			o->verbose = 1;
			continue;
		}
		if (!v)
			return -1;
		i++;
		if (strcmp(a, "--seed") == 0)
			o->seed = strtoull(v, NULL, 10);
		else if (strcmp(a, "--seeds") == 0)
			o->seeds = atoi(v);
		else if (strcmp(a, "--steps") == 0)
			o->steps = atoi(v);
		else if (strcmp(a, "--procs") == 0)
			o->procs = atoi(v);
		else if (strcmp(a, "--quiet") == 0)
			o->quiet = atoi(v);
		else if (strcmp(a, "--trace") == 0)
			o->trace_in = v;
		else if (strcmp(a, "--trace-out") == 0)
			o->trace_out = v;
		else if (strcmp(a, "--bug") == 0) {
			o->bug = BUG_NONE;
			for (int b = 1; b < NBUGS; b++)
				if (strcmp(v, bug_names[b]) == 0)
					o->bug = (enum sim_bug)b;
			if (o->bug == BUG_NONE)
				return -1;
		} else
			return -1;
	}
	if (o->procs < 1 || o->procs > SIM_MAX_PROCS || o->steps < 0 || o->quiet < 0)
		return -1;
	return 0;
}

int main(int argc, char **argv)
{
	struct opts o = {
		.seed = 1, .seeds = 1, .steps = 200, .procs = 3, .quiet = 150, .shrink = 1
	};
	static sim s;
	char outpath[512];
	int failed = 0, nviolations = 0;

	if (parse(&o, argc, argv) < 0)
		return usage();
	if (getenv("CBATCH_SIM_SEEDS"))
		o.seeds = atoi(getenv("CBATCH_SIM_SEEDS"));
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (make_template() < 0)
		return 2;
	for (int k = 0; k < (o.trace_in ? 1 : o.seeds) && !failed; k++) {
		plan pl = { 0 };
		int rc;
		char invariant[64];
		int len;

		if (o.trace_in) {
			if (read_plan(&pl, &o, o.trace_in) < 0) {
				fprintf(stderr, "sim: cannot read %s\n", o.trace_in);
				return 2;
			}
		} else {
			make_plan(&pl, &o);
		}
		sim_reset(&s, &o);
		rc = run(&s, &pl);
		if (rc < 0) {
			free(pl.d);
			failed = 2;
			break;
		}
		if (rc == 0) {
			printf("seed %llu: %d steps, %d procs, bug %s: no violation (%d trace "
			       "lines)\n",
			       (unsigned long long)o.seed, pl.n, o.procs, bug_names[o.bug],
			       s.ntrace);
			free(pl.d);
			o.seed++;
			continue;
		}
		failed = 1;
		len = s.step + 1;
		snprintf(invariant, sizeof(invariant), "%s", s.invariant);
		printf("VIOLATION seed %llu step %d invariant %s: %s\n", (unsigned long long)o.seed,
		       s.step, s.invariant, s.violation);
		printf("---- trace (seed %llu, procs %d, bug %s) ----\n",
		       (unsigned long long)o.seed, o.procs, bug_names[o.bug]);
		print_trace(&s);
		printf("replay: sim --seed %llu --steps %d --procs %d --quiet %d%s%s\n",
		       (unsigned long long)o.seed, o.steps, o.procs, o.quiet,
		       o.bug ? " --bug " : "", o.bug ? bug_names[o.bug] : "");
		pl.n = len;
		if (o.shrink) {
			shrink(&s, &o, &pl, invariant, 400);
			sim_reset(&s, &o);
			rc = run(&s, &pl);
			printf("---- shortest trace found: %d steps (of %d), invariant %s%s ----\n",
			       pl.n, len, invariant,
			       rc == 1 && strcmp(s.invariant, invariant) == 0 ?
				       "" :
				       " (did not fail again on its last replay)");
			print_trace(&s);
			if (rc == 1)
				printf("VIOLATION (shrunk) step %d invariant %s: %s\n", s.step,
				       s.invariant, s.violation);
			snprintf(outpath, sizeof(outpath), "%s",
				 o.trace_out ? o.trace_out : "sim-shrunk.trace");
			if (write_plan(outpath, &pl, &o) == 0)
				printf("replay the shortest: sim --trace %s\n", outpath);
			if (o.expect && pl.n < len && rc == 1 &&
			    strcmp(s.invariant, invariant) == 0)
				failed = 0, o.expect = 2;
		} else if (o.expect) {
			failed = 0, o.expect = 2;
		}
		free(pl.d);
		if (!o.keep_going || o.trace_in)
			break;
		nviolations++;
		failed = 0; /* on to the next seed; the exit status says it at the end */
		o.seed++;
	}
	if (nviolations) {
		printf("%d seed(s) violated an invariant\n", nviolations);
		failed = 1;
	}
	sim_reset(&s, &o);
	cbt_db_drop(base_db);
	if (o.expect == 1 && !failed) {
		printf("expected a violation, found none\n");
		return 1;
	}
	return failed ? (failed == 2 ? 2 : 1) : 0;
}
