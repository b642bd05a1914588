/*
 * `serve` (issue 12, part 1): the real server binary started as a process on
 * a free loopback port (port 0, read back from its start line) against the
 * suite's own database, spoken to over real HTTP (libcurl).
 *
 * The repository holds real executions of the examples' ledger job: one
 * completed (with a parameter that is an HTML injection attempt), one failed
 * (a negative amount) and one running, held at its 51st chunk by a row lock
 * the test keeps; plus a few plain rows for paging. /metrics is checked by a
 * strict parser of the Prometheus text format; /readyz turns 503 when the
 * schema is dropped and when the database is gone; SIGTERM lets a request in
 * flight complete and the server exit 0.
 */
#include <ctype.h>
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cbatch/repository.h"
#include "cbtest.h"
#include "serve_client.h"

#define XSS "<img src=x onerror=alert(1)>"
#define CSP "default-src 'self'; script-src 'self'; object-src 'none'; frame-ancestors 'none'"

static char db[CBT_CONNINFO_MAX];
static char out[65536], errout[16384];

/* ---- the server process --------------------------------------------------- */

static struct server srv; /* the main one, over the fixture */
static PGconn *gate;      /* holds the running job at a row lock */
static pid_t running_pid;
static long long done_id, failed_id, running_id;

/* GET @p path from the main server; assert the status; the body as JSON. */
static json_t *get_json_from(int port, const char *path, long want)
{
	struct resp r;
	json_error_t jerr;
	json_t *v;
	char ct[128];

	if (http(&r, port, "GET", path, NULL, 0, NULL) < 0) {
		CBT_FAILF("GET %s: curl error %d", path, r.curl_rc);
		resp_free(&r);
		return NULL;
	}
	if (r.status != want)
		CBT_FAILF("GET %s: status %ld, expected %ld: %.500s", path, r.status, want, r.body);
	CBT_EQ_STR(header(&r, "Content-Type", ct, sizeof(ct)), "application/json");
	v = json_loads(r.body, 0, &jerr);
	if (!v)
		CBT_FAILF("GET %s: not JSON (%s): %.300s", path, jerr.text, r.body);
	resp_free(&r);
	return v;
}

static json_t *get_json(const char *path, long want)
{
	return get_json_from(srv.port, path, want);
}

/* An error document: {"error": {"status": want, "message": "..."}} whose
 * message contains @p needle. */
static void expect_error(const char *method, const char *path, long want, const char *needle)
{
	struct resp r;
	json_t *v, *e;

	http(&r, srv.port, method, path, NULL, 0, NULL);
	CBT_EQ_LL(r.status, want);
	v = json_loads(r.body, 0, NULL);
	e = json_object_get(v, "error");
	CBT_EQ_LL(json_integer_value(json_object_get(e, "status")), want);
	if (needle)
		CBT_CONTAINS(json_string_value(json_object_get(e, "message")), needle);
	json_decref(v);
	resp_free(&r);
}

/* ---- a strict checker of the Prometheus text format (0.0.4) --------------- */

static int metric_name_ok(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_' || s[0] == ':'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_' || s[i] == ':'))
			return 0;
	return 1;
}

