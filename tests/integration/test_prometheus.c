/*
 * The metrics as Prometheus itself takes them (issue 21, items 7 and 8):
 * Debian's promtool (`promtool check metrics`) on the real `metrics` output and
 * on a real /metrics response, with no warning; a real Prometheus server on
 * loopback that scrapes `serve` every second, read back through its HTTP API
 * (the per-job label arrives as batch_job, and the scrape's own `job` label is
 * left alone); the conventions (cbatch_ prefix, counters in _total, no other
 * _count); and the series people alert on first (last success and failure,
 * last status, the running executions' age, a schedule's next fire time and
 * last firing) against the repository's own rows.
 *
 * Needs promtool and prometheus (Debian's prometheus package,
 * scripts/install-deps.sh); without them it prints SKIPPED and exits 77.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <curl/curl.h>
#include <jansson.h>

#include "cbtest.h"
#include "serve_client.h"

static char db[CBT_CONNINFO_MAX];
static char out[262144], errout[16384];
static struct server srv;
static char scratch[512];

static int run_examples(const char *const *args)
{
	const char *argv[24];
	size_t n = 0;

	argv[n++] = cbt_examples_bin();
	argv[n++] = "--db";
	argv[n++] = db;
	while (*args && n < 23)
		argv[n++] = *args++;
	argv[n] = NULL;
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

#define EX(...) run_examples((const char *const[]){ __VA_ARGS__, NULL })

/* 1 if @p name is a command on PATH. */
static int have(const char *name)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "command -v %s >/dev/null 2>&1", name);
	return system(cmd) == 0;
}

static int init(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
	snprintf(scratch, sizeof(scratch), "%s/prometheus-%d", cbt_tmpdir(), (int)getpid());
	if (mkdir(scratch, 0777) < 0 && errno != EEXIST) {
		fprintf(stderr, "cannot create %s: %s\n", scratch, strerror(errno));
		return -1;
	}
	return cbt_db_create(db, sizeof(db), "prom");
}

static int clean(void)
{
	char cmd[600];

	if (srv.pid > 0)
		server_stop(&srv);
	cbt_db_drop(db);
	curl_global_cleanup();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", scratch);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", scratch);
	return 0;
}

/* Write @p text to @p path. @return 0 or -1. */
static int write_text(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	int rc;

	if (!f)
		return -1;
	rc = fputs(text, f) < 0 ? -1 : 0;
	if (fclose(f) != 0)
		rc = -1;
	return rc;
}

/* `promtool check metrics < FILE` on @p text: its exit status, its output in
 * out/errout (promtool prints lint problems and exits 1). */
static int promtool_check(const char *text, const char *what)
{
	char path[700], cmd[800];
	const char *argv[4] = { "sh", "-c", cmd, NULL };

	snprintf(path, sizeof(path), "%s/%s.prom", scratch, what);
	if (write_text(path, text) < 0) {
		CBT_FAILF("cannot write %s", path);
		return -1;
	}
	snprintf(cmd, sizeof(cmd), "promtool check metrics < '%s'", path);
	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

/* The conventions, series by series: every family cbatch_, counters end in
 * _total, nothing else in _count, no label called job. */
static void check_names(const char *text)
{
	const char *p = text;
	int families = 0;

	while (*p) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		char line[2048], name[256] = "", type[32] = "";

		snprintf(line, sizeof(line), "%.*s", (int)n, p);
		if (sscanf(line, "# TYPE %255s %31s", name, type) == 2) {
			size_t len = strlen(name);

			families++;
			if (strncmp(name, "cbatch_", 7) != 0)
				CBT_FAILF("metric %s lacks the cbatch_ prefix", name);
			if (strcmp(type, "counter") == 0 &&
			    (len < 6 || strcmp(name + len - 6, "_total") != 0))
				CBT_FAILF("counter %s does not end in _total", name);
			if (len >= 6 && strcmp(name + len - 6, "_count") == 0)
				CBT_FAILF("metric %s ends in _count", name);
		} else if (line[0] != '#' && line[0]) {
			if (strstr(line, "{job=") || strstr(line, ",job="))
				CBT_FAILF("series with a job label: %s", line);
		}
		p += n + (nl ? 1 : 0);
	}
	CU_ASSERT(families >= 20);
}

