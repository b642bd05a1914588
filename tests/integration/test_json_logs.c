/*
 * JSON logs (issue 29, item 1): every line the daemons and the runs they
 * start print, through a scenario with overlaps, an outage of the
 * repository, a node killed with its run and recovered by the other, a
 * launch and an action from the console, and a killed worker's partition
 * taken over by another, is one JSON object with the
 * documented fields, whose event is in the vocabulary of docs/logs.md. One node
 * is given --log-format json, the other CBATCH_LOG_FORMAT=json, serve the
 * option: the runs they start inherit it.
 */
#include "cbtest.h"
#include "sched.h"
#include "serve_client.h"

#include <curl/curl.h>
#include <jansson.h>
#include <regex.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static cbt_sched sched;

static int init(void)
{
	curl_global_init(CURL_GLOBAL_ALL);
	return cbt_sched_init(&sched, "json_logs");
}

static int clean(void)
{
	curl_global_cleanup();
	return cbt_sched_clean(&sched);
}

#define EX(...)         CBT_SCHED_EX(&sched, __VA_ARGS__)
#define SPAWN(log, ...) CBT_SCHED_SPAWN(&sched, (log), __VA_ARGS__)

/* The documented event vocabulary: the first cells of docs/logs.md's log event table. */
static int vocabulary(char names[][64], int max)
{
	char path[4096], line[1024];
	int n = 0, in = 0;
	FILE *f;

	snprintf(path, sizeof(path), "%s/docs/logs.md", cbt_source_dir());
	if (!(f = fopen(path, "r")))
		return -1;
	while (fgets(line, sizeof(line), f) && n < max) {
		if (strncmp(line, "| event | level | when |", 23) == 0)
			in = 1;
		else if (in && line[0] != '|')
			break;
		else if (in && sscanf(line, "| `%63[^`]`", names[n]) == 1)
			n++;
	}
	fclose(f);
	return n;
}