static int label_name_ok(const char *s, size_t n)
{
	if (n == 0 || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
		return 0;
	for (size_t i = 1; i < n; i++)
		if (!(isalnum((unsigned char)s[i]) || s[i] == '_'))
			return 0;
	/* Reserved for Prometheus itself. */
	return !(n >= 2 && s[0] == '_' && s[1] == '_');
}

/* A float as Go's ParseFloat takes it in the exposition format. */
static int float_ok(const char *s)
{
	char *end;

	if (strcmp(s, "NaN") == 0 || strcmp(s, "+Inf") == 0 || strcmp(s, "-Inf") == 0)
		return 1;
	if (!*s || strpbrk(s, "xXpP") || strncasecmp(s + (*s == '-' || *s == '+'), "inf", 3) == 0 ||
	    strncasecmp(s + (*s == '-' || *s == '+'), "nan", 3) == 0)
		return 0;
	strtod(s, &end);
	return *end == '\0';
}

/* Probing the checker with bad input: refuse without recording a failure. */
static int checker_quiet;
#define REFUSE(...)                                                                                \
	do {                                                                                       \
		if (!checker_quiet)                                                                \
			CBT_FAILF(__VA_ARGS__);                                                    \
		return -1;                                                                         \
	} while (0)

struct family {
	char name[256];
	char type[16];
	int helped, samples;
};

/* The family a sample belongs to: itself, or for histograms and summaries
 * the name without _bucket/_sum/_count. */
static struct family *family_of(struct family *fs, size_t nf, const char *name, size_t n)
{
	static const char *const suffixes[] = { "_bucket", "_sum", "_count", NULL };

	for (size_t i = 0; i < nf; i++)
		if (strlen(fs[i].name) == n && strncmp(fs[i].name, name, n) == 0)
			return &fs[i];
	for (size_t k = 0; suffixes[k]; k++) {
		size_t sl = strlen(suffixes[k]);

		if (n > sl && strncmp(name + n - sl, suffixes[k], sl) == 0)
			for (size_t i = 0; i < nf; i++)
				if (strlen(fs[i].name) == n - sl &&
				    strncmp(fs[i].name, name, n - sl) == 0 &&
				    (strcmp(fs[i].type, "histogram") == 0 ||
				     strcmp(fs[i].type, "summary") == 0))
					return &fs[i];
	}
	return NULL;
}

/*
 * Check @p text; on the first violation record a failure naming the line and
 * return -1. Rules: lines end in \n; comments are "# HELP name text" (text
 * escapes only \\ and \n) or "# TYPE name type", each at most once per name,
 * TYPE before the family's first sample and a known type; a sample is
 * name[{label="value",...}] value [timestamp], names by the grammar, label
 * values escaping only \\ \" \n, no label twice, no series twice, a float
 * value; the samples of a family are contiguous.
 */
static int check_exposition(const char *text, size_t *nsamples)
{
	static struct family fs[512];
	static char series[4096][256];
	size_t nf = 0, ns = 0, lineno = 0;
	struct family *last = NULL;
	const char *p = text;

	*nsamples = 0;
	if (!*text || text[strlen(text) - 1] != '\n') {
		REFUSE("exposition does not end with a newline");
	}
	while (*p) {
		const char *eol = strchr(p, '\n');
		char line[4096];
		size_t len = (size_t)(eol - p);

		lineno++;
		if (len >= sizeof(line)) {
			REFUSE("line %zu too long", lineno);
		}
		memcpy(line, p, len);
		line[len] = '\0';
		p = eol + 1;
		if (len == 0)
			continue;
		if (line[0] == '#') {
			char kw[8], name[256];
			int off = 0;

			if (sscanf(line, "# %7s %255s %n", kw, name, &off) < 2 ||
			    !metric_name_ok(name, strlen(name))) {
				REFUSE("line %zu: bad comment: %s", lineno, line);
			}
			struct family *f = NULL;

			for (size_t i = 0; i < nf; i++)
				if (strcmp(fs[i].name, name) == 0)
					f = &fs[i];
			if (!f) {
				if (nf == sizeof(fs) / sizeof(fs[0]))
					return -1;
				f = &fs[nf++];
				memset(f, 0, sizeof(*f));
				snprintf(f->name, sizeof(f->name), "%s", name);
			}
			if (strcmp(kw, "HELP") == 0) {
				const char *t = line + off;

				if (f->helped++) {
					REFUSE("line %zu: second HELP for %s", lineno, name);
				}
				for (; *t; t++)
					if (*t == '\\' && t[1] != '\\' && t[1] != 'n') {
						REFUSE("line %zu: bad escape in HELP", lineno);
					} else if (*t == '\\')
						t++;
			} else if (strcmp(kw, "TYPE") == 0) {
				const char *t = line + off;

				if (f->type[0] || f->samples) {
					REFUSE("line %zu: TYPE for %s twice or after its samples",
					       lineno, name);
				}
				if (strcmp(t, "counter") && strcmp(t, "gauge") &&
				    strcmp(t, "histogram") && strcmp(t, "summary") &&
				    strcmp(t, "untyped")) {
					REFUSE("line %zu: unknown type '%s'", lineno, t);
				}
				snprintf(f->type, sizeof(f->type), "%s", t);
			} else {
				REFUSE("line %zu: comment other than HELP/TYPE: %s", lineno, line);
			}
			continue;
		}
		/* A sample. */
		{
			const char *s = line, *v;
			size_t n = strcspn(s, "{ ");
			struct family *f;
			char key[256], value[64];
			size_t keylen;

			if (!metric_name_ok(s, n)) {
				REFUSE("line %zu: bad metric name: %s", lineno, line);
			}
			f = family_of(fs, nf, s, n);
			if (!f || !f->type[0]) {
				REFUSE("line %zu: sample of a family without TYPE: %s", lineno,
				       line);
			}
			if (f != last && f->samples) {
				REFUSE("line %zu: samples of %s are not contiguous", lineno,
				       f->name);
			}
			last = f;
			f->samples++;
			v = s + n;
			if (*v == '{') {
				char names[32][128];
				size_t nl = 0;

				v++;
				while (*v != '}') {
					size_t ln = strcspn(v, "=");

					if (!label_name_ok(v, ln) || v[ln] != '=' ||
					    v[ln + 1] != '"' || ln >= 128 || nl == 32) {
						REFUSE("line %zu: bad label: %s", lineno, line);
					}
					for (size_t i = 0; i < nl; i++)
						if (strlen(names[i]) == ln &&
						    strncmp(names[i], v, ln) == 0) {
							REFUSE("line %zu: label twice", lineno);
						}
					snprintf(names[nl++], 128, "%.*s", (int)ln, v);
					v += ln + 2;
					while (*v && *v != '"') {
						if (*v == '\\') {
							if (v[1] != '\\' && v[1] != '"' &&
							    v[1] != 'n') {
								REFUSE("line %zu: bad escape in "
								       "label value",
								       lineno);
							}
							v++;
						}
						v++;
					}
					if (*v != '"') {
						REFUSE("line %zu: unterminated label value",
						       lineno);
					}
					v++;
					if (*v == ',')
						v++;
					else if (*v != '}') {
						REFUSE("line %zu: expected , or }", lineno);
					}
				}
				v++;
			}
			keylen = (size_t)(v - s);
			if (*v != ' ') {
				REFUSE("line %zu: no value: %s", lineno, line);
			}
			v++;
			n = strcspn(v, " ");
			if (n == 0 || n >= sizeof(value)) {
				REFUSE("line %zu: bad value: %s", lineno, line);
			}
			snprintf(value, sizeof(value), "%.*s", (int)n, v);
			if (!float_ok(value)) {
				REFUSE("line %zu: value '%s' is not a float", lineno, value);
			}
			v += n;
			if (*v == ' ') {
				char *end;

				strtoll(v + 1, &end, 10);
				if (end == v + 1 || *end) {
					REFUSE("line %zu: bad timestamp", lineno);
				}
			}
			snprintf(key, sizeof(key), "%.*s", (int)keylen, s);
			for (size_t i = 0; i < ns; i++)
				if (strcmp(series[i], key) == 0) {
					REFUSE("line %zu: series %s twice", lineno, key);
				}
			if (ns < sizeof(series) / sizeof(series[0]))
				snprintf(series[ns++], sizeof(series[0]), "%s", key);
			(*nsamples)++;
		}
	}
	return 0;
}

/* ---- the fixture ---------------------------------------------------------- */

static int run_examples(const char *conninfo, const char *const *args)
{
	const char *argv[20];
	size_t n = 0;

	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = conninfo;
	while (*args && n < 19)
		argv[n++] = *args++;
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

#define EX(...) run_examples(db, (const char *const[]){ __VA_ARGS__, NULL })

static int init(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
	return cbt_db_create(db, sizeof(db), "serve");
}

static int clean(void)
{
	if (srv.pid > 0)
		server_stop(&srv);
	if (running_pid > 0) {
		kill(running_pid, SIGKILL);
		cbt_wait(running_pid);
	}
	PQfinish(gate);
	cbt_db_drop(db);
	curl_global_cleanup();
	return 0;
}

static long long newest(PGconn *conn)
{
	return cbt_query_ll(conn, "SELECT max(job_execution_id) FROM batch_job_execution");
}

/* A completed, a failed and a running execution of ledger; 8 plain rows of
 * another job for paging; the server. */
static void test_fixture(void)
{
	PGconn *conn = cbt_connect(db);
	char log[4096];
	long long first;
	const char *argv[12];

	CBT_EQ_LL(EX("schema", "init"), 0);
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "1000"), 0);
	CBT_EQ_LL(EX("run", "ledger", "day:date=2026-06-01", "note=" XSS), 0);
	done_id = newest(conn);
	/* A negative amount fails the next run, naming the account. */
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "10"), 0);
	cbt_exec(conn, "UPDATE account SET amount = -1 WHERE id = (SELECT max(id) FROM account)");
	CBT_EQ_LL(EX("run", "ledger", "day:date=2026-06-02"), 1);
	failed_id = newest(conn);
	cbt_exec(conn, "UPDATE account SET amount = 1 WHERE amount < 0");
	/* The running one: its 51st chunk waits for a row we hold. */
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "2000"), 0);
	first = cbt_query_ll(conn, "SELECT min(id) FROM account WHERE NOT processed");
	gate = cbt_connect(db);
	cbt_exec(gate, "BEGIN");
	CBT_EQ_LL(cbt_queryp_ll(gate,
				"SELECT count(*) FROM (SELECT 1 FROM account WHERE id = $1 "
				"FOR UPDATE) x",
				"lld", first + 500),
		  1);
	snprintf(log, sizeof(log), "%s/serve-running-%d.log", cbt_tmpdir(), (int)getpid());
	argv[0] = cbt_examples_bin();
	argv[1] = "--db";
	argv[2] = db;
	argv[3] = "run";
	argv[4] = "ledger";
	argv[5] = "day:date=2026-06-03";
	argv[6] = "-chunk.size:long=10";
	argv[7] = NULL;
	running_pid = cbt_spawn(argv, log);
	if (!cbt_wait_until(conn, 60000,
			    "SELECT (count(*) >= 500)::int FROM ledger WHERE job_execution_id = "
			    "(SELECT max(job_execution_id) FROM batch_job_execution)") ||
	    !cbt_wait_until(conn, 60000,
			    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
			    "current_database() AND application_name = 'cbatch' AND "
			    "wait_event_type = 'Lock'"))
		CBT_FAILF("the running job did not reach its 51st chunk");
	running_id = newest(conn);
	/* Rows for paging: 8 completed executions of their own job. */
	cbt_exec(conn,
		 "INSERT INTO batch_job_instance (job_name, job_key) SELECT 'paging', "
		 " lpad(g::text, 32, '0') FROM generate_series(1, 8) g;"
		 "INSERT INTO batch_job_execution (job_instance_id, status, exit_code, start_time, "
		 " end_time, create_time) SELECT job_instance_id, 'COMPLETED', 'COMPLETED', "
		 " timestamptz '2026-01-01Z' + job_key::int * interval '1 hour', "
		 " timestamptz '2026-01-01Z' + job_key::int * interval '1 hour' + interval '5 s',"
		 " timestamptz '2026-01-01Z' + job_key::int * interval '1 hour' "
		 " FROM batch_job_instance WHERE job_name = 'paging' ORDER BY job_instance_id");
	/* Its cases assert what they just wrote: no reused snapshot. */
	CBT_EQ_LL(server_start(
			  &srv, db,
			  (const char *const[]){ "--pool", "2", "--snapshot-interval", "0", NULL }),
		  0);
	CBT_CONTAINS(read_file(srv.log, log, sizeof(log)) == 0 ? log : "", "read-only");
	PQfinish(conn);
}

#define NEED_SERVER()                                                                              \
	do {                                                                                       \
		if (srv.pid <= 0 || !srv.port) {                                                   \
			CBT_FAILF("no server (the fixture failed)");                               \
			return;                                                                    \
		}                                                                                  \
	} while (0)

/* ---- the tests ------------------------------------------------------------ */