/* A completed and a failed run of ledger, a running execution of another
 * job started 90 s ago, a schedule that fired, the server. */
static void test_fixture(void)
{
	PGconn *conn = cbt_connect(db);

	CBT_EQ_LL(EX("schema", "init"), 0);
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "100"), 0);
	CBT_EQ_LL(EX("run", "ledger", "day:date=2026-06-01"), 0);
	/* A negative amount fails the next run. */
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "10"), 0);
	cbt_exec(conn, "UPDATE account SET amount = -1 WHERE id = (SELECT max(id) FROM account)");
	CBT_EQ_LL(EX("run", "ledger", "day:date=2026-06-02"), 1);
	cbt_exec(conn, "UPDATE account SET amount = 1 WHERE amount < 0");
	/* A run whose process is elsewhere: only its rows matter here. */
	cbt_exec(conn, "INSERT INTO batch_job_instance (job_name, job_key) VALUES ('slow', "
		       " lpad('1', 32, '0'));"
		       "INSERT INTO batch_job_execution (job_instance_id, status, exit_code, "
		       " start_time, create_time) SELECT job_instance_id, 'STARTED', 'UNKNOWN', "
		       " now() - interval '90 s', now() - interval '90 s' FROM batch_job_instance "
		       " WHERE job_name = 'slow'");
	/* Every second; the instance is complete, so what it launches exits 3. */
	CBT_EQ_LL(EX("schedule", "add", "tick", "--cron", "* * * * * *", "--job", "ledger",
		     "day:date=2026-06-01", "--same-instance"),
		  0);
	/* A node runs until a firing has ended (however long its start takes on
	 * this machine), then stops. A stop that lands in a later run changes
	 * nothing asserted here: the instance is complete, so no run creates an
	 * execution, and the firings' metrics are compared with the rows. */
	{
		char log[640];
		pid_t node;

		snprintf(log, sizeof(log), "%s/scheduler.log", scratch);
		node = cbt_examples_spawn(NULL, db, log,
					  (const char *const[]){ "scheduler", "--quiet", NULL });
		CU_ASSERT_FATAL(node > 0);
		if (!cbt_wait_until(conn, 60000,
				    "SELECT count(*) FROM batch_schedule_firing WHERE "
				    "status = 'FINISHED'"))
			CBT_FAILF("no firing finished within 60 s (node log: %s)", log);
		kill(node, SIGTERM);
		CBT_EQ_LL(cbt_wait_timeout(node, 60000), 0);
	}
	CU_ASSERT(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing") > 0);
	CBT_EQ_LL(server_start(&srv, db, (const char *const[]){ "--pool", "2", NULL }), 0);
	PQfinish(conn);
}

static void test_promtool_accepts_the_cli_and_http_output(void)
{
	struct resp r;
	char *body;
	int rc;

	CBT_EQ_LL(EX("metrics"), 0);
	check_names(out);
	body = strdup(out);
	rc = promtool_check(body, "cli");
	if (rc != 0 || out[0] || errout[0])
		CBT_FAILF("promtool on `metrics`: exit %d: %s%s", rc, out, errout);
	free(body);

	if (srv.pid <= 0) {
		CBT_FAILF("no server (the fixture failed)");
		return;
	}
	CBT_EQ_LL(http(&r, srv.port, "GET", "/metrics", NULL, 0, NULL), 0);
	CBT_EQ_LL(r.status, 200);
	check_names(r.body ? r.body : "");
	rc = promtool_check(r.body ? r.body : "", "http");
	if (rc != 0 || out[0] || errout[0])
		CBT_FAILF("promtool on /metrics: exit %d: %s%s", rc, out, errout);
	resp_free(&r);

	/* The checker is not blind: what it says of the old names. */
	rc = promtool_check("# HELP items_read_count Items read.\n"
			    "# TYPE items_read_count counter\n"
			    "items_read_count{job=\"x\"} 1\n",
			    "old");
	CU_ASSERT(rc != 0);
	CBT_CONTAINS(errout, "counter metrics should have \"_total\" suffix");
}

