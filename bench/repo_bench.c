/*
 * cbatch-repo-bench: what the job repository costs by itself.
 *
 *   cbatch-repo-bench [--launches M] [--chunk C] [--chunks K] [--rounds R] [--db CONNINFO]
 *
 * 1. Launches. M launches of a job with one empty tasklet step, each a new
 *    instance (distinct identifying parameter): lock acquire, instance and
 *    execution creation, heartbeat session, step execution with its
 *    checkpoint, end of step and job, lock release. Launches per second,
 *    and the launch broken down by the SQL it runs: every libpq call the
 *    library makes is timed (the binary is linked with --wrap for them).
 *
 * 2. One chunk's bookkeeping. A chunk step whose reader yields C tiny items
 *    from memory (storing its position like the keyset reader) and whose
 *    writer writes nothing: each chunk is BEGIN, the checkpoint (step counts,
 *    version, execution context, fencing) and COMMIT, one round trip.
 *    Against the same loop by hand with libpq on the same reader: a no-op
 *    transaction ("BEGIN; COMMIT", which writes no WAL) and a one-row write
 *    transaction (which, like any chunk, waits for its WAL flush).
 *    Sequential breakdown per chunk: begin+read (the reader's C calls) and
 *    checkpoint+commit (from the writer's call to the next chunk's first read).
 */
#include <cbatch.h>

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "bench_util.h"

/* ---------------------------------------------------------------- libpq timing */

#define MAX_LABELS 64

struct label {
	char name[72];
	long long count;
	double secs;
};

static struct label g_labels[MAX_LABELS];
static int g_nlabels;
static int g_recording;
static __thread int g_depth;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static void record(const char *kind, const char *text, double secs)
{
	char name[72];
	size_t n = 0;
	int i;

	n = (size_t)snprintf(name, sizeof(name), "%s", kind);
	/* the text's start, blanks collapsed; statement names without their number */
	for (; text && *text && n + 1 < sizeof(name); text++) {
		char ch = *text == '\n' || *text == '\t' ? ' ' : *text;

		if (ch == ' ' && n > 0 && name[n - 1] == ' ')
			continue;
		name[n++] = ch;
	}
	name[n] = '\0';
	/* statement names and DEALLOCATEs end in a per-process number */
	while (n > 0 && (name[n - 1] >= '0' && name[n - 1] <= '9'))
		name[--n] = '\0';
	pthread_mutex_lock(&g_mu);
	for (i = 0; i < g_nlabels; i++)
		if (strcmp(g_labels[i].name, name) == 0)
			break;
	if (i == g_nlabels && g_nlabels < MAX_LABELS)
		snprintf(g_labels[g_nlabels++].name, sizeof(g_labels[0].name), "%s", name);
	if (i < g_nlabels) {
		g_labels[i].count++;
		g_labels[i].secs += secs;
	}
	pthread_mutex_unlock(&g_mu);
}

PGresult *__real_PQexec(PGconn *conn, const char *query);
PGresult *__real_PQexecParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
			      const char *const *paramValues, const int *paramLengths,
			      const int *paramFormats, int resultFormat);
PGresult *__real_PQexecPrepared(PGconn *conn, const char *stmtName, int nParams,
				const char *const *paramValues, const int *paramLengths,
				const int *paramFormats, int resultFormat);
PGresult *__real_PQprepare(PGconn *conn, const char *stmtName, const char *query, int nParams,
			   const Oid *paramTypes);
PGconn *__real_PQconnectdbParams(const char *const *keywords, const char *const *values,
				 int expand_dbname);
void __real_PQfinish(PGconn *conn);
PGresult *__real_cb__repo_exec(PGconn *conn, const char *what, const char *sql, int nparams,
			       const char *const *values, cb_error *err);

PGresult *__wrap_PQexec(PGconn *conn, const char *query);
PGresult *__wrap_PQexecParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
			      const char *const *paramValues, const int *paramLengths,
			      const int *paramFormats, int resultFormat);
PGresult *__wrap_PQexecPrepared(PGconn *conn, const char *stmtName, int nParams,
				const char *const *paramValues, const int *paramLengths,
				const int *paramFormats, int resultFormat);
PGresult *__wrap_PQprepare(PGconn *conn, const char *stmtName, const char *query, int nParams,
			   const Oid *paramTypes);
PGconn *__wrap_PQconnectdbParams(const char *const *keywords, const char *const *values,
				 int expand_dbname);
void __wrap_PQfinish(PGconn *conn);
PGresult *__wrap_cb__repo_exec(PGconn *conn, const char *what, const char *sql, int nparams,
			       const char *const *values, cb_error *err);