/* Whether @p path's text contains @p needle. */
static int log_has(const char *path, const char *needle)
{
	static char buf[1 << 20];
	FILE *f = fopen(path, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = '\0';
	fclose(f);
	return strstr(buf, needle) != NULL;
}

/* Wait up to @p ms for @p path to contain @p needle. */
static int wait_log(const char *path, const char *needle, int ms)
{
	double t0 = cbt_now();

	while (!log_has(path, needle)) {
		if ((cbt_now() - t0) * 1000 > ms)
			return 0;
		cbt_sleep_ms(50);
	}
	return 1;
}

/* Every line of @p path is a documented event; the events seen are added
 * to @p seen (a space-separated list). @return the lines checked. */
static int check_lines(const char *path, char names[][64], int nnames, char *seen, size_t size)
{
	static const char *const levels[] = { "debug", "info", "warn", "error" };
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int lineno = 0, bad = 0;
	regex_t iso;
	FILE *f = fopen(path, "r");

	if (!f) {
		CBT_FAILF("no log %s", path);
		return 0;
	}
	regcomp(&iso,
		"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}[.][0-9]{3}[+-][0-9]{2}:[0-9]{2}$",
		REG_EXTENDED | REG_NOSUB);
	while ((len = getline(&line, &cap, f)) > 0) {
		json_error_t e;
		json_t *o = json_loads(line, 0, &e);
		const char *event = json_string_value(json_object_get(o, "event"));
		const char *level = json_string_value(json_object_get(o, "level"));
		const char *time = json_string_value(json_object_get(o, "time"));
		int known = 0, level_ok = 0;

		lineno++;
		for (int i = 0; event && i < nnames; i++)
			known |= strcmp(event, names[i]) == 0;
		for (size_t i = 0; level && i < 4; i++)
			level_ok |= strcmp(level, levels[i]) == 0;
		if (!o || !json_is_object(o) || !known || !level_ok || !time ||
		    regexec(&iso, time, 0, NULL, 0) != 0 ||
		    !json_is_integer(json_object_get(o, "pid")) ||
		    !json_is_string(json_object_get(o, "message")) ||
		    !json_is_string(json_object_get(o, "source"))) {
			if (bad++ < 5)
				CBT_FAILF("%s line %d is not a documented event: %.300s", path,
					  lineno, line);
		} else if (!strstr(seen, event) && strlen(seen) + strlen(event) + 2 < size) {
			strcat(seen, " ");
			strcat(seen, event);
		}
		json_decref(o);
	}
	free(line);
	fclose(f);
	regfree(&iso);
	return lineno;
}

static void test_every_line_is_a_documented_event(void)
{
	static char names[64][64];
	char la[512], lb[512], lc[512], ls[4096], token[512], hdr[600], seen[2048] = "";
	const char *auth[2] = { hdr, NULL };
	int nnames = vocabulary(names, 64), lines = 0;
	struct server srv = { 0 };
	struct resp r;
	pid_t a, b;
	FILE *t;

	CU_ASSERT_FATAL(nnames > 20);
	cbt_sched_clear(&sched);
	CBT_EQ_LL(EX("example-setup", "tick", "--reset"), 0);
	/* Every second, runs of 1.5 s: overlaps skipped; a killed node's run
	 * restarted by the other after its lease. */
	CBT_EQ_LL(EX("schedule", "add", "logs", "--cron", "* * * * * *", "--job", "tick",
		     "at={fire_utc}", "-sleepMs:long=1500", "--recover-delay", "1"),
		  0);
	cbt_sched_log_path(&sched, la, sizeof(la), "json-a");
	cbt_sched_log_path(&sched, lb, sizeof(lb), "json-b");
	a = SPAWN(la, "--log-format", "json", "scheduler", "--lease", "2", "--verbose");
	setenv("CBATCH_LOG_FORMAT", "json", 1);
	b = SPAWN(lb, "scheduler", "--lease", "2");
	unsetenv("CBATCH_LOG_FORMAT");
	CU_ASSERT_FATAL(a > 0 && b > 0);
	/* Fired, ended, skipped for overlap. */
	CU_ASSERT(cbt_wait_until(sched.conn, 90000,
				 "SELECT (count(*) FILTER (WHERE status = 'FINISHED') >= 2 AND "
				 " count(*) FILTER (WHERE status = 'SKIPPED_OVERLAP') >= 1)::int "
				 "FROM batch_schedule_firing"));
	/* An outage: every session of the repository's clients ends. */
	cbt_exec(sched.conn, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
			     "datname = current_database() AND pid <> pg_backend_pid() AND "
			     "backend_type = 'client backend'");
	CU_ASSERT(wait_log(la, "\"event\":\"repository.back\"", 60000) ||
		  wait_log(lb, "\"event\":\"repository.back\"", 1000));
	/* A node killed while its run runs: the other restarts it. */
	CU_ASSERT(cbt_wait_until(sched.conn, 60000,
				 "SELECT count(*) FROM batch_schedule_firing f JOIN "
				 "batch_scheduler_node n ON n.node_id = f.node_id "
				 "WHERE f.status = 'LAUNCHED'"));
	kill(a, SIGKILL);
	cbt_wait_timeout(a, 60000);
	kill(b, SIGKILL);
	cbt_wait_timeout(b, 60000);
	cbt_sched_log_path(&sched, lc, sizeof(lc), "json-c");
	setenv("CBATCH_LOG_FORMAT", "json", 1);
	b = SPAWN(lc, "scheduler", "--lease", "2");
	unsetenv("CBATCH_LOG_FORMAT");
	CU_ASSERT(wait_log(lc, "\"event\":\"firing.recovery\"", 90000));
	cbt_sched_stop_between_runs(&sched, b);

	/* The console: a launch (its child's lines) and an action. */
	snprintf(token, sizeof(token), "%s/json-logs-token-%d", cbt_tmpdir(), (int)getpid());
	t = fopen(token, "w");
	CU_ASSERT_FATAL(t != NULL);
	fputs("json-logs-token-0123456789\n", t);
	fclose(t);
	chmod(token, 0600);
	snprintf(hdr, sizeof(hdr), "Authorization: Bearer json-logs-token-0123456789");
	if (server_start(&srv, sched.db,
			 (const char *const[]){ "--log-format", "json", "--admin-token-file", token,
						NULL }) == 0) {
		static const char body[] = "{\"params\": [\"at=console\"]}";

		CBT_EQ_LL(http(&r, srv.port, "POST", "/api/v1/jobs/tick/executions", body,
			       strlen(body), auth),
			  0);
		if (r.status != 201 && r.status != 202)
			CBT_FAILF("launch: %ld %.300s", r.status, r.body ? r.body : "");
		resp_free(&r);
		CU_ASSERT(wait_log(srv.log, "\"event\":\"serve.child_exited\"", 60000));
		CBT_EQ_LL(server_stop(&srv), 0);
		snprintf(ls, sizeof(ls), "%s", srv.log);
	} else {
		ls[0] = '\0';
	}
	unlink(token);

	lines += check_lines(la, names, nnames, seen, sizeof(seen));
	lines += check_lines(lb, names, nnames, seen, sizeof(seen));
	lines += check_lines(lc, names, nnames, seen, sizeof(seen));
	if (ls[0])
		lines += check_lines(ls, names, nnames, seen, sizeof(seen));
	CU_ASSERT(lines >= 15);
	/* What the scenario made happen was said. */
	{
		static const char *const want[] = {
			"node.started", "firing.fired",    "firing.ended",    "firing.skipped",
			"job.ended",    "repository.lost", "repository.back", "firing.recovery",
			"node.stopped", "serve.listening", "serve.action",    "serve.child_exited",
			"serve.stopped"
		};

		for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
			if (!strstr(seen, want[i]))
				CBT_FAILF("no %s event in the logs (seen:%s)", want[i], seen);
	}
}

/* Workers in JSON: one killed while it runs a partition, another takes it
 * over; every line of the manager, both workers and the taker is a
 * documented event, and the takeover is said as one. */
static void test_a_worker_takeover_in_json(void)
{
	static char names[64][64];
	char lm[512], lw[512], lt[512], seen[2048] = "";
	int nnames = vocabulary(names, 64), lines = 0;
	pid_t mgr, w, t;

	CU_ASSERT_FATAL(nnames > 20);
	CBT_EQ_LL(EX("example-setup", "ledger", "--rows", "4000", "--reset"), 0);
	cbt_exec(sched.conn, "TRUNCATE ledger");
	cbt_sched_log_path(&sched, lm, sizeof(lm), "json-manager");
	cbt_sched_log_path(&sched, lw, sizeof(lw), "json-worker");
	cbt_sched_log_path(&sched, lt, sizeof(lt), "json-taker");
	mgr = SPAWN(lm, "--log-format", "json", "run", "ledger_partitioned", "run.id:long=1",
		    "-partition.threads:long=0", "-partition.count:long=1", "-chunk.size:long=2");
	w = SPAWN(lw, "--log-format", "json", "worker");
	CU_ASSERT_FATAL(mgr > 0 && w > 0);
	CU_ASSERT(cbt_wait_until(sched.conn, 60000,
				 "SELECT (count(*) = 1)::int FROM batch_step_execution WHERE "
				 "partition_index IS NOT NULL AND status = 'STARTED' "
				 "AND commit_count > 2"));
	kill(w, SIGKILL);
	cbt_wait_timeout(w, 10000);
	t = SPAWN(lt, "--log-format", "json", "worker", "--exit-when-idle", "1");
	CU_ASSERT_FATAL(t > 0);
	CBT_EQ_LL(cbt_wait_timeout(t, 120000), 0);
	CBT_EQ_LL(cbt_wait_timeout(mgr, 120000), 0);
	CU_ASSERT(log_has(lt, "\"event\":\"partition.claimed\""));
	CU_ASSERT(log_has(lt, "took over ledger_partitioned"));
	lines += check_lines(lm, names, nnames, seen, sizeof(seen));
	lines += check_lines(lw, names, nnames, seen, sizeof(seen));
	lines += check_lines(lt, names, nnames, seen, sizeof(seen));
	CU_ASSERT(lines >= 4);
	for (const char *const *e = (const char *const[]){ "partition.claimed", "partition.ended",
							   "node.stopped", "job.ended", NULL };
	     *e; e++)
		if (!strstr(seen, *e))
			CBT_FAILF("no %s event in the logs (seen:%s)", *e, seen);
}

/* A bad format is refused before anything runs: exit 2, naming it. */
static void test_a_bad_format_exits_2(void)
{
	CBT_EQ_LL(EX("--log-format", "yaml", "scheduler"), 2);
	CBT_CONTAINS(sched.errout, "--log-format 'yaml': expected text or json");
	setenv("CBATCH_LOG_FORMAT", "xml", 1);
	CBT_EQ_LL(EX("worker"), 2);
	unsetenv("CBATCH_LOG_FORMAT");
	CBT_CONTAINS(sched.errout, "CBATCH_LOG_FORMAT 'xml': expected text or json");
}

static const CU_TestInfo tests[] = {
	{ "every_line_is_a_documented_event", test_every_line_is_a_documented_event },
	{ "a_worker_takeover_in_json", test_a_worker_takeover_in_json },
	{ "a_bad_format_exits_2", test_a_bad_format_exits_2 },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("json_logs", init, clean, tests);
}