/* The value of the series @p series (its name and labels as printed) in @p text. */
static long long value_of(const char *text, const char *series)
{
	char needle[512];
	const char *p;

	snprintf(needle, sizeof(needle), "\n%s ", series);
	p = strstr(text, needle);
	if (!p) {
		CBT_FAILF("no series %s in: %.3000s", series, text);
		return -1;
	}
	return strtoll(p + strlen(needle), NULL, 10);
}

static void test_what_people_alert_on(void)
{
	PGconn *conn = cbt_connect(db);
	char series[256];
	long long age;
	int ones = 0;
	static const char *const statuses[] = { "COMPLETED", "FAILED",  "STOPPED", "ABANDONED",
						"STARTING",  "STARTED", "STOPPING" };

	CBT_EQ_LL(EX("metrics"), 0);
	CBT_EQ_LL(value_of(out, "cbatch_job_last_success_timestamp_seconds{batch_job=\"ledger\"}"),
		  cbt_query_ll(conn, "SELECT extract(epoch FROM max(end_time))::bigint FROM "
				     "batch_job_execution WHERE status = 'COMPLETED'"));
	CBT_EQ_LL(value_of(out, "cbatch_job_last_failure_timestamp_seconds{batch_job=\"ledger\"}"),
		  cbt_query_ll(conn, "SELECT extract(epoch FROM max(end_time))::bigint FROM "
				     "batch_job_execution WHERE status = 'FAILED'"));
	/* Every status of the bounded set, 1 for the last execution's. */
	for (size_t i = 0; i < sizeof(statuses) / sizeof(*statuses); i++) {
		snprintf(series, sizeof(series),
			 "cbatch_job_last_status{batch_job=\"ledger\",status=\"%s\"}", statuses[i]);
		ones += value_of(out, series) == 1;
	}
	CBT_EQ_LL(ones, 1);
	CBT_EQ_LL(value_of(out, "cbatch_job_last_status{batch_job=\"ledger\",status=\"FAILED\"}"),
		  1);
	CBT_EQ_LL(value_of(out, "cbatch_job_last_status{batch_job=\"slow\",status=\"STARTED\"}"),
		  1);
	CBT_EQ_LL(value_of(out, "cbatch_job_running_executions{batch_job=\"slow\"}"), 1);
	CBT_EQ_LL(value_of(out, "cbatch_job_running_executions{batch_job=\"ledger\"}"), 0);
	age = value_of(out, "cbatch_job_running_oldest_age_seconds{batch_job=\"slow\"}");
	CU_ASSERT(age >= 90 && age < 600);
	CBT_EQ_LL(value_of(out, "cbatch_job_running_oldest_age_seconds{batch_job=\"ledger\"}"), 0);

	CBT_EQ_LL(value_of(out, "cbatch_schedule_next_fire_timestamp_seconds{batch_job=\"ledger\","
				"schedule=\"tick\"}"),
		  cbt_query_ll(conn, "SELECT extract(epoch FROM next_fire_time)::bigint FROM "
				     "batch_schedule WHERE schedule_name = 'tick'"));
	CBT_EQ_LL(value_of(out, "cbatch_schedule_paused{batch_job=\"ledger\",schedule=\"tick\"}"),
		  0);
	CBT_EQ_LL(value_of(out, "cbatch_schedule_last_firing_timestamp_seconds{batch_job="
				"\"ledger\",schedule=\"tick\"}"),
		  cbt_query_ll(conn, "SELECT extract(epoch FROM max(fire_time))::bigint FROM "
				     "batch_schedule_firing"));
	{
		char status[32];

		cbt_query_str(conn,
			      "SELECT status FROM batch_schedule_firing ORDER BY fire_time DESC, "
			      "firing_id DESC LIMIT 1",
			      status, sizeof(status));
		snprintf(
			series, sizeof(series),
			"cbatch_schedule_last_firing_status{batch_job=\"ledger\",schedule=\"tick\","
			"status=\"%s\"}",
			status);
		CBT_EQ_LL(value_of(out, series), 1);
	}
	CBT_EQ_LL(value_of(out, "cbatch_schedule_last_firing_exit_code{batch_job=\"ledger\","
				"schedule=\"tick\"}"),
		  cbt_query_ll(conn, "SELECT coalesce(exit_code, -1) FROM batch_schedule_firing "
				     "ORDER BY fire_time DESC, firing_id DESC LIMIT 1"));
	/* The seed's counters keep their meaning and say their old name. */
	CBT_CONTAINS(out, "# HELP cbatch_lock_acquire_success_total ");
	CBT_CONTAINS(out, "(seed: lock_acquire_success_count)");
	CBT_CONTAINS(out, "(seed: manual_rerun_lock_bypass_count)");
	CBT_EQ_LL(value_of(out, "cbatch_lock_acquire_success_total"),
		  cbt_query_ll(conn,
			       "SELECT count(*) FROM batch_lock_audit WHERE outcome IN "
			       "('ACQUIRED', 'LEASE_EXPIRED_TAKEOVER', 'OWNER_DEAD_TAKEOVER')"));
	PQfinish(conn);
}