#define TIMED(kind, text, call)                                                                    \
	do {                                                                                       \
		double t0_ = bench_now();                                                          \
		g_depth++;                                                                         \
		call;                                                                              \
		g_depth--;                                                                         \
		if (g_recording && g_depth == 0)                                                   \
			record(kind, text, bench_now() - t0_);                                     \
	} while (0)

PGresult *__wrap_PQexec(PGconn *conn, const char *query)
{
	PGresult *r;

	TIMED("exec: ", query, r = __real_PQexec(conn, query));
	return r;
}

PGresult *__wrap_PQexecParams(PGconn *conn, const char *command, int nParams, const Oid *paramTypes,
			      const char *const *paramValues, const int *paramLengths,
			      const int *paramFormats, int resultFormat)
{
	PGresult *r;

	TIMED("exec: ", command,
	      r = __real_PQexecParams(conn, command, nParams, paramTypes, paramValues, paramLengths,
				      paramFormats, resultFormat));
	return r;
}

PGresult *__wrap_PQexecPrepared(PGconn *conn, const char *stmtName, int nParams,
				const char *const *paramValues, const int *paramLengths,
				const int *paramFormats, int resultFormat)
{
	PGresult *r;

	TIMED("prepared ", stmtName,
	      r = __real_PQexecPrepared(conn, stmtName, nParams, paramValues, paramLengths,
					paramFormats, resultFormat));
	return r;
}

PGresult *__wrap_PQprepare(PGconn *conn, const char *stmtName, const char *query, int nParams,
			   const Oid *paramTypes)
{
	PGresult *r;

	TIMED("prepare: ", query, r = __real_PQprepare(conn, stmtName, query, nParams, paramTypes));
	return r;
}

PGconn *__wrap_PQconnectdbParams(const char *const *keywords, const char *const *values,
				 int expand_dbname)
{
	PGconn *r;

	TIMED("connect (heartbeat session)", "",
	      r = __real_PQconnectdbParams(keywords, values, expand_dbname));
	return r;
}

void __wrap_PQfinish(PGconn *conn)
{
	TIMED("disconnect", "", __real_PQfinish(conn));
}

PGresult *__wrap_cb__repo_exec(PGconn *conn, const char *what, const char *sql, int nparams,
			       const char *const *values, cb_error *err)
{
	PGresult *r;

	TIMED("repo: ", what, r = __real_cb__repo_exec(conn, what, sql, nparams, values, err));
	return r;
}

/* ---------------------------------------------------------------- part 1: launches */

static int empty_tasklet(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
			 cb_error *err)
{
	return CB_DONE;
}

static long long unique_id(void)
{
	static long long seq;
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (long long)ts.tv_sec * 1000000 + (++seq % 1000000);
}

static int cmp_label(const void *a, const void *b)
{
	const struct label *x = a, *y = b;

	return x->secs < y->secs ? 1 : x->secs > y->secs ? -1 : 0;
}