static void test_metrics_exposition(void)
{
	struct resp r;
	char ct[128], cc[64];
	size_t n;
	const char *argv[6] = { cbt_cli_bin(), "--db", db, "metrics", NULL };

	NEED_SERVER();
	CBT_EQ_LL(http(&r, srv.port, "GET", "/metrics", NULL, 0, NULL), 0);
	CBT_EQ_LL(r.status, 200);
	CBT_EQ_STR(header(&r, "Content-Type", ct, sizeof(ct)), "text/plain; version=0.0.4");
	CBT_EQ_STR(header(&r, "Cache-Control", cc, sizeof(cc)), "no-store");
	CBT_EQ_LL(check_exposition(r.body, &n), 0);
	CU_ASSERT(n >= 10);
	CBT_CONTAINS(r.body, "# TYPE cbatch_lock_acquire_success_total counter\n");
	CBT_CONTAINS(r.body, "cbatch_items_read_total{batch_job=\"ledger\"}");
	/* The same families as `metrics` prints (values of a running job move). */
	CBT_EQ_LL(cbt_run(argv, out, sizeof(out), errout, sizeof(errout)), 0);
	for (const char *p = out; (p = strstr(p, "# TYPE ")) != NULL; p++) {
		char line[256];

		snprintf(line, sizeof(line), "%.*s", (int)strcspn(p, "\n") + 1, p);
		CBT_CONTAINS(r.body, line);
	}
	resp_free(&r);
	/* The checker itself refuses what Prometheus would. */
	CBT_EQ_LL(check_exposition("# TYPE a counter\na 1\n", &n), 0);
	{
		static const char *const bad[] = {
			"a 1\n",                                     /* no TYPE */
			"# TYPE a counter\n# TYPE a counter\na 1\n", /* TYPE twice */
			"# TYPE a counter\na{b=\"x\\q\"} 1\n",       /* bad escape */
			"# TYPE a counter\na{b=\"x\"} one\n",        /* not a float */
			"# TYPE 1a counter\n1a 1\n",                 /* bad name */
			"# TYPE a counter\na 1",                     /* no final newline */
			"# TYPE a counter\na{b=\"1\",b=\"2\"} 1\n",  /* label twice */
			"# TYPE a counter\n# TYPE b gauge\na 1\nb 1\na{x=\"1\"} 2\n",
			NULL
		};
		checker_quiet = 1;
		for (size_t i = 0; bad[i]; i++) {
			int rc = check_exposition(bad[i], &n);

			if (rc != -1)
				CBT_FAILF("the checker accepted case %zu", i);
		}
		checker_quiet = 0;
	}
}

static void test_health_and_headers(void)
{
	static const char *const paths[] = { "/healthz",     "/readyz",
					     "/metrics",     "/api/v1/info",
					     "/api/v1/jobs", "/api/v1/executions?limit=nope",
					     "/nope",        NULL };
	struct resp r;
	char v[256];

	NEED_SERVER();
	CBT_EQ_LL(http(&r, srv.port, "GET", "/healthz", NULL, 0, NULL), 0);
	CBT_EQ_LL(r.status, 200);
	CBT_EQ_STR(r.body, "ok");
	resp_free(&r);
	CBT_EQ_LL(http(&r, srv.port, "GET", "/readyz", NULL, 0, NULL), 0);
	CBT_EQ_LL(r.status, 200);
	CBT_EQ_STR(r.body, "ok");
	resp_free(&r);
	CBT_EQ_LL(http(&r, srv.port, "HEAD", "/api/v1/jobs", NULL, 0, NULL), 0);
	CBT_EQ_LL(r.status, 200);
	CBT_EQ_LL(r.len, 0);
	resp_free(&r);
	for (size_t i = 0; paths[i]; i++) {
		CBT_EQ_LL(http(&r, srv.port, "GET", paths[i], NULL, 0, NULL), 0);
		CBT_EQ_STR(header(&r, "Content-Security-Policy", v, sizeof(v)), CSP);
		CBT_EQ_STR(header(&r, "X-Content-Type-Options", v, sizeof(v)), "nosniff");
		CBT_EQ_STR(header(&r, "Cache-Control", v, sizeof(v)), "no-store");
		resp_free(&r);
	}
}

/* The dashboard's files, built into the binary: served with their types and
 * the same CSP; the page loads only its own script and stylesheet, and has
 * no inline script, handler or style (which the CSP would refuse). */
static void test_dashboard_assets(void)
{
	static const struct {
		const char *path, *type, *needle;
	} assets[] = {
		{ "/", "text/html; charset=utf-8",
		  "<script src=\"/app.js\" type=\"module\"></script>" },
		{ "/index.html", "text/html; charset=utf-8",
		  "<link rel=\"stylesheet\" href=\"/app.css\">" },
		{ "/app.js", "text/javascript; charset=utf-8", "textContent" },
		{ "/pages/jobs.js", "text/javascript; charset=utf-8", "export function pageJobs" },
		{ "/app.css", "text/css; charset=utf-8", "@media (max-width: 600px)" },
		{ "/favicon.svg", "image/svg+xml", "<svg" },
		{ "/robots.txt", "text/plain; charset=utf-8", "Disallow: /" },
	};
	static const char *const modules[] = {
		"/app.js",
		"/api.js",
		"/dom.js",
		"/format.js",
		"/state.js",
		"/widgets.js",
		"/pages/execution.js",
		"/pages/executions.js",
		"/pages/job.js",
		"/pages/jobs.js",
		"/pages/locks.js",
		"/pages/schedule.js",
		"/pages/schedules.js",
	};
	struct resp r;
	char v[256];

	NEED_SERVER();
	for (size_t i = 0; i < sizeof(assets) / sizeof(assets[0]); i++) {
		CBT_EQ_LL(http(&r, srv.port, "GET", assets[i].path, NULL, 0, NULL), 0);
		CBT_EQ_LL(r.status, 200);
		CBT_EQ_STR(header(&r, "Content-Type", v, sizeof(v)), assets[i].type);
		CBT_EQ_STR(header(&r, "Content-Security-Policy", v, sizeof(v)), CSP);
		CBT_EQ_STR(header(&r, "Cache-Control", v, sizeof(v)), "no-cache");
		CBT_CONTAINS(r.body, assets[i].needle);
		if (i < 2) {
			/* Every <script> has a src; no handler attributes, no style. */
			for (const char *p = r.body; (p = strstr(p, "<script")) != NULL; p++)
				CU_ASSERT(strncmp(p, "<script src=", 12) == 0);
			CU_ASSERT(strstr(r.body, "style=") == NULL);
			CU_ASSERT(strstr(r.body, "<style") == NULL);
			CU_ASSERT(strstr(r.body, "onload") == NULL);
			CU_ASSERT(strstr(r.body, "http://") == NULL &&
				  strstr(r.body, "https://") == NULL);
		}
		resp_free(&r);
	}
	/* The script (each of its modules) never parses markup out of data. */
	for (size_t i = 0; i < sizeof(modules) / sizeof(modules[0]); i++) {
		CBT_EQ_LL(http(&r, srv.port, "GET", modules[i], NULL, 0, NULL), 0);
		CBT_EQ_LL(r.status, 200);
		CU_ASSERT(strstr(r.body, "innerHTML") == NULL ||
			  strstr(r.body, "never with innerHTML"));
		CU_ASSERT(strstr(r.body, ".innerHTML =") == NULL &&
			  strstr(r.body, "insertAdjacentHTML") == NULL &&
			  strstr(r.body, "document.write") == NULL &&
			  strstr(r.body, "eval(") == NULL);
		resp_free(&r);
	}
	expect_error("POST", "/", 405, NULL);
	expect_error("GET", "/app.js.map", 404, NULL);
}

static void test_info(void)
{
	json_t *v;

	NEED_SERVER();
	v = get_json("/api/v1/info", 200);
	CBT_PASS(json_is_string(json_object_get(v, "version")) ? 0 : -1, NULL);
	CBT_EQ_LL(json_integer_value(json_object_get(v, "schema_version")),
		  cb_repo_schema_target());
	CBT_EQ_LL(json_integer_value(json_object_get(v, "schema_expected")),
		  cb_repo_schema_target());
	CU_ASSERT(json_is_true(json_object_get(v, "read_only")));
	CBT_PASS(json_is_string(json_object_get(v, "server_time")) ? 0 : -1, NULL);
	CBT_PASS(json_is_string(json_object_get(v, "database_time")) ? 0 : -1, NULL);
	/* The status vocabulary the dashboard uses, in the enum's order. */
	CBT_EQ_LL(json_array_size(json_object_get(v, "statuses")), CB_STATUS_UNKNOWN + 1);
	for (int s = CB_STATUS_STARTING; s <= CB_STATUS_UNKNOWN; s++)
		CBT_EQ_STR(json_string_value(
				   json_array_get(json_object_get(v, "statuses"), (size_t)s)),
			   cb_status_name((cb_status)s));
	CBT_EQ_LL(json_array_size(json_object_get(v, "live_statuses")), 3);
	CBT_EQ_STR(json_string_value(json_array_get(json_object_get(v, "live_statuses"), 0)),
		   "STARTING");
	CBT_EQ_STR(json_string_value(json_array_get(json_object_get(v, "live_statuses"), 1)),
		   "STARTED");
	CBT_EQ_STR(json_string_value(json_array_get(json_object_get(v, "live_statuses"), 2)),
		   "STOPPING");
	json_decref(v);
}