/* Scheduler nodes by host (the "scheduler node down" alert, deploy/prometheus):
 * on host a one node alive and one stopped on purpose, on host b one whose
 * heartbeat lease ran out (it died); each host one series, however many
 * processes it ran. */
static void test_scheduler_nodes_by_host(void)
{
	PGconn *conn = cbt_connect(db);

	cbt_exec(conn, "SELECT batch_scheduler_heartbeat('a:1:x', 'alert-a', 1, 30), "
		       "batch_scheduler_heartbeat('a:2:x', 'alert-a', 2, 30), "
		       "batch_scheduler_heartbeat('b:3:x', 'alert-b', 3, 30)");
	cbt_exec(conn, "SELECT batch_scheduler_stopped('a:2:x')");
	cbt_exec(conn, "UPDATE batch_scheduler_node SET heartbeat_at = batch_now() - "
		       "interval '31 seconds' WHERE node_id = 'b:3:x'");
	CBT_EQ_LL(EX("metrics"), 0);
	CBT_EQ_LL(value_of(out, "cbatch_scheduler_host_live_nodes{host=\"alert-a\"}"), 1);
	CBT_EQ_LL(value_of(out, "cbatch_scheduler_host_live_nodes{host=\"alert-b\"}"), 0);
	CBT_EQ_LL(value_of(out, "cbatch_scheduler_host_last_heartbeat_timestamp_seconds{host="
				"\"alert-b\"}"),
		  cbt_query_ll(conn, "SELECT extract(epoch FROM heartbeat_at)::bigint FROM "
				     "batch_scheduler_node WHERE node_id = 'b:3:x'"));
	CBT_EQ_LL(value_of(out, "cbatch_scheduler_host_last_heartbeat_timestamp_seconds{host="
				"\"alert-a\"}"),
		  cbt_query_ll(conn, "SELECT extract(epoch FROM max(heartbeat_at))::bigint FROM "
				     "batch_scheduler_node WHERE host = 'alert-a'"));
	cbt_exec(conn, "DELETE FROM batch_scheduler_node WHERE host IN ('alert-a', 'alert-b')");
	PQfinish(conn);
}