static int bench_launches(PGconn *conn, int m)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_launch_options lo = CB_LAUNCH_OPTIONS_INIT;
	cb_job *job = NULL;
	double *t = calloc((size_t)m, sizeof(double)), total = 0, acc = 0, t_all;
	double srv0, srv1;
	long long base = unique_id();

	step.name = "empty";
	step.kind = CB_STEP_TASKLET;
	step.tasklet = empty_tasklet;
	if (!t || cb_job_new(&job, "bench-launch", &err) < 0 ||
	    cb_job_add_step(job, &step, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.message);
		return 1;
	}
	/* warm-up: caches, first-time catalog lookups */
	for (int i = 0; i < 10; i++) {
		cb_params *p = NULL;
		cb_job_result res;

		cb_params_new(&p, &err);
		cb_params_add_long(p, "bench.launch", base - 1000 - i, 1, &err);
		if (cb_job_launch(&res, conn, job, p, &lo, &err) < 0) {
			fprintf(stderr, "bench: launch: %s\n", err.message);
			return 1;
		}
		cb_params_free(p);
	}
	g_nlabels = 0;
	srv0 = bench_proc_cpu(PQbackendPID(conn), 0, NULL);
	t_all = bench_now();
	for (int i = 0; i < m; i++) {
		cb_params *p = NULL;
		cb_job_result res;
		double t0;
		int rc;

		cb_params_new(&p, &err);
		cb_params_add_long(p, "bench.launch", base + i, 1, &err);
		g_recording = 1;
		t0 = bench_now();
		rc = cb_job_launch(&res, conn, job, p, &lo, &err);
		t[i] = bench_now() - t0;
		g_recording = 0;
		cb_params_free(p);
		if (rc < 0 || res.status != CB_STATUS_COMPLETED) {
			fprintf(stderr, "bench: launch %d: %s %s\n", i, err.message,
				res.exit_message);
			return 1;
		}
		total += t[i];
	}
	t_all = bench_now() - t_all;
	srv1 = bench_proc_cpu(PQbackendPID(conn), 0, NULL);
	printf("\nlaunches: %d launches of an empty one-step tasklet job, each a new instance\n",
	       m);
	printf("| launches/s | median ms | min ms | p95 ms | max ms | job's backend CPU ms/launch |\n");
	printf("|---:|---:|---:|---:|---:|---:|\n");
	{
		double med = bench_median(t, (size_t)m);

		printf("| %.0f | %.2f | %.2f | %.2f | %.2f | %.2f |\n", (double)m / t_all,
		       med * 1e3, t[0] * 1e3, t[(size_t)((m - 1) * 0.95)] * 1e3, t[m - 1] * 1e3,
		       (srv1 - srv0) * 1e3 / m);
	}
	printf("\nsequential breakdown of one launch (mean over %d; the library's libpq calls, "
	       "in order of cost):\n",
	       m);
	printf("| call | calls/launch | ms/launch | share |\n|---|---:|---:|---:|\n");
	qsort(g_labels, (size_t)g_nlabels, sizeof(g_labels[0]), cmp_label);
	for (int i = 0; i < g_nlabels; i++) {
		printf("| %s | %.1f | %.3f | %.0f%% |\n", g_labels[i].name,
		       (double)g_labels[i].count / m, g_labels[i].secs * 1e3 / m,
		       100 * g_labels[i].secs / total);
		acc += g_labels[i].secs;
	}
	printf("| client work between calls (params, key hash, JSON, thread start/join) | | %.3f | "
	       "%.0f%% |\n",
	       (total - acc) * 1e3 / m, 100 * (total - acc) / total);
	printf("| total | | %.3f | 100%% |\n", total * 1e3 / m);
	cb_job_free(job);
	free(t);
	return 0;
}

/* ---------------------------------------------------------------- part 2: chunks */

struct chunk_run {
	long long chunk, chunks;
	double *t_start; /* chunks + 1: first read of each chunk; [chunks]: the final read */
	double *t_write; /* chunks */
	long long nwrites;
};

struct memreader {
	struct chunk_run *cr;
	long long next, total;
	int items[64];
};

static int mem_read(void *state, cb_tx *tx, void **item, cb_error *err)
{
	struct memreader *m = state;

	if (m->next % m->cr->chunk == 0 && m->cr->t_start)
		m->cr->t_start[m->next / m->cr->chunk] = bench_now();
	if (m->next >= m->total)
		return CB_DONE;
	*item = &m->items[m->next % 64];
	m->next++;
	return 0;
}

/* Like the keyset reader: the position as {"last_key": ["<n>"]}. */
static int mem_update(void *state, json_t *out, cb_error *err)
{
	struct memreader *m = state;
	char key[24];

	snprintf(key, sizeof(key), "%lld", m->next);
	if (json_object_set_new(out, "last_key", json_pack("[s]", key)) < 0)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	return 0;
}

static int null_write(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err)
{
	struct chunk_run *cr = state;

	/* called once per chunk, after the chunk's reads: nothing is sent */
	if (n > 0 && cr->nwrites < cr->chunks)
		cr->t_write[cr->nwrites++] = bench_now();
	return 0;
}

static int build_chunk(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	struct chunk_run *cr = user;
	struct memreader *m = calloc(1, sizeof(*m));

	if (!m)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	m->cr = cr;
	m->total = cr->chunk * cr->chunks;
	parts->reader = (cb_reader){ .version = CB_READER_VERSION,
				     .state = m,
				     .read = mem_read,
				     .update = mem_update,
				     .free = free };
	parts->writers[0] =
		(cb_writer){ .version = CB_WRITER_VERSION, .state = cr, .write = null_write };
	parts->nwriters = 1;
	return 0;
}

struct chunk_stats {
	double per_chunk, read, commit; /* medians, seconds */
	double server;                  /* backend CPU per chunk, seconds */
	double client;                  /* client CPU per chunk, seconds */
	double setup;                   /* cbatch: launch time outside the chunks */
};