static json_t *find_job(json_t *jobs, const char *name)
{
	for (size_t i = 0; i < json_array_size(jobs); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(jobs, i), "job_name")),
			   name) == 0)
			return json_array_get(jobs, i);
	CBT_FAILF("no job %s", name);
	return NULL;
}

static void test_jobs(void)
{
	PGconn *conn = cbt_connect(db);
	json_t *v, *j, *last, *counts;

	NEED_SERVER();
	v = get_json("/api/v1/jobs", 200);
	j = find_job(json_object_get(v, "jobs"), "ledger");
	CBT_EQ_LL(json_integer_value(json_object_get(j, "execution_count")), 3);
	counts = json_object_get(j, "status_counts");
	CBT_EQ_LL(json_integer_value(json_object_get(counts, "COMPLETED")), 1);
	CBT_EQ_LL(json_integer_value(json_object_get(counts, "FAILED")), 1);
	CBT_EQ_LL(json_integer_value(json_object_get(counts, "STARTED")), 1);
	last = json_object_get(j, "last_execution");
	CBT_EQ_LL(json_integer_value(json_object_get(last, "job_execution_id")), running_id);
	CBT_EQ_STR(json_string_value(json_object_get(last, "status")), "STARTED");
	CU_ASSERT(json_is_false(json_object_get(last, "owner_lost")));
	CU_ASSERT(json_number_value(json_object_get(last, "duration_seconds")) > 0);
	CU_ASSERT(json_is_null(json_object_get(j, "next_fire_time")));
	/* Registered but never run: listed, with nothing. */
	j = find_job(json_object_get(v, "jobs"), "settlement");
	CBT_EQ_LL(json_integer_value(json_object_get(j, "execution_count")), 0);
	CU_ASSERT(json_is_null(json_object_get(j, "last_execution")));
	json_decref(v);

	/* The next firing: the earliest of the job's unpaused schedules. */
	cbt_exec(conn, "INSERT INTO batch_schedule (schedule_name, cron_expression, time_zone, "
		       " job_name, next_fire_time, paused) VALUES "
		       " ('a', '0 * * * *', 'UTC', 'ledger', '2030-01-01T00:00:00Z', false), "
		       " ('b', '0 * * * *', 'UTC', 'ledger', '2030-06-01T00:00:00Z', false), "
		       " ('c', '0 * * * *', 'UTC', 'ledger', '2029-01-01T00:00:00Z', true)");
	v = get_json("/api/v1/jobs", 200);
	j = find_job(json_object_get(v, "jobs"), "ledger");
	CBT_EQ_STR(json_string_value(json_object_get(j, "next_fire_time")),
		   "2030-01-01T00:00:00+00:00");
	json_decref(v);
	cbt_exec(conn, "DELETE FROM batch_schedule");
	PQfinish(conn);
}

static void test_executions_filters(void)
{
	json_t *v, *list;
	char path[256];

	NEED_SERVER();
	v = get_json("/api/v1/executions?status=FAILED", 200);
	list = json_object_get(v, "executions");
	CBT_EQ_LL(json_array_size(list), 1);
	CBT_EQ_LL(json_integer_value(json_object_get(json_array_get(list, 0), "job_execution_id")),
		  failed_id);
	json_decref(v);
	v = get_json("/api/v1/executions?job=ledger", 200);
	list = json_object_get(v, "executions");
	CBT_EQ_LL(json_array_size(list), 3);
	/* Newest first. */
	CBT_EQ_LL(json_integer_value(json_object_get(json_array_get(list, 0), "job_execution_id")),
		  running_id);
	CU_ASSERT(json_is_null(json_object_get(v, "next_before")));
	json_decref(v);
	v = get_json("/api/v1/executions?job=ledger&status=STARTED", 200);
	CBT_EQ_LL(json_array_size(json_object_get(v, "executions")), 1);
	json_decref(v);
	v = get_json("/api/v1/executions?job=nope", 200);
	CBT_EQ_LL(json_array_size(json_object_get(v, "executions")), 0);
	json_decref(v);
	/* The paging rows are 2026-01-01 01:00 .. 08:00 UTC. */
	v = get_json("/api/v1/executions?job=paging&from=2026-01-01T03:00:00Z"
		     "&to=2026-01-01T05:00:00%2B00:00",
		     200);
	CBT_EQ_LL(json_array_size(json_object_get(v, "executions")), 3);
	json_decref(v);
	v = get_json("/api/v1/executions?from=2099-01-01", 200);
	CBT_EQ_LL(json_array_size(json_object_get(v, "executions")), 0);
	json_decref(v);
	snprintf(path, sizeof(path), "/api/v1/executions?before=%lld", failed_id);
	v = get_json(path, 200);
	list = json_object_get(v, "executions");
	for (size_t i = 0; i < json_array_size(list); i++)
		CU_ASSERT(json_integer_value(json_object_get(json_array_get(list, i),
							     "job_execution_id")) < failed_id);
	CBT_EQ_LL(json_array_size(list), 1);
	json_decref(v);
}

static void test_executions_paging(void)
{
	PGconn *conn = cbt_connect(db);
	long long seen[64], total = cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution");
	size_t nseen = 0;
	int pages = 0;
	char path[256] = "/api/v1/executions?limit=4";

	NEED_SERVER();
	CBT_EQ_LL(total, 11);
	for (;;) {
		json_t *v = get_json(path, 200), *list = json_object_get(v, "executions");
		json_t *next = json_object_get(v, "next_before");

		pages++;
		for (size_t i = 0; i < json_array_size(list) && nseen < 64; i++) {
			long long id = json_integer_value(
				json_object_get(json_array_get(list, i), "job_execution_id"));

			for (size_t k = 0; k < nseen; k++)
				if (seen[k] == id)
					CBT_FAILF("execution %lld on two pages", id);
			if (nseen && id >= seen[nseen - 1])
				CBT_FAILF("not newest first: %lld after %lld", id, seen[nseen - 1]);
			seen[nseen++] = id;
		}
		if (json_is_null(next) || pages > 10) {
			json_decref(v);
			break;
		}
		CBT_EQ_LL(json_integer_value(next), seen[nseen - 1]);
		snprintf(path, sizeof(path), "/api/v1/executions?limit=4&before=%lld",
			 (long long)json_integer_value(next));
		json_decref(v);
	}
	CBT_EQ_LL(pages, 3);
	CBT_EQ_LL(nseen, total);
	PQfinish(conn);
}

static json_t *find_param(json_t *e, const char *name)
{
	return json_object_get(json_object_get(json_object_get(e, "parameters"), name), "value");
}

static void test_execution_detail(void)
{
	json_t *e, *steps, *s, *prog;
	char path[128];

	NEED_SERVER();
	snprintf(path, sizeof(path), "/api/v1/executions/%lld", done_id);
	e = get_json(path, 200);
	CBT_EQ_STR(json_string_value(json_object_get(e, "status")), "COMPLETED");
	/* User input comes back as data: the JSON string decodes to it exactly. */
	CBT_EQ_STR(json_string_value(find_param(e, "note")), XSS);
	CBT_EQ_STR(json_string_value(find_param(e, "day")), "2026-06-01");
	steps = json_object_get(e, "steps");
	CBT_EQ_LL(json_array_size(steps), 1);
	s = json_array_get(steps, 0);
	CBT_EQ_LL(json_integer_value(json_object_get(s, "read_count")), 1000);
	CBT_EQ_STR(json_string_value(json_object_get(s, "status")), "COMPLETED");
	CU_ASSERT(json_is_null(json_object_get(s, "progress")));
	json_decref(e);

	snprintf(path, sizeof(path), "/api/v1/executions/%lld", failed_id);
	e = get_json(path, 200);
	CBT_EQ_STR(json_string_value(json_object_get(e, "status")), "FAILED");
	s = json_array_get(json_object_get(e, "steps"), 0);
	CBT_EQ_STR(json_string_value(json_object_get(s, "status")), "FAILED");
	CBT_CONTAINS(json_string_value(json_object_get(s, "exit_message")), "negative amount");
	json_decref(e);

	snprintf(path, sizeof(path), "/api/v1/executions/%lld", running_id);
	e = get_json(path, 200);
	CBT_EQ_STR(json_string_value(json_object_get(e, "status")), "STARTED");
	s = json_array_get(json_object_get(e, "steps"), 0);
	CBT_EQ_STR(json_string_value(json_object_get(s, "status")), "STARTED");
	prog = json_object_get(s, "progress");
	CBT_EQ_LL(json_integer_value(json_object_get(prog, "items")), 500);
	CU_ASSERT(json_number_value(json_object_get(prog, "items_per_second")) > 0);
	CU_ASSERT(json_number_value(json_object_get(prog, "elapsed_seconds")) > 0);
	CBT_PASS(json_is_string(json_object_get(prog, "last_updated")) ? 0 : -1, NULL);
	json_decref(e);
}