/* `metrics --json` names the same series as the text, with the same labels. */
static void test_json_matches_text(void)
{
	json_error_t jerr;
	json_t *v, *list;
	char *text;
	size_t i;

	CBT_EQ_LL(EX("metrics"), 0);
	text = strdup(out);
	CBT_EQ_LL(EX("--json", "metrics"), 0);
	v = json_loads(out, 0, &jerr);
	if (!v) {
		CBT_FAILF("metrics --json is not JSON: %s", jerr.text);
		free(text);
		return;
	}
	list = json_object_get(v, "metrics");
	CU_ASSERT(json_array_size(list) > 20);
	for (i = 0; i < json_array_size(list); i++) {
		json_t *s = json_array_get(list, i), *labels = json_object_get(s, "labels");
		const char *name = json_string_value(json_object_get(s, "name"));
		char line[512];

		CU_ASSERT(json_object_get(labels, "job") == NULL);
		if (!name || !json_object_get(labels, "batch_job"))
			continue;
		/* Ordered as printed: batch_job first, then the other labels. */
		snprintf(line, sizeof(line), "\n%s{batch_job=\"%s\"", name,
			 json_string_value(json_object_get(labels, "batch_job")));
		CBT_CONTAINS(text, line);
	}
	json_decref(v);
	free(text);
}

/* A free TCP port on 127.0.0.1 (free when asked; prometheus binds it next). */
static int free_port(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(a);
	int fd = socket(AF_INET, SOCK_STREAM, 0), port = -1;

	if (fd >= 0 && bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&a, &len) == 0)
		port = ntohs(a.sin_port);
	if (fd >= 0)
		close(fd);
	return port;
}

/* The result vector of an instant query, or NULL (still empty, or no answer). */
static json_t *query(int port, const char *promql, json_t **doc)
{
	char path[1024];
	char *q = curl_easy_escape(NULL, promql, 0);
	struct resp r;
	json_t *res = NULL;

	*doc = NULL;
	snprintf(path, sizeof(path), "/api/v1/query?query=%s", q ? q : "");
	curl_free(q);
	if (http(&r, port, "GET", path, NULL, 0, NULL) == 0 && r.status == 200 && r.body) {
		*doc = json_loads(r.body, 0, NULL);
		res = json_object_get(json_object_get(*doc, "data"), "result");
		if (json_array_size(res) == 0)
			res = NULL;
	}
	resp_free(&r);
	return res;
}

/* The value of a one-element result, as Prometheus sends it ("123"). */
static long long sample(json_t *res)
{
	json_t *v = json_object_get(json_array_get(res, 0), "value");
	const char *s = json_string_value(json_array_get(v, 1));

	return s ? (long long)strtod(s, NULL) : -1;
}