static void stats_from(struct chunk_stats *s, struct chunk_run *cr)
{
	double *rd = calloc((size_t)cr->chunks, sizeof(double));
	double *cm = calloc((size_t)cr->chunks, sizeof(double));
	double *pc = calloc((size_t)cr->chunks, sizeof(double));

	for (long long k = 0; k < cr->chunks; k++) {
		rd[k] = cr->t_write[k] - cr->t_start[k];
		cm[k] = cr->t_start[k + 1] - cr->t_write[k];
		pc[k] = cr->t_start[k + 1] - cr->t_start[k];
	}
	s->read = bench_median(rd, (size_t)cr->chunks);
	s->commit = bench_median(cm, (size_t)cr->chunks);
	s->per_chunk = bench_median(pc, (size_t)cr->chunks);
	free(rd);
	free(cm);
	free(pc);
}

static int chunk_cbatch(PGconn *conn, struct chunk_run *cr, struct chunk_stats *s)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_launch_options lo = CB_LAUNCH_OPTIONS_INIT;
	cb_params *p = NULL;
	cb_job_result res;
	cb_job *job = NULL;
	double t0, t1, c0, c1, s0, s1;
	int rc;

	step.name = "chunks";
	step.kind = CB_STEP_CHUNK;
	step.chunk_size = (size_t)cr->chunk;
	step.build = build_chunk;
	step.user = cr;
	if (cb_job_new(&job, "bench-chunk", &err) < 0 || cb_job_add_step(job, &step, &err) < 0 ||
	    cb_params_new(&p, &err) < 0 ||
	    cb_params_add_long(p, "bench.run", unique_id(), 1, &err) < 0) {
		fprintf(stderr, "bench: %s\n", err.message);
		return -1;
	}
	cr->nwrites = 0;
	s0 = bench_proc_cpu(PQbackendPID(conn), 0, NULL);
	c0 = bench_self_cpu();
	t0 = bench_now();
	rc = cb_job_launch(&res, conn, job, p, &lo, &err);
	t1 = bench_now();
	c1 = bench_self_cpu();
	s1 = bench_proc_cpu(PQbackendPID(conn), 0, NULL);
	cb_params_free(p);
	cb_job_free(job);
	if (rc < 0 || res.status != CB_STATUS_COMPLETED) {
		fprintf(stderr, "bench: chunk job: %s %s\n", err.message, res.exit_message);
		return -1;
	}
	stats_from(s, cr);
	s->setup = (t1 - t0) - (cr->t_start[cr->chunks] - cr->t_start[0]);
	s->server = (s1 - s0) / (double)cr->chunks;
	s->client = (c1 - c0) / (double)cr->chunks;
	return 0;
}

static int chunk_libpq(PGconn *conn, struct chunk_run *cr, const char *sql, struct chunk_stats *s)
{
	struct memreader m;
	double c0, c1, s0, s1;

	memset(&m, 0, sizeof(m));
	m.cr = cr;
	m.total = cr->chunk * cr->chunks;
	s0 = bench_proc_cpu(PQbackendPID(conn), 0, NULL);
	c0 = bench_self_cpu();
	for (long long k = 0;; k++) {
		void *item;
		PGresult *res;
		int rc = 0;

		for (long long i = 0; i < cr->chunk && (rc = mem_read(&m, NULL, &item, NULL)) == 0;
		     i++)
			;
		if (rc == CB_DONE)
			break;
		cr->t_write[k] = bench_now();
		res = PQexec(conn, sql);
		if (PQresultStatus(res) != PGRES_COMMAND_OK) {
			fprintf(stderr, "bench: %s: %s", sql, PQerrorMessage(conn));
			PQclear(res);
			return -1;
		}
		PQclear(res);
	}
	c1 = bench_self_cpu();
	s1 = bench_proc_cpu(PQbackendPID(conn), 0, NULL);
	stats_from(s, cr);
	s->setup = 0;
	s->server = (s1 - s0) / (double)cr->chunks;
	s->client = (c1 - c0) / (double)cr->chunks;
	return 0;
}