static void test_execution_skips(void)
{
	PGconn *conn = cbt_connect(db);
	json_t *v, *list, *k;
	char path[128];

	NEED_SERVER();
	/* Skipped items as the engine records them in the step's context. */
	CBT_EQ_LL(cbt_queryp_ll(conn,
				"WITH u AS (UPDATE batch_step_execution_context c SET "
				" serialized_context = serialized_context || jsonb_build_object("
				" 'skipped', jsonb_build_array(jsonb_build_object('fault', 'read',"
				" 'message', $2::text))) FROM batch_step_execution s WHERE "
				" s.step_execution_id = c.step_execution_id AND s.job_execution_id "
				" = $1 RETURNING 1) SELECT count(*) FROM u",
				"lld s", failed_id, "line 7: " XSS),
		  1);
	snprintf(path, sizeof(path), "/api/v1/executions/%lld/skips", failed_id);
	v = get_json(path, 200);
	CBT_EQ_LL(json_integer_value(json_object_get(v, "job_execution_id")), failed_id);
	list = json_object_get(v, "skips");
	CBT_EQ_LL(json_array_size(list), 1);
	k = json_array_get(list, 0);
	CBT_EQ_STR(json_string_value(json_object_get(k, "message")), "line 7: " XSS);
	CBT_EQ_STR(json_string_value(json_object_get(k, "fault")), "read");
	CBT_EQ_STR(json_string_value(json_object_get(k, "step_name")), "post-accounts");
	json_decref(v);
	snprintf(path, sizeof(path), "/api/v1/executions/%lld/skips", done_id);
	v = get_json(path, 200);
	CBT_EQ_LL(json_array_size(json_object_get(v, "skips")), 0);
	json_decref(v);
	PQfinish(conn);
}

static void test_locks_and_audit(void)
{
	PGconn *conn = cbt_connect(db);
	json_t *v, *list, *l = NULL;
	long long total = cbt_query_ll(conn, "SELECT count(*) FROM batch_lock_audit "
					     "WHERE lock_name = 'ledger'");
	long long seen = 0, prev = 0;
	char path[256] = "/api/v1/locks/audit?lock=ledger&limit=2";
	int pages = 0;

	NEED_SERVER();
	v = get_json("/api/v1/locks", 200);
	list = json_object_get(v, "locks");
	for (size_t i = 0; i < json_array_size(list); i++)
		if (strcmp(json_string_value(json_object_get(json_array_get(list, i), "lock_name")),
			   "ledger") == 0)
			l = json_array_get(list, i);
	CBT_PASS(l ? 0 : -1, NULL);
	CU_ASSERT(json_number_value(json_object_get(l, "lease_left_seconds")) > 0);
	CU_ASSERT(json_is_false(json_object_get(l, "released")));
	CBT_EQ_LL(json_integer_value(json_object_get(l, "job_execution_id")), running_id);
	json_decref(v);

	CU_ASSERT(total >= 5);
	for (;;) {
		json_t *next;

		v = get_json(path, 200);
		list = json_object_get(v, "audit");
		next = json_object_get(v, "next_before");
		pages++;
		for (size_t i = 0; i < json_array_size(list); i++) {
			json_t *a = json_array_get(list, i);
			long long id = json_integer_value(json_object_get(a, "audit_id"));

			CBT_EQ_STR(json_string_value(json_object_get(a, "lock_name")), "ledger");
			if (prev && id >= prev)
				CBT_FAILF("audit not newest first: %lld after %lld", id, prev);
			prev = id;
			seen++;
		}
		if (json_is_null(next) || pages > 20) {
			json_decref(v);
			break;
		}
		snprintf(path, sizeof(path), "/api/v1/locks/audit?lock=ledger&limit=2&before=%lld",
			 (long long)json_integer_value(next));
		json_decref(v);
	}
	CBT_EQ_LL(seen, total);
	v = get_json("/api/v1/locks/audit?lock=nope", 200);
	CBT_EQ_LL(json_array_size(json_object_get(v, "audit")), 0);
	json_decref(v);
	PQfinish(conn);
}

static void test_bad_requests(void)
{
	struct resp r;
	char *big;
	json_t *v;

	NEED_SERVER();
	expect_error("GET", "/api/v1/executions?status=NOPE", 400, "status");
	expect_error("GET", "/api/v1/executions?limit=0", 400, "limit");
	expect_error("GET", "/api/v1/executions?limit=501", 400, "limit");
	expect_error("GET", "/api/v1/executions?from=garbage", 400, "from");
	expect_error("GET", "/api/v1/executions?to=2026-02-30", 400, "to");
	expect_error("GET", "/api/v1/executions?before=-1", 400, "before");
	expect_error("GET", "/api/v1/executions?colour=red", 400, "colour");
	expect_error("GET", "/api/v1/executions?limit=1&limit=2", 400, "limit");
	expect_error("GET", "/api/v1/locks/audit?limit=x", 400, "limit");
	expect_error("GET", "/api/v1/executions/abc", 400, "abc");
	expect_error("GET", "/api/v1/executions/abc/skips", 400, "abc");
	expect_error("GET", "/api/v1/executions/99999999", 404, "99999999");
	expect_error("GET", "/api/v1/nothing", 404, NULL);
	expect_error("GET", "/api/v1/executions/1/2", 404, NULL);
	expect_error("PUT", "/api/v1/jobs", 405, "PUT");
	{
		char allow[64];

		http(&r, srv.port, "PUT", "/api/v1/jobs", NULL, 0, NULL);
		CBT_EQ_STR(header(&r, "Allow", allow, sizeof(allow)), "GET, HEAD");
		resp_free(&r);
	}
	expect_error("DELETE", "/api/v1/executions/1", 405, NULL);
	/* POST is for actions; there are none on a read-only server. */
	expect_error("POST", "/api/v1/jobs", 405, NULL);
	/* A body over the limit: 413, at once from its Content-Length. */
	big = malloc(1 << 20);
	memset(big, 'x', 1 << 20);
	CBT_EQ_LL(http(&r, srv.port, "POST", "/api/v1/jobs", big, 1 << 20, NULL), 0);
	CBT_EQ_LL(r.status, 413);
	CBT_CONTAINS(r.body, "\"status\":413");
	resp_free(&r);
	free(big);
	/* Injected markup comes back as the JSON string it was, in an echo and
	 * in an error message. */
	v = get_json("/api/v1/executions?job=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E", 200);
	CBT_EQ_STR(json_string_value(json_object_get(json_object_get(v, "filter"), "job")), XSS);
	json_decref(v);
	v = get_json("/api/v1/executions?status=%3Cimg%20src%3Dx%20onerror%3Dalert(1)%3E", 400);
	CBT_CONTAINS(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
		     "'" XSS "'");
	json_decref(v);
	/* Invalid UTF-8 in a value is refused, not echoed broken. */
	expect_error("GET", "/api/v1/executions?job=%FF%FE", 400, "job");
	/* Still serving. */
	CBT_EQ_LL(http(&r, srv.port, "GET", "/healthz", NULL, 0, NULL), 0);
	CBT_EQ_LL(r.status, 200);
	resp_free(&r);
}