static void test_a_real_prometheus_scrapes_serve(void)
{
	PGconn *conn = cbt_connect(db);
	char config[700], tsdb[700], log[700], listen[64], yaml[1024];
	int port = free_port();
	pid_t pid;
	json_t *doc = NULL, *res = NULL, *metric;
	double until;

	if (srv.pid <= 0 || port < 0) {
		CBT_FAILF("no server (the fixture failed) or no free port");
		PQfinish(conn);
		return;
	}
	snprintf(config, sizeof(config), "%s/prometheus.yml", scratch);
	snprintf(tsdb, sizeof(tsdb), "%s/tsdb", scratch);
	snprintf(log, sizeof(log), "%s/prometheus.log", scratch);
	snprintf(yaml, sizeof(yaml),
		 "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n"
		 "scrape_configs:\n  - job_name: cbatch\n    static_configs:\n"
		 "      - targets: ['127.0.0.1:%d']\n",
		 srv.port);
	CBT_EQ_LL(write_text(config, yaml), 0);
	snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%d", port);
	{
		char cfg_arg[720], tsdb_arg[720];
		const char *argv[] = { "prometheus", cfg_arg, tsdb_arg, listen, NULL };

		snprintf(cfg_arg, sizeof(cfg_arg), "--config.file=%s", config);
		snprintf(tsdb_arg, sizeof(tsdb_arg), "--storage.tsdb.path=%s", tsdb);
		pid = cbt_spawn(argv, log);
	}
	if (pid <= 0) {
		PQfinish(conn);
		return;
	}
	/* Its first scrapes come within a few seconds of its start (60 s: a
	 * loaded machine). */
	until = cbt_now() + 60;
	while (cbt_now() < until) {
		json_decref(doc);
		res = query(port, "cbatch_items_read_total{batch_job=\"ledger\"}", &doc);
		if (res)
			break;
		cbt_sleep_ms(250);
	}
	if (!res) {
		char text[4096];

		CBT_FAILF("prometheus never had cbatch_items_read_total: %s",
			  read_file(log, text, sizeof(text)) == 0 ? text : "(no log)");
	} else {
		CBT_EQ_LL(json_array_size(res), 1);
		metric = json_object_get(json_array_get(res, 0), "metric");
		CBT_EQ_STR(json_string_value(json_object_get(metric, "batch_job")), "ledger");
		/* The scrape's own label is untouched: no exported_job. */
		CBT_EQ_STR(json_string_value(json_object_get(metric, "job")), "cbatch");
		CU_ASSERT(json_object_get(metric, "exported_job") == NULL);
		CBT_EQ_LL(sample(res),
			  cbt_query_ll(conn, "SELECT sum(read_count) FROM batch_step_execution"));
	}
	json_decref(doc);
	res = query(port, "cbatch_job_last_success_timestamp_seconds{batch_job=\"ledger\"}", &doc);
	CU_ASSERT(res != NULL);
	if (res)
		CBT_EQ_LL(sample(res),
			  cbt_query_ll(conn,
				       "SELECT extract(epoch FROM max(end_time))::bigint FROM "
				       "batch_job_execution WHERE status = 'COMPLETED'"));
	json_decref(doc);
	res = query(port, "cbatch_job_last_status{batch_job=\"ledger\"} == 1", &doc);
	CU_ASSERT(res != NULL);
	if (res) {
		CBT_EQ_LL(json_array_size(res), 1);
		metric = json_object_get(json_array_get(res, 0), "metric");
		CBT_EQ_STR(json_string_value(json_object_get(metric, "status")), "FAILED");
	}
	json_decref(doc);
	/* Every scrape was whole: up is 1 and nothing was refused. */
	res = query(port, "up{job=\"cbatch\"}", &doc);
	CU_ASSERT(res != NULL && sample(res) == 1);
	json_decref(doc);
	kill(pid, SIGTERM);
	CBT_EQ_LL(cbt_wait_timeout(pid, 20000), 0);
	PQfinish(conn);
}

/* @p series's value in the `metrics` text equals what @p sql counts in the
 * history (its first column), named in the failure. */
static void counts_rows(PGconn *conn, const char *series, const char *sql)
{
	long long want = cbt_query_ll(conn, sql), got = value_of(out, series);

	if (got != want)
		CBT_FAILF("%s is %lld, but the history has %lld (%s)", series, got, want, sql);
}

/*
 * Every counter against the rows it counts (issue 28.3: the orphaned
 * counter read 0 beside three ORPHANED firings in the history, because it
 * followed the firings ORPHANED now and a finished restart took it back).
 * The fixture's real runs and firings, and the events of a firing orphaned
 * by the real batch_schedule_orphans_of and then finished; the audit rows of
 * takeovers, fences and recovery as the engine records them.
 */