static int bench_chunks(PGconn *conn, long long chunk, long long chunks, int rounds)
{
	static const char *const names[3] = { "cbatch chunk (BEGIN, checkpoint, COMMIT)",
					      "libpq no-op tx (BEGIN; COMMIT)",
					      "libpq 1-row write tx (BEGIN; UPDATE; COMMIT)" };
	static const char write_sql[] =
		"BEGIN; UPDATE bench_chunk_counter SET n = n + 1 WHERE id = 1; COMMIT";
	struct chunk_run cr = { chunk, chunks, NULL, NULL, 0 };
	double v[3][5][32];
	struct chunk_stats s;
	double setup = 0;

	cr.t_start = calloc((size_t)chunks + 1, sizeof(double));
	cr.t_write = calloc((size_t)chunks, sizeof(double));
	if (!cr.t_start || !cr.t_write || rounds > 32)
		return 1;
	bench_exec(conn, "CREATE TABLE IF NOT EXISTS bench_chunk_counter (id int PRIMARY KEY, "
			 "n bigint NOT NULL); "
			 "INSERT INTO bench_chunk_counter VALUES (1, 0) ON CONFLICT DO NOTHING");
	printf("\nchunk bookkeeping: chunks of %lld in-memory items, nothing written; %lld chunks "
	       "per run, %d rounds (medians)\n",
	       chunk, chunks, rounds);
	for (int r = 0; r < rounds; r++) {
		for (int k = 0; k < 3; k++) {
			int rc = k == 0 ? chunk_cbatch(conn, &cr, &s) :
					  chunk_libpq(conn, &cr,
						      k == 1 ? "BEGIN; COMMIT" : write_sql, &s);

			if (rc < 0)
				return 1;
			if (k == 0)
				setup = s.setup;
			v[k][0][r] = s.per_chunk;
			v[k][1][r] = s.read;
			v[k][2][r] = s.commit;
			v[k][3][r] = s.server;
			v[k][4][r] = s.client;
		}
	}
	printf("| per chunk of %lld | total us | begin+read us | checkpoint+commit us | client CPU "
	       "us | server CPU us (backend) |\n",
	       chunk);
	printf("|---|---:|---:|---:|---:|---:|\n");
	for (int k = 0; k < 3; k++) {
		double m[5];

		for (int j = 0; j < 5; j++)
			m[j] = bench_median(v[k][j], (size_t)rounds);
		printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f |\n", names[k], m[0] * 1e6,
		       m[1] * 1e6, m[2] * 1e6, m[4] * 1e6, m[3] * 1e6);
	}
	printf("(cbatch: the step's one-time cost outside the chunks - launch, lock, heartbeat "
	       "session, step start and end - in the last round: %.2f ms)\n",
	       setup * 1e3);
	free(cr.t_start);
	free(cr.t_write);
	return 0;
}

/* ---------------------------------------------------------------- main */

int main(int argc, char **argv)
{
	cb_error err = CB_ERROR_INIT;
	const char *db = NULL;
	long long launches = 200, chunk = 1000, chunks = 1000;
	int rounds = 3, only_launch = 0, only_chunk = 0, rc = 0;
	PGconn *conn;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;

		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			printf("usage: cbatch-repo-bench [--launches M] [--chunk C] [--chunks K] "
			       "[--rounds R] [--db CONNINFO] [--only launch|chunk]\n"
			       "  --launches M  empty launches to time (default 200)\n"
			       "  --chunk C     items per chunk (default 1000)\n"
			       "  --chunks K    chunks per run (default 1000)\n"
			       "  --rounds R    runs of each chunk loop (default 3)\n");
			return 0;
		}
		if (!val) {
			fprintf(stderr, "bench: %s needs a value (see --help)\n", a);
			return 2;
		}
		i++;
		if (strcmp(a, "--launches") == 0)
			launches = bench_count(a, val);
		else if (strcmp(a, "--chunk") == 0)
			chunk = bench_count(a, val);
		else if (strcmp(a, "--chunks") == 0)
			chunks = bench_count(a, val);
		else if (strcmp(a, "--rounds") == 0)
			rounds = (int)bench_count(a, val);
		else if (strcmp(a, "--db") == 0)
			db = val;
		else if (strcmp(a, "--only") == 0 && strcmp(val, "launch") == 0)
			only_launch = 1;
		else if (strcmp(a, "--only") == 0 && strcmp(val, "chunk") == 0)
			only_chunk = 1;
		else {
			fprintf(stderr, "bench: unknown option %s (see --help)\n", a);
			return 2;
		}
	}
	if (rounds > 32 || launches > 1000000 || chunk > 1000000) {
		fprintf(stderr,
			"bench: --rounds at most 32, --launches and --chunk at most 1000000\n");
		return 2;
	}
	conn = bench_connect(db);
	bench_exec(conn, "SET client_min_messages = warning");
	if (cb_repo_schema_init(conn, NULL, NULL, &err) < 0) {
		fprintf(stderr, "bench: schema init: %s\n", err.message);
		return 1;
	}
	bench_print_machine(conn);
	if (!only_chunk)
		rc = bench_launches(conn, (int)launches);
	if (!rc && !only_launch)
		rc = bench_chunks(conn, chunk, chunks, rounds);
	PQfinish(conn);
	return rc;
}