static void test_bad_options(void)
{
	static const char *const bad[][2] = {
		{ "--listen", "nope:80" },
		{ "--listen", "example.com:80" },
		{ "--listen", "127.0.0.1:70000" },
		{ "--listen", "127.0.0.1" },
		{ "--listen", "[::1:80" },
		{ "--listen", "::1:80" },
		{ "--listen", "127.0.0.1: 80" },
		{ "--listen", "127.0.0.1:+80" },
		{ "--pool", "0" },
		{ "--pool", "65" },
		{ "--client-connections", "0" },
		{ "--client-connections", "501" },
		{ "--admin-token-file", "/nonexistent/token" },
	};
	char token[4096];
	struct server s = { 0 };
	struct resp r;
	json_t *v;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		int rc = EX("serve", bad[i][0], bad[i][1]);

		CBT_EQ_LL(rc, 2);
		CBT_CONTAINS(errout, bad[i][1]);
	}
	snprintf(token, sizeof(token), "%s/serve-token-%d", cbt_tmpdir(), (int)getpid());
	cbt_write_str(token, "s3cret-token\n");
	chmod(token, 0644);
	CBT_EQ_LL(EX("serve", "--admin-token-file", token), 2);
	CBT_CONTAINS(errout, "readable by group or others");
	chmod(token, 0600);
	CBT_EQ_LL(server_start(&s, db, (const char *const[]){ "--admin-token-file", token, NULL }),
		  0);
	if (s.pid > 0) {
		char log[4096];

		read_file(s.log, log, sizeof(log));
		CBT_CONTAINS(log, "admin actions enabled");
		v = get_json_from(s.port, "/api/v1/info", 200);
		CU_ASSERT(json_is_false(json_object_get(v, "read_only")));
		json_decref(v);
		/* A route without an action: a POST with the token is still 405. */
		http(&r, s.port, "POST", "/api/v1/jobs", "{}", 2,
		     (const char *const[]){ "Authorization: Bearer s3cret-token", NULL });
		CBT_EQ_LL(r.status, 405);
		resp_free(&r);
		CBT_EQ_LL(server_stop(&s), 0);
	}
	unlink(token);
}

/* Whoever may write the token file chooses the admin token: only the
 * server's user may, and a link (whose target can be swapped) is refused. */
static void test_token_file_rules(void)
{
	char token[4096], link[4096], fifo[4096];

	snprintf(token, sizeof(token), "%s/serve-token-w-%d", cbt_tmpdir(), (int)getpid());
	snprintf(link, sizeof(link), "%s/serve-token-l-%d", cbt_tmpdir(), (int)getpid());
	snprintf(fifo, sizeof(fifo), "%s/serve-token-f-%d", cbt_tmpdir(), (int)getpid());
	cbt_write_str(token, "s3cret-token\n");
	chmod(token, 0620);
	CBT_EQ_LL(EX("serve", "--admin-token-file", token), 2);
	CBT_CONTAINS(errout, "writable by group or others (mode 0620)");
	chmod(token, 0602);
	CBT_EQ_LL(EX("serve", "--admin-token-file", token), 2);
	CBT_CONTAINS(errout, "writable by group or others (mode 0602)");
	chmod(token, 0600);
	CU_ASSERT_EQUAL(symlink(token, link), 0);
	CBT_EQ_LL(EX("serve", "--admin-token-file", link), 2);
	CBT_CONTAINS(errout, "is a symbolic link");
	CU_ASSERT_EQUAL(mkfifo(fifo, 0600), 0);
	CBT_EQ_LL(EX("serve", "--admin-token-file", fifo), 2);
	CBT_CONTAINS(errout, "is not a file");
	if (geteuid() == 0) {
		/* root can hand the file to someone else: then it is not ours */
		CU_ASSERT_EQUAL(chown(token, 65534, 65534), 0);
		CBT_EQ_LL(EX("serve", "--admin-token-file", token), 2);
		CBT_CONTAINS(errout, "is owned by uid 65534, not by this server's user (uid 0)");
	}
	unlink(fifo);
	unlink(link);
	unlink(token);
}

static const char auth_header[] = "Authorization: Bearer s3cret-token";

/* The status of a GET of @p path with "Host: @p host" (NULL: no Host); with
 * @p extra (a header), a POST with it and the admin token. */
static long host_status(int port, const char *path, const char *host, const char *extra)
{
	char h[300];
	struct resp r;
	long st;

	snprintf(h, sizeof(h), "Host:%s%s", host ? " " : "", host ? host : "");
	if (http(&r, port, extra ? "POST" : "GET", path, extra ? "{}" : NULL, extra ? 2 : 0,
		 (const char *const[]){ h, extra, extra ? auth_header : NULL, NULL }) < 0)
		return -1;
	st = r.status;
	if (st == 421)
		CBT_CONTAINS(r.body, "\"status\":421");
	resp_free(&r);
	return st;
}

/* DNS rebinding: a page of evil.example whose name now resolves to
 * 127.0.0.1 reaches the console with "Host: evil.example" (and, for an action,
 * "Origin: http://evil.example"). Only our own names are answered. */
static void test_host_check(void)
{
	static const char *const bad_hosts[] = {
		"--allowed-host", "bad host", "--allowed-host", "x:0", "--allowed-host", "x:70000",
		"--allowed-host", "[nope]",   "--allowed-host", "",
	};
	char token[4096], own[64], lh[64], v6[64], evil_port[64], origin[96];
	struct server s = { 0 };
	int p;

	for (size_t i = 0; i < sizeof(bad_hosts) / sizeof(bad_hosts[0]); i += 2) {
		CBT_EQ_LL(EX("serve", bad_hosts[i], bad_hosts[i + 1]), 2);
		CBT_CONTAINS(errout, "invalid --allowed-host");
	}
	snprintf(token, sizeof(token), "%s/serve-token-h-%d", cbt_tmpdir(), (int)getpid());
	cbt_write_str(token, "s3cret-token\n");
	chmod(token, 0600);
	CBT_EQ_LL(server_start(&s, db,
			       (const char *const[]){ "--admin-token-file", token, "--allowed-host",
						      "console.example.com", "--allowed-host",
						      "proxy.example:8443", NULL }),
		  0);
	if (s.pid <= 0)
		return;
	p = s.port;
	snprintf(own, sizeof(own), "127.0.0.1:%d", p);
	snprintf(lh, sizeof(lh), "LocalHost:%d", p);
	snprintf(v6, sizeof(v6), "[::1]:%d", p);
	snprintf(evil_port, sizeof(evil_port), "evil.example:%d", p);
	/* ours: the listening address, the loopback names, the proxy's */
	CBT_EQ_LL(host_status(p, "/healthz", own, NULL), 200);
	CBT_EQ_LL(host_status(p, "/healthz", lh, NULL), 200);
	CBT_EQ_LL(host_status(p, "/healthz", v6, NULL), 200);
	CBT_EQ_LL(host_status(p, "/api/v1/info", "console.example.com", NULL), 200);
	CBT_EQ_LL(host_status(p, "/healthz", "console.example.com:443", NULL), 200);
	CBT_EQ_LL(host_status(p, "/healthz", "proxy.example:8443", NULL), 200);
	/* not ours: 421 for every path, before anything is read */
	CBT_EQ_LL(host_status(p, "/api/v1/info", "evil.example", NULL), 421);
	CBT_EQ_LL(host_status(p, "/api/v1/executions", evil_port, NULL), 421);
	CBT_EQ_LL(host_status(p, "/healthz", "127.0.0.1", NULL), 421); /* port 80 */
	CBT_EQ_LL(host_status(p, "/healthz", "127.0.0.1:1", NULL), 421);
	CBT_EQ_LL(host_status(p, "/healthz", "proxy.example:8444", NULL), 421);
	CBT_EQ_LL(host_status(p, "/healthz", "proxy.example", NULL), 421);
	CBT_EQ_LL(host_status(p, "/healthz", "127.0.0.2:1", NULL), 421);
	CBT_EQ_LL(host_status(p, "/", "localhost.evil.example", NULL), 421);
	CBT_EQ_LL(host_status(p, "/healthz", NULL, NULL), 421);
	/* An action's Origin is compared with our names, not with its Host. */
	snprintf(origin, sizeof(origin), "Origin: http://evil.example:%d", p);
	CBT_EQ_LL(host_status(p, "/api/v1/executions/999999/stop", evil_port, origin), 421);
	CBT_EQ_LL(host_status(p, "/api/v1/executions/999999/stop", own, origin), 403);
	CBT_EQ_LL(host_status(p, "/api/v1/executions/999999/stop", own,
			      "Origin: http://console.example.com"),
		  404);
	snprintf(origin, sizeof(origin), "Origin: http://localhost:%d", p);
	CBT_EQ_LL(host_status(p, "/api/v1/executions/999999/stop", own, origin), 404);
	CBT_EQ_LL(server_stop(&s), 0);
	unlink(token);
}