static void test_every_counter_counts_its_rows(void)
{
	PGconn *conn = cbt_connect(db);

	/* A firing of a node that is gone (no node row), orphaned by a live
	 * node's sweep (planning its recovery: it started no execution, so
	 * NOT_RECOVERED), then finished as a restart would finish it. */
	cbt_exec(conn, "INSERT INTO batch_schedule_firing (schedule_id, fire_time, kind, node_id, "
		       " status, job_name) SELECT schedule_id, '2020-01-01 03:00Z', 'SCHEDULED', "
		       " 'gone-node', 'LAUNCHED', 'ledger' FROM batch_schedule WHERE "
		       " schedule_name = 'tick'");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_orphans_of('sweeper', "
				     "NULL, NULL)"),
		  1);
	cbt_exec(conn, "UPDATE batch_schedule_firing SET status = 'FINISHED' WHERE node_id = "
		       "'gone-node'");
	/* Takeovers of both kinds of lock for both reasons, fences of a ledger
	 * execution, a recovery restart and a claim lost to another node. */
	cbt_exec(conn,
		 "INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, job_execution_id) "
		 "SELECT l, 'taker', o, (SELECT min(job_execution_id) FROM batch_job_execution) "
		 "FROM (VALUES ('cbatch.partition:1:0', 'LEASE_EXPIRED_TAKEOVER'), "
		 " ('cbatch.partition:1:1', 'OWNER_DEAD_TAKEOVER'), "
		 " ('cbatch.partition:1:1', 'OWNER_DEAD_TAKEOVER'), "
		 " ('ledger', 'LEASE_EXPIRED_TAKEOVER'), ('ledger', 'FENCED'), "
		 " ('ledger', 'FENCED')) v(l, o)");
	cbt_exec(
		conn,
		"INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, "
		" message) SELECT schedule_id, '2020-01-01 04:00Z', 'sweeper', o, 'test' "
		"FROM batch_schedule, (VALUES ('RESTARTED'), ('SKIPPED_CLAIMED'), ('BACKFILL')) v(o) "
		"WHERE schedule_name = 'tick'");
	CBT_EQ_LL(EX("metrics"), 0);
	counts_rows(conn, "cbatch_schedule_orphaned_total{batch_job=\"ledger\",schedule=\"tick\"}",
		    "SELECT count(*) FROM batch_schedule_event WHERE outcome = 'ORPHANED'");
	CU_ASSERT(value_of(out, "cbatch_schedule_orphaned_total{batch_job=\"ledger\","
				"schedule=\"tick\"}") >= 1);
	counts_rows(conn, "cbatch_schedule_fired_total{batch_job=\"ledger\",schedule=\"tick\"}",
		    "SELECT count(*) FROM batch_schedule_firing WHERE status IN ('LAUNCHED', "
		    "'FINISHED', 'ORPHANED')");
	counts_rows(conn,
		    "cbatch_schedule_skipped_overlap_total{batch_job=\"ledger\",schedule=\"tick\"}",
		    "SELECT count(*) FROM batch_schedule_firing WHERE status = 'SKIPPED_OVERLAP'");
	counts_rows(
		conn,
		"cbatch_schedule_failed_to_launch_total{batch_job=\"ledger\",schedule=\"tick\"}",
		"SELECT count(*) FROM batch_schedule_firing WHERE status = 'FAILED_TO_LAUNCH'");
	counts_rows(conn, "cbatch_schedule_missed_total{batch_job=\"ledger\",schedule=\"tick\"}",
		    "SELECT coalesce(sum(missed_count), 0) FROM batch_schedule_firing WHERE "
		    "kind <> 'SCHEDULED' AND missed_count > 0");
	counts_rows(conn,
		    "cbatch_schedule_not_recovered_total{batch_job=\"ledger\",schedule=\"tick\"}",
		    "SELECT count(*) FROM batch_schedule_event WHERE outcome = 'NOT_RECOVERED'");
	counts_rows(
		conn,
		"cbatch_schedule_recovery_restart_total{batch_job=\"ledger\",schedule=\"tick\"}",
		"SELECT count(*) FROM batch_schedule_event WHERE outcome = 'RESTARTED'");
	counts_rows(conn,
		    "cbatch_schedule_claim_lost_total{batch_job=\"ledger\",schedule=\"tick\"}",
		    "SELECT count(*) FROM batch_schedule_event WHERE outcome = 'SKIPPED_CLAIMED'");
	counts_rows(conn, "cbatch_schedule_backfill_total{batch_job=\"ledger\",schedule=\"tick\"}",
		    "SELECT count(*) FROM batch_schedule_event WHERE outcome = 'BACKFILL'");
	counts_rows(conn, "cbatch_lock_acquire_success_total",
		    "SELECT count(*) FROM batch_lock_audit WHERE outcome IN ('ACQUIRED', "
		    "'LEASE_EXPIRED_TAKEOVER', 'OWNER_DEAD_TAKEOVER')");
	counts_rows(conn, "cbatch_lock_acquire_failed_total",
		    "SELECT count(*) FROM batch_lock_audit WHERE outcome IN ('SKIPPED_HELD', "
		    "'ERROR')");
	counts_rows(conn, "cbatch_lock_lease_expired_total",
		    "SELECT count(*) FROM batch_lock_audit WHERE outcome = "
		    "'LEASE_EXPIRED_TAKEOVER'");
	counts_rows(conn, "cbatch_heartbeat_failure_total",
		    "SELECT count(*) FROM batch_lock_audit WHERE outcome = 'HEARTBEAT_FAILED'");
	counts_rows(conn, "cbatch_fenced_chunk_total",
		    "SELECT count(*) FROM batch_lock_audit WHERE outcome = 'FENCED'");
	counts_rows(conn, "cbatch_job_fenced_chunk_total{batch_job=\"ledger\"}",
		    "SELECT count(*) FROM batch_lock_audit a JOIN batch_job_execution e USING "
		    "(job_execution_id) JOIN batch_job_instance i USING (job_instance_id) WHERE "
		    "a.outcome = 'FENCED' AND i.job_name = 'ledger'");
	counts_rows(conn, "cbatch_lock_takeover_total{lock=\"partition\",reason=\"lease_expired\"}",
		    "SELECT count(*) FROM batch_lock_audit WHERE lock_name LIKE "
		    "'cbatch.partition:%' AND outcome = 'LEASE_EXPIRED_TAKEOVER'");
	counts_rows(conn, "cbatch_lock_takeover_total{lock=\"partition\",reason=\"owner_dead\"}",
		    "SELECT count(*) FROM batch_lock_audit WHERE lock_name LIKE "
		    "'cbatch.partition:%' AND outcome = 'OWNER_DEAD_TAKEOVER'");
	counts_rows(conn, "cbatch_lock_takeover_total{lock=\"job\",reason=\"lease_expired\"}",
		    "SELECT count(*) FROM batch_lock_audit WHERE lock_name NOT LIKE "
		    "'cbatch.partition:%' AND outcome = 'LEASE_EXPIRED_TAKEOVER'");
	counts_rows(conn, "cbatch_lock_takeover_total{lock=\"job\",reason=\"owner_dead\"}",
		    "SELECT count(*) FROM batch_lock_audit WHERE lock_name NOT LIKE "
		    "'cbatch.partition:%' AND outcome = 'OWNER_DEAD_TAKEOVER'");
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "fixture: runs, a running execution, a schedule, the server", test_fixture },
	{ "promtool check metrics: the CLI's and /metrics, no warning",
	  test_promtool_accepts_the_cli_and_http_output },
	{ "last success, failure, status, running age; schedule next fire and last firing",
	  test_what_people_alert_on },
	{ "scheduler nodes by host: live ones, and the newest heartbeat",
	  test_scheduler_nodes_by_host },
	{ "metrics --json: the text's names and labels", test_json_matches_text },
	{ "a real Prometheus scrapes serve; its API has batch_job",
	  test_a_real_prometheus_scrapes_serve },
	{ "every counter counts its rows", test_every_counter_counts_its_rows },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	if (!have("promtool") || !have("prometheus")) {
		printf("SKIPPED: promtool and prometheus are needed (Debian's prometheus package: "
		       "bash scripts/install-deps.sh)\n");
		return 77;
	}
	return cbt_main("prometheus", init, clean, tests);
}