/* One client (127.0.0.2) with 200 half-sent request heads: it gets at most
 * 64 connections, those go after the head deadline, and another client
 * (127.0.0.3) is answered at once all along. */
static void test_slow_client_bounded(void)
{
	enum {
		N = 200
	};
	int fds[N], open_now = 0, p;
	char probe[128];
	double t0;

	NEED_SERVER();
	p = srv.port;
	snprintf(probe, sizeof(probe), "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n\r\n", p);
	if (raw_status("127.0.0.2", p, probe, 1.0) != 200) {
		CBT_FAILF("no other loopback address (127.0.0.2) here");
		return;
	}
	t0 = cbt_now();
	for (int i = 0; i < N; i++) {
		fds[i] = tcp_from("127.0.0.2", p);
		if (fds[i] >= 0)
			send(fds[i], "GET /healthz HTTP/1.1\r\nHost: 127", 32, MSG_NOSIGNAL);
	}
	CBT_EQ_LL(raw_status("127.0.0.3", p, probe, 1.0), 200);
	/* those past the per-client limit were closed at once: well before the
	 * head deadline (10 s), however slowly a loaded server gets to them */
	do {
		cbt_sleep_ms(50);
		open_now = 0;
		for (int i = 0; i < N; i++) {
			char c;

			if (fds[i] >= 0 && recv(fds[i], &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN)
				open_now++;
		}
	} while (open_now > 64 && cbt_now() - t0 < 5);
	CU_ASSERT(open_now > 0 && open_now <= 64);
	if (open_now > 64)
		CBT_FAILF("one client holds %d connections", open_now);
	/* the rest within the head deadline (10 s from their opening), not the
	 * idle timeout (30 s): bounded at 25 s for a loaded machine */
	while (open_now > 0 && cbt_now() - t0 < 25) {
		cbt_sleep_ms(250);
		open_now = 0;
		for (int i = 0; i < N; i++) {
			char c;

			if (fds[i] >= 0 && recv(fds[i], &c, 1, MSG_DONTWAIT) < 0 && errno == EAGAIN)
				open_now++;
		}
		if (raw_status("127.0.0.3", p, probe, 1.0) != 200)
			CBT_FAILF("/healthz did not answer within 1 s");
	}
	if (open_now > 0)
		CBT_FAILF("%d half-sent requests still open after %.0f s", open_now,
			  cbt_now() - t0);
	for (int i = 0; i < N; i++)
		if (fds[i] >= 0)
			close(fds[i]);
	CBT_EQ_LL(raw_status("127.0.0.2", p, probe, 1.0), 200);
}

/* /readyz: 200, then 503 once the schema is gone, then once the database is. */
static void test_readyz_turns_503(void)
{
	char db2[CBT_CONNINFO_MAX];
	struct server s = { 0 };
	struct resp r;
	json_t *v;
	PGconn *conn;

	if (cbt_db_create(db2, sizeof(db2), "serve_ready") < 0)
		return;
	CBT_EQ_LL(run_examples(db2, (const char *const[]){ "schema", "init", NULL }), 0);
	if (server_start(&s, db2, NULL) < 0) {
		cbt_db_drop(db2);
		return;
	}
	CBT_EQ_LL(http(&r, s.port, "GET", "/readyz", NULL, 0, NULL), 0);
	CBT_EQ_LL(r.status, 200);
	resp_free(&r);
	conn = cbt_connect(db2);
	cbt_exec(conn, "SET client_min_messages = warning; DROP SCHEMA public CASCADE; "
		       "CREATE SCHEMA public");
	PQfinish(conn);
	v = get_json_from(s.port, "/readyz", 503);
	CBT_CONTAINS(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
		     "no cbatch repository");
	json_decref(v);
	v = get_json_from(s.port, "/api/v1/jobs", 503);
	json_decref(v);
	cbt_db_drop(db2);
	v = get_json_from(s.port, "/readyz", 503);
	CBT_CONTAINS(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
		     "not ready");
	json_decref(v);
	v = get_json_from(s.port, "/api/v1/info", 200);
	CU_ASSERT(json_is_string(json_object_get(v, "database_error")));
	CU_ASSERT(json_is_null(json_object_get(v, "schema_version")));
	json_decref(v);
	/* The process is up all the same. */
	CBT_EQ_LL(http(&r, s.port, "GET", "/healthz", NULL, 0, NULL), 0);
	CBT_EQ_LL(r.status, 200);
	resp_free(&r);
	CBT_EQ_LL(server_stop(&s), 0);
}

struct inflight {
	int port;
	struct resp r;
	double took;
};

static void *request_thread(void *arg)
{
	struct inflight *f = arg;
	double t0 = cbt_now();

	http(&f->r, f->port, "GET", "/api/v1/locks/audit?limit=1", NULL, 0, NULL);
	f->took = cbt_now() - t0;
	return NULL;
}

/* SIGTERM while a request waits on the database: the listening socket
 * closes at once, the request completes with its answer, the exit is 0. */
static void test_sigterm_finishes_in_flight(void)
{
	struct server s = { 0 };
	struct inflight f;
	struct resp r;
	pthread_t t;
	PGconn *holder, *watch;
	char log[4096];
	int status, refused = 0;
	double t0;

	if (server_start(&s, db, NULL) < 0)
		return;
	holder = cbt_connect(db);
	/* Polled from outside the holder's transaction, whose view of
	 * pg_stat_activity would stay as it first saw it. */
	watch = cbt_connect(db);
	cbt_exec(holder, "BEGIN; LOCK TABLE batch_lock_audit IN ACCESS EXCLUSIVE MODE");
	memset(&f, 0, sizeof(f));
	f.port = s.port;
	pthread_create(&t, NULL, request_thread, &f);
	if (!cbt_wait_until(watch, 30000,
			    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
			    "current_database() AND application_name = 'cbatch serve' AND "
			    "wait_event_type = 'Lock'"))
		CBT_FAILF("the request did not reach the database");
	PQfinish(watch);
	t0 = cbt_now();
	kill(s.pid, SIGTERM);
	/* No longer accepting (polled: however slowly a loaded machine delivers
	 * the signal, but before the drain can end, which the held lock stops),
	 * and 300 ms on at least, still draining: alive. */
	do {
		cbt_sleep_ms(50);
		refused = http(&r, s.port, "GET", "/healthz", NULL, 0, NULL) < 0;
		resp_free(&r);
	} while (!refused && cbt_now() - t0 < 30);
	CU_ASSERT(refused);
	if (cbt_now() - t0 < 0.3)
		cbt_sleep_ms((int)((0.3 - (cbt_now() - t0)) * 1000) + 1);
	CBT_EQ_LL(waitpid(s.pid, &status, WNOHANG), 0);
	cbt_exec(holder, "COMMIT");
	PQfinish(holder);
	pthread_join(t, NULL);
	CBT_EQ_LL(f.r.curl_rc, 0);
	CBT_EQ_LL(f.r.status, 200);
	CBT_CONTAINS(f.r.body, "\"audit\":");
	CU_ASSERT(f.took >= 0.3);
	resp_free(&f.r);
	CBT_EQ_LL(cbt_wait_timeout(s.pid, 30000), 0);
	read_file(s.log, log, sizeof(log));
	CBT_CONTAINS(log, "serve: stopped on SIGTERM");
}

/* A client that opens a new connection for every request until the server
 * is gone. */
struct churn {
	int port;
	atomic_int *stop;
	atomic_long answered;
};

static void *churn_thread(void *arg)
{
	struct churn *c = arg;
	struct sockaddr_in sa;
	char req[128], buf[1024];
	int n = snprintf(req, sizeof(req),
			 "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1:%d\r\nConnection: close\r\n\r\n",
			 c->port);

	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	sa.sin_port = htons((uint16_t)c->port);
	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	while (!atomic_load(c->stop)) {
		int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
		ssize_t got;

		if (fd < 0)
			break;
		if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
		    write(fd, req, (size_t)n) == n) {
			got = read(fd, buf, sizeof(buf) - 1);
			if (got > 12 && memcmp(buf, "HTTP/1.1 200", 12) == 0)
				atomic_fetch_add(&c->answered, 1);
			while (got > 0)
				got = read(fd, buf, sizeof(buf));
		}
		close(fd);
	}
	return NULL;
}

/* SIGTERM while clients keep opening connections: the stop stops accepting
 * while the daemon's threads are busy accepting, and the exit is 0 every
 * time (libmicrohttpd's quiesce with epoll aborted here: its threads and
 * the stopping thread both took the listening socket out of the epoll set). */
static void test_sigterm_under_connection_churn(void)
{
	enum {
		ROUNDS = 200,
		CLIENTS = 8
	};
	int aborted = 0;

	for (int round = 0; round < ROUNDS && !aborted; round++) {
		struct server s = { 0 };
		struct churn c[CLIENTS];
		pthread_t t[CLIENTS];
		atomic_int stop = 0;
		long answered = 0;
		double t0;
		int rc;

		if (server_start(&s, db, (const char *const[]){ "--pool", "4", NULL }) < 0)
			return;
		for (int i = 0; i < CLIENTS; i++) {
			c[i].port = s.port;
			c[i].stop = &stop;
			atomic_init(&c[i].answered, 0);
			pthread_create(&t[i], NULL, churn_thread, &c[i]);
		}
		/* Stopped while the clients are at it: once each has been answered. */
		t0 = cbt_now();
		for (int busy = 0; !busy && cbt_now() - t0 < 30; cbt_sleep_ms(5)) {
			busy = 1;
			for (int i = 0; i < CLIENTS; i++)
				busy &= atomic_load(&c[i].answered) > 0;
		}
		rc = server_stop(&s);
		atomic_store(&stop, 1);
		for (int i = 0; i < CLIENTS; i++) {
			pthread_join(t[i], NULL);
			answered += atomic_load(&c[i].answered);
		}
		if (answered < CLIENTS)
			CBT_FAILF("round %d: %ld answers before the stop", round, answered);
		if (rc != 0) {
			CBT_FAILF("round %d: serve exited %d under connection churn", round, rc);
			aborted = 1;
		}
	}
}

/* The pool is bounded: requests at once never open more connections. */
static void test_pool_bounded(void)
{
	PGconn *conn = cbt_connect(db);
	struct inflight fs[12];
	pthread_t ts[12];
	long long most = 0;

	NEED_SERVER();
	for (int i = 0; i < 12; i++) {
		memset(&fs[i], 0, sizeof(fs[i]));
		fs[i].port = srv.port;
		pthread_create(&ts[i], NULL, request_thread, &fs[i]);
	}
	for (int k = 0; k < 20; k++) {
		long long n = cbt_query_ll(conn, "SELECT count(*) FROM pg_stat_activity WHERE "
						 "datname = current_database() AND "
						 "application_name = 'cbatch serve'");

		if (n > most)
			most = n;
		cbt_sleep_ms(5);
	}
	for (int i = 0; i < 12; i++) {
		pthread_join(ts[i], NULL);
		CBT_EQ_LL(fs[i].r.status, 200);
		resp_free(&fs[i].r);
	}
	CU_ASSERT(most <= 2); /* --pool 2 */
	PQfinish(conn);
}

/* A request that finds every connection taken waits a bounded time, then
 * gets 503; requests that need none are answered meanwhile. */
static void test_pool_wait_then_503(void)
{
	struct server s = { 0 };
	struct inflight f;
	struct resp r;
	pthread_t t;
	PGconn *holder, *watch;
	json_t *v;
	double t0, took;

	if (server_start(&s, db, (const char *const[]){ "--pool", "1", NULL }) < 0)
		return;
	holder = cbt_connect(db);
	watch = cbt_connect(db);
	cbt_exec(holder, "BEGIN; LOCK TABLE batch_lock_audit IN ACCESS EXCLUSIVE MODE");
	memset(&f, 0, sizeof(f));
	f.port = s.port;
	pthread_create(&t, NULL, request_thread, &f);
	if (!cbt_wait_until(watch, 30000,
			    "SELECT count(*) FROM pg_stat_activity WHERE datname = "
			    "current_database() AND application_name = 'cbatch serve' AND "
			    "wait_event_type = 'Lock'"))
		CBT_FAILF("the first request did not reach the database");
	CBT_EQ_LL(http(&r, s.port, "GET", "/healthz", NULL, 0, NULL), 0);
	CBT_EQ_LL(r.status, 200);
	resp_free(&r);
	t0 = cbt_now();
	v = get_json_from(s.port, "/api/v1/jobs", 503);
	took = cbt_now() - t0;
	CBT_CONTAINS(json_string_value(json_object_get(json_object_get(v, "error"), "message")),
		     "no repository connection became free");
	json_decref(v);
	CU_ASSERT(took >= 4.5 && took < 15);
	cbt_exec(holder, "COMMIT");
	pthread_join(t, NULL);
	CBT_EQ_LL(f.r.status, 200);
	resp_free(&f.r);
	/* The connection is back: the next request is served. */
	v = get_json_from(s.port, "/api/v1/jobs", 200);
	json_decref(v);
	PQfinish(holder);
	PQfinish(watch);
	CBT_EQ_LL(server_stop(&s), 0);
}

/* An IPv6 literal: [::1]:0 (skipped where the host has no IPv6 loopback). */
static void test_ipv6_listen(void)
{
	struct server s = { 0 };
	struct resp r;
	char log[4096];
	int fd = socket(AF_INET6, SOCK_STREAM, 0);
	struct sockaddr_in6 a;

	memset(&a, 0, sizeof(a));
	a.sin6_family = AF_INET6;
	a.sin6_addr = in6addr_loopback;
	if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		printf("(no IPv6 loopback here: skipped) ");
		if (fd >= 0)
			close(fd);
		return;
	}
	close(fd);
	if (server_start_on(&s, db, "[::1]:0", NULL) < 0)
		return;
	read_file(s.log, log, sizeof(log));
	CBT_CONTAINS(log, "listening on http://[::1]:");
	http_host = "[::1]";
	CBT_EQ_LL(http(&r, s.port, "GET", "/healthz", NULL, 0, NULL), 0);
	http_host = "127.0.0.1";
	CBT_EQ_LL(r.status, 200);
	resp_free(&r);
	CBT_EQ_LL(server_stop(&s), 0);
}

/* Let the running job finish; the main server stops with 0. */
static void test_finish(void)
{
	json_t *v;
	char path[128];

	cbt_exec(gate, "COMMIT");
	PQfinish(gate);
	gate = NULL;
	CBT_EQ_LL(cbt_wait_timeout(running_pid, 120000), 0);
	running_pid = 0;
	NEED_SERVER();
	snprintf(path, sizeof(path), "/api/v1/executions/%lld", running_id);
	v = get_json(path, 200);
	CBT_EQ_STR(json_string_value(json_object_get(v, "status")), "COMPLETED");
	CU_ASSERT(json_is_null(
		json_object_get(json_array_get(json_object_get(v, "steps"), 0), "progress")));
	json_decref(v);
	CBT_EQ_LL(server_stop(&srv), 0);
}

static const CU_TestInfo tests[] = {
	{ "fixture: completed, failed, running executions; server", test_fixture },
	{ "/metrics is valid exposition format, as `metrics`", test_metrics_exposition },
	{ "/healthz, /readyz, HEAD, security headers", test_health_and_headers },
	{ "the dashboard's built-in files: types, CSP, no inline code", test_dashboard_assets },
	{ "/api/v1/info", test_info },
	{ "/api/v1/jobs: last execution, counts, next firing", test_jobs },
	{ "/api/v1/executions: filters", test_executions_filters },
	{ "/api/v1/executions: keyset paging over 3 pages", test_executions_paging },
	{ "/api/v1/executions/{id}: parameters, steps, live progress", test_execution_detail },
	{ "/api/v1/executions/{id}/skips", test_execution_skips },
	{ "/api/v1/locks and /locks/audit paging", test_locks_and_audit },
	{ "400, 404, 405, 413, escaped echoes", test_bad_requests },
	{ "pool bounded under concurrent requests", test_pool_bounded },
	{ "bad options exit 2; token file must be private", test_bad_options },
	{ "token file: ours, not writable by others, no link", test_token_file_rules },
	{ "Host must name this server; Origin compared with its names", test_host_check },
	{ "a slow client is bounded; /healthz answers another", test_slow_client_bounded },
	{ "/readyz 503 without schema, without database", test_readyz_turns_503 },
	{ "SIGTERM: in-flight request completes, exit 0", test_sigterm_finishes_in_flight },
	{ "SIGTERM under connection churn: exit 0 every time",
	  test_sigterm_under_connection_churn },
	{ "pool exhausted: bounded wait, then 503", test_pool_wait_then_503 },
	{ "--listen [::1]:0", test_ipv6_listen },
	{ "the running job completes; server stops with 0", test_finish },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("serve", init, clean, tests);
}
