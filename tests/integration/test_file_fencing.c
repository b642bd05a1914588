/*
 * File writers under fencing and lost commits (issue 8, items 1, 2, 13e):
 *
 * - a frozen owner (SIGSTOP) is taken over after its lease; the successor
 *   completes the file; the zombie wakes, runs into its fence and exits,
 *   and the file stays exactly the successor's complete output (plain and
 *   atomic mode);
 * - the answer to a chunk's COMMIT is lost (a proxy in front of the server
 *   cuts the connection after the server committed): the committed lines
 *   stay, with a retry after reconnect as after a restart;
 * - a reconnect that fails after a lost connection reports both the chunk's
 *   own error and why the reconnect failed.
 *
 * The zombie is a real process: this program run as `--as-job`, a CLI with
 * one test job (a keyset reader over `src`, a CSV writer) whose processor
 * freezes its own process (SIGSTOP) on the item CBT_PAUSE_AT names, so the
 * freeze lands at a known point: mid-chunk, after chunks committed, holding
 * no row locks (the chunk so far only read).
 */
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cbatch.h>

#include "cbtest.h"
#include "numbers.h"

#define ROWS  2000
#define CHUNK 100

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;

/* ---- the test job ---------------------------------------------------------- */

static const char *const cols[] = { "id", "payload" };
static const char *const key[] = { "id" };

static int format_row(void *ctx, const void *item, cb_csv_row *row, cb_error *err)
{
	const cb_row *r = item;

	(void)ctx, (void)err;
	for (int i = 0; i < 2; i++)
		cb_csv_row_add(row, cb_row_get(r, i), (size_t)cb_row_len(r, i));
	return 0;
}

/* Freeze this whole process on the item CBT_PAUSE_AT names (once); fail
 * the chunk on the item CBT_FAIL_AT names (once). */
static int pause_at(void *state, cb_chunk *chunk, void *item, void **out, cb_error *err)
{
	const char *at = getenv("CBT_PAUSE_AT");
	const char *fail = getenv("CBT_FAIL_AT");

	(void)state, (void)chunk;
	if (at && strcmp(cb_row_get(item, 0), at) == 0) {
		unsetenv("CBT_PAUSE_AT");
		raise(SIGSTOP);
	}
	if (fail && strcmp(cb_row_get(item, 0), fail) == 0) {
		unsetenv("CBT_FAIL_AT");
		return cb_error_set(err, CB_ERROR, "injected failure at id %s",
				    cb_row_get(item, 0));
	}
	*out = item;
	return 0;
}

static int build_export(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	cb_pg_keyset_options ro = CB_PG_KEYSET_OPTIONS_INIT;
	cb_csv_writer_options wo = CB_CSV_WRITER_OPTIONS_INIT;
	const cb_params *p = cb_step_context_params(sc);
	long long atomic = 0, append = 0;
	int rc;

	(void)user;
	ro.table = "src";
	ro.columns = cols;
	ro.ncolumns = 2;
	ro.key_columns = key;
	ro.nkeys = 1;
	rc = cb_pg_keyset_reader_new(&parts->reader, &ro, err);
	if (rc < 0)
		return rc;
	parts->processor.version = CB_PROCESSOR_VERSION;
	parts->processor.process = pause_at;
	(void)cb_params_get_long(p, "atomic", &atomic);
	wo.path = cb_params_get(p, "file");
	wo.header = cols;
	wo.nheader = 2;
	wo.format = format_row;
	wo.atomic = atomic != 0;
	(void)cb_params_get_long(p, "append", &append);
	wo.if_exists = append ? CB_FILE_APPEND : CB_FILE_FAIL;
	rc = cb_csv_writer_new(&parts->writers[0], &wo, err);
	if (rc == 0)
		parts->nwriters = 1;
	return rc;
}

/* The job: `file_export file=PATH [-atomic:long=1] [-append:long=1]`, retry
 * @p retry_limit. PATH is a template (cb_file_path_expand). */
static cb_job *export_job(const char *name, unsigned int retry_limit, cb_error *err)
{
	cb_step_def step = CB_STEP_DEF_INIT;
	cb_job *job = NULL;

	if (cb_job_new(&job, name, err) < 0)
		return NULL;
	step.name = "export";
	step.build = build_export;
	step.chunk_size = CHUNK;
	step.retry_limit = retry_limit;
	step.retry_backoff_ms = 10;
	if (cb_job_add_step(job, &step, err) < 0 ||
	    cb_job_add_param(job, "file", CB_PARAM_STRING, 1, err) < 0) {
		cb_job_free(job);
		return NULL;
	}
	return job;
}

/* This program as a job process: a CLI with the test job registered. */
static int job_main(int argc, char **argv)
{
	cb_error err = CB_ERROR_INIT;
	cb_registry *reg = NULL;
	cb_job *job;
	int rc;

	if (cb_registry_new(&reg, &err) < 0 || !(job = export_job("file_export", 0, &err)) ||
	    cb_registry_add(reg, job, &err) < 0) {
		fprintf(stderr, "file_fencing job: %s\n", err.message);
		cb_registry_free(reg);
		return 1;
	}
	rc = cb_cli_main(reg, argc, argv);
	cb_registry_free(reg);
	return rc;
}

/* ---- data and files -------------------------------------------------------- */

static int init(void)
{
	if (cbt_repo_db(db, sizeof(db), "file_fencing", &conn) < 0)
		return -1;
	/* Varying line lengths; a comma makes the writer quote some fields. */
	return cbt_exec(conn, "CREATE TABLE src (id bigint PRIMARY KEY, payload text NOT NULL); "
			      "INSERT INTO src SELECT i, 'row-' || i || repeat('x', i % 37) || "
			      "CASE WHEN i % 11 = 0 THEN ',q' ELSE '' END "
			      "FROM generate_series(1, 2000) i") < 0 ?
		       -1 :
		       0;
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

/* The complete export, as the database says it must be. */
static char *expected_output(size_t *len)
{
	PGresult *res = PQexec(conn, "SELECT string_agg(CASE WHEN payload LIKE '%,%' THEN id || "
				     "',\"' || payload || '\"' ELSE id || ',' || payload END, "
				     "E'\\n' ORDER BY id) || E'\\n' FROM src");
	char *out = NULL;

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1) {
		const char *body = PQgetvalue(res, 0, 0);
		size_t n = strlen(body);

		out = malloc(n + 16);
		if (out) {
			memcpy(out, "id,payload\n", 11);
			memcpy(out + 11, body, n + 1);
			*len = n + 11;
		}
	} else {
		CBT_FAILF("expected output: %s", PQerrorMessage(conn));
	}
	PQclear(res);
	return out;
}

/* The first line where @p a and @p b differ (1-based), 0 if equal. */
static long first_difference(const char *a, size_t alen, const char *b, size_t blen)
{
	long line = 1;

	for (size_t i = 0; i < alen && i < blen; i++) {
		if (a[i] != b[i])
			return line;
		line += a[i] == '\n';
	}
	return alen == blen ? 0 : line;
}

/* The newest export step execution's committed file offset. */
static long long committed_offset(const char *job)
{
	return cbt_queryp_ll(
		conn,
		"SELECT (c.serialized_context->'writer.0'->>'offset')::bigint FROM "
		"batch_step_execution_context c JOIN batch_step_execution s USING "
		"(step_execution_id) JOIN batch_job_execution e USING (job_execution_id) "
		"JOIN batch_job_instance i USING (job_instance_id) WHERE i.job_name = $1 "
		"ORDER BY s.step_execution_id DESC LIMIT 1",
		"s", job);
}

/* The file at @p path is exactly the complete export, as committed. */
static void assert_exact(const char *path, const char *job, const char *when)
{
	size_t want_len = 0, have_len;
	char *want = expected_output(&want_len);
	char *have = cbt_slurp(path, &have_len);
	long diff;

	if (!have) {
		CBT_FAILF("%s: %s is missing", when, path);
		free(want);
		return;
	}
	diff = want ? first_difference(want, want_len, have, have_len) : -1;
	if (diff != 0)
		CBT_FAILF("%s: %s is %zu bytes, not the %zu of the complete export (first "
			  "difference at line %ld)",
			  when, path, have_len, want_len, diff);
	CBT_EQ_LL(committed_offset(job), (long long)have_len);
	free(want);
	free(have);
}

/* A fresh directory of its own for a test's output. */
static void fresh_dir(char *dir, size_t size, const char *name)
{
	snprintf(dir, size, "%s/%s-%d", cbt_tmpdir(), name, (int)getpid());
	if (mkdir(dir, 0777) < 0 && errno != EEXIST)
		CBT_FAILF("mkdir %s: %s", dir, strerror(errno));
}

/* How many entries @p dir has (besides . and ..). */
static int entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;

	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* ---- item 1: a fenced zombie ----------------------------------------------- */

static const char *self_exe(void)
{
	static char path[1024];

	if (!path[0]) {
		ssize_t n = readlink("/proc/self/exe", path, sizeof(path) - 1);

		path[n > 0 ? n : 0] = '\0';
	}
	return path;
}

static pid_t spawn_job(const char *file_arg, const char *atomic_arg, const char *log)
{
	const char *argv[] = { self_exe(), "--as-job", "--db",    db,  "run", "file_export",
			       file_arg,   atomic_arg, "--lease", "1", NULL };

	return cbt_spawn(argv, log);
}

/* Wait until @p pid has stopped itself. */
static int wait_stopped(pid_t pid)
{
	for (int i = 0; i < 60000; i++) {
		int st;
		pid_t w = waitpid(pid, &st, WUNTRACED | WNOHANG);

		if (w == pid && WIFSTOPPED(st))
			return 0;
		if (w == pid) {
			CBT_FAILF("the job ended (status %d) before it froze", st);
			return -1;
		}
		cbt_sleep_ms(1);
	}
	CBT_FAILF("the job did not freeze");
	return -1;
}

static void zombie_scenario(int atomic)
{
	char dir[512], path[600], file_arg[640], log[700];
	const char *atomic_arg = atomic ? "-atomic:long=1" : "-atomic:long=0";
	pid_t zombie, successor;
	int rc = -1;

	fresh_dir(dir, sizeof(dir), atomic ? "fence-atomic" : "fence-plain");
	snprintf(path, sizeof(path), "%s/out.csv", dir);
	snprintf(file_arg, sizeof(file_arg), "file=%s", path);
	snprintf(log, sizeof(log), "%s.zombie.log", dir);
	cbt_exec(conn, "TRUNCATE batch_job_instance CASCADE; DELETE FROM batch_lock");

	/* The zombie freezes in chunk 8, after 7 chunks committed. */
	setenv("CBT_PAUSE_AT", "750", 1);
	zombie = spawn_job(file_arg, atomic_arg, log);
	unsetenv("CBT_PAUSE_AT");
	if (zombie < 0 || wait_stopped(zombie) < 0) {
		if (zombie > 0)
			kill(zombie, SIGKILL), kill(zombie, SIGCONT), cbt_wait(zombie);
		return;
	}
	CBT_EQ_LL(committed_offset("file_export") > 0, 1);
	/* A live table: the rows the zombie holds in memory (chunk 8) change
	 * before the successor exports them, so the zombie's lines, written at
	 * its old offset, would differ from the successor's. */
	cbt_exec(conn, "UPDATE src SET payload = payload || '+' WHERE id BETWEEN 701 AND 800");
	/* Past its lease, a successor takes over and completes the export
	 * (exit 4 while the frozen owner's lease still holds). */
	cbt_sleep_ms(1300);
	for (int tries = 0; tries < 40; tries++) {
		successor = spawn_job(file_arg, atomic_arg, NULL);
		rc = cbt_wait_timeout(successor, 120000);
		if (rc != 4)
			break;
		cbt_sleep_ms(250);
	}
	CBT_EQ_LL(rc, 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_job_execution WHERE status = "
				     "'COMPLETED' AND restart_of IS NOT NULL"),
		  1);
	assert_exact(path, "file_export", "after the successor");

	/* The zombie wakes: it runs into its fence and ends, failed. */
	kill(zombie, SIGCONT);
	CBT_EQ_LL(cbt_wait_timeout(zombie, 60000), 1);
	cbt_wait_sessions_gone(conn);
	assert_exact(path, "file_export", "after the zombie woke");
	/* Nothing else left behind: no temporary file, published or not. */
	CBT_EQ_LL(entries(dir), 1);
	unlink(path);
	rmdir(dir);
}

static void test_zombie_leaves_the_successors_file_alone(void)
{
	zombie_scenario(0);
}

static void test_zombie_leaves_the_successors_published_file_alone(void)
{
	zombie_scenario(1);
}

/* ---- item 2: a lost COMMIT answer ------------------------------------------ */

/*
 * A proxy on a Unix socket in front of the server. Once armed, it cuts the
 * connection whose client sends the next COMMIT: it forwards that COMMIT,
 * gives the server 300 ms to commit, and closes both sides without passing
 * on a byte of the answer.
 */
#define PROXY_PAIRS 32

typedef struct proxy {
	char dir[128], target[256];
	int lfd;
	pthread_t thread;
	atomic_int armed, cuts, stop;
	struct pair {
		int c, s;      /* client and server sides, -1 when free */
		int mute;      /* COMMIT seen: nothing goes back to the client */
		double cut_at; /* when to close both */
		char tail[8];  /* the last bytes from the client (a match may span reads) */
		size_t ntail;
	} pairs[PROXY_PAIRS];
} proxy;

static void pair_close(struct pair *p)
{
	if (p->c >= 0)
		close(p->c);
	if (p->s >= 0)
		close(p->s);
	p->c = p->s = -1;
	p->mute = 0;
	p->ntail = 0;
}

/* A socket address for @p path. @return 0, or -1 if the path is too long. */
static int unix_address(struct sockaddr_un *a, const char *path)
{
	size_t n = strlen(path);

	memset(a, 0, sizeof(*a));
	a->sun_family = AF_UNIX;
	if (n >= sizeof(a->sun_path))
		return -1;
	memcpy(a->sun_path, path, n + 1);
	return 0;
}

static int connect_unix(const char *path)
{
	struct sockaddr_un a;
	int fd = unix_address(&a, path) < 0 ? -1 : socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
		close(fd);
		fd = -1;
	}
	return fd;
}

static int send_all(int fd, const char *p, size_t n)
{
	while (n > 0) {
		ssize_t w = send(fd, p, n, MSG_NOSIGNAL);

		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Does the client stream contain the Parse of "COMMIT" (unnamed statement)? */
static int saw_commit(struct pair *p, const char *buf, size_t n)
{
	static const char pat[] = "\0COMMIT\0";
	const size_t plen = sizeof(pat) - 1;
	char joined[8 + 65536];
	size_t len = p->ntail;
	int found = 0;

	memcpy(joined, p->tail, p->ntail);
	memcpy(joined + len, buf, n);
	len += n;
	for (size_t i = 0; i + plen <= len && !found; i++)
		found = memcmp(joined + i, pat, plen) == 0;
	p->ntail = len < plen - 1 ? len : plen - 1;
	memcpy(p->tail, joined + len - p->ntail, p->ntail);
	return found;
}

static void *proxy_run(void *arg)
{
	proxy *px = arg;
	char buf[65536];

	while (!atomic_load(&px->stop)) {
		struct pollfd fds[1 + 2 * PROXY_PAIRS];
		int idx[1 + 2 * PROXY_PAIRS], nfds = 1;
		double now = cbt_now();

		fds[0] = (struct pollfd){ px->lfd, POLLIN, 0 };
		for (int i = 0; i < PROXY_PAIRS; i++) {
			struct pair *p = &px->pairs[i];

			if (p->c < 0)
				continue;
			if (p->cut_at > 0 && now >= p->cut_at) {
				pair_close(p);
				p->cut_at = 0;
				atomic_fetch_add(&px->cuts, 1);
				continue;
			}
			fds[nfds] = (struct pollfd){ p->c, POLLIN, 0 };
			idx[nfds++] = i;
			fds[nfds] = (struct pollfd){ p->s, POLLIN, 0 };
			idx[nfds++] = i;
		}
		if (poll(fds, (nfds_t)nfds, 20) <= 0)
			continue;
		if (fds[0].revents & POLLIN) {
			int c = accept(px->lfd, NULL, NULL);
			int s = c >= 0 ? connect_unix(px->target) : -1;
			int slot = -1;

			for (int i = 0; i < PROXY_PAIRS && slot < 0; i++)
				if (px->pairs[i].c < 0)
					slot = i;
			if (c >= 0 && s >= 0 && slot >= 0) {
				px->pairs[slot].c = c;
				px->pairs[slot].s = s;
			} else {
				if (c >= 0)
					close(c);
				if (s >= 0)
					close(s);
			}
		}
		for (int k = 1; k < nfds; k++) {
			struct pair *p = &px->pairs[idx[k]];
			int from_client = fds[k].fd == p->c;
			ssize_t n;

			if (p->c < 0 || !(fds[k].revents & (POLLIN | POLLHUP | POLLERR)))
				continue;
			n = recv(fds[k].fd, buf, sizeof(buf), 0);
			if (n <= 0) {
				if (!(n < 0 && errno == EINTR))
					pair_close(p);
				continue;
			}
			if (from_client) {
				if (!p->mute && atomic_load(&px->armed) &&
				    saw_commit(p, buf, (size_t)n)) {
					atomic_store(&px->armed, 0);
					p->mute = 1;
					p->cut_at = cbt_now() + 0.3;
				} else if (!p->mute) {
					(void)saw_commit(p, buf, (size_t)n);
				}
				if (send_all(p->s, buf, (size_t)n) < 0)
					pair_close(p);
			} else if (!p->mute && send_all(p->c, buf, (size_t)n) < 0) {
				pair_close(p);
			}
		}
	}
	for (int i = 0; i < PROXY_PAIRS; i++)
		pair_close(&px->pairs[i]);
	return NULL;
}

static int proxy_start(proxy *px)
{
	const char *host = getenv("CBATCH_TEST_PGHOST"), *port = getenv("CBATCH_TEST_PGPORT");
	struct sockaddr_un a;
	char sock[300];

	memset(px, 0, sizeof(*px));
	for (int i = 0; i < PROXY_PAIRS; i++)
		px->pairs[i].c = px->pairs[i].s = -1;
	snprintf(px->dir, sizeof(px->dir), "/tmp/cbt-proxy-XXXXXX");
	if (!host || !port || !mkdtemp(px->dir)) {
		CBT_FAILF("proxy: no cluster or no temp dir");
		return -1;
	}
	snprintf(px->target, sizeof(px->target), "%s/.s.PGSQL.%s", host, port);
	snprintf(sock, sizeof(sock), "%s/.s.PGSQL.%s", px->dir, port);
	px->lfd = unix_address(&a, sock) < 0 ? -1 : socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (px->lfd < 0 || bind(px->lfd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
	    listen(px->lfd, 16) < 0 || pthread_create(&px->thread, NULL, proxy_run, px) != 0) {
		CBT_FAILF("proxy: %s", strerror(errno));
		if (px->lfd >= 0)
			close(px->lfd);
		return -1;
	}
	return 0;
}

static void proxy_stop(proxy *px)
{
	char sock[300];

	atomic_store(&px->stop, 1);
	pthread_join(px->thread, NULL);
	close(px->lfd);
	snprintf(sock, sizeof(sock), "%s/.s.PGSQL.%s", px->dir, getenv("CBATCH_TEST_PGPORT"));
	unlink(sock);
	rmdir(px->dir);
}

/* Arms the proxy after the second chunk committed; counts commits seen. */
typedef struct arming {
	proxy *px;
	int chunks;
} arming;

static void arm_after_two(void *ctx, const cb_step_context *sc)
{
	arming *a = ctx;

	(void)sc;
	if (++a->chunks == 2)
		atomic_store(&a->px->armed, 1);
}

static void lost_commit_scenario(int retry)
{
	cb_error err = CB_ERROR_INIT;
	cb_listener l = { .version = CB_LISTENER_VERSION };
	char dir[512], path[600], file_arg[640], via[CBT_CONNINFO_MAX + 200];
	const char *name = retry ? "lost_commit_retry" : "lost_commit_restart";
	cb_params *p = NULL;
	cb_job *job = export_job(name, retry ? 3 : 0, &err);
	PGconn *pconn;
	cb_job_result r;
	arming a = { 0 };
	proxy px;

	CBT_PASS_FATAL(job ? 0 : err.code, &err);
	fresh_dir(dir, sizeof(dir), name);
	snprintf(path, sizeof(path), "%s/out.csv", dir);
	snprintf(file_arg, sizeof(file_arg), "file=%s", path);
	if (proxy_start(&px) < 0) {
		cb_job_free(job);
		return;
	}
	a.px = &px;
	l.ctx = &a;
	l.after_chunk = arm_after_two;
	CBT_PASS(cb_job_add_listener(job, &l, &err), &err);
	CBT_PASS(cb_params_new(&p, &err), &err);
	CBT_PASS(cb_params_parse_arg(p, file_arg, &err), &err);
	/* The job's connection goes through the proxy (a later host= wins). */
	snprintf(via, sizeof(via), "%s host=%s", db, px.dir);
	pconn = cbt_connect(via);
	CBT_PASS(cb_job_launch(&r, pconn, job, p, NULL, &err), &err);
	CBT_EQ_LL(atomic_load(&px.cuts), 1);
	if (retry) {
		CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
		if (r.status != CB_STATUS_COMPLETED)
			fprintf(stderr, "exit message: %s\n", r.exit_message);
	} else {
		/* No retries: a lost connection is ridden through all the same
		 * (no item failed), the same execution going on. */
		CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
		CBT_EQ_LL(r.restarted, 0);
		if (r.status != CB_STATUS_COMPLETED)
			fprintf(stderr, "exit message: %s\n", r.exit_message);
	}
	/* The cut COMMIT did commit (chunk 3 was not done again): 20 chunks,
	 * one of which the client never saw commit. */
	CBT_EQ_LL(a.chunks, ROWS / CHUNK - 1);
	assert_exact(path, name, "after the lost COMMIT");
	PQfinish(pconn);
	proxy_stop(&px);
	cb_params_free(p);
	cb_job_free(job);
	unlink(path);
	rmdir(dir);
}

static void test_lost_commit_answer_is_retried_keeping_committed_lines(void)
{
	lost_commit_scenario(1);
}

static void test_lost_commit_answer_without_retries_keeps_committed_lines(void)
{
	lost_commit_scenario(0);
}

/* ---- item 13e: the chunk's own error survives a failed reconnect ------------ */

typedef struct nologin {
	PGconn *admin;
	const char *role;
	int chunks;
} nologin;

/* After the first chunk: the role may no longer log in (sessions stay). */
static void forbid_login(void *ctx, const cb_step_context *sc)
{
	nologin *n = ctx;
	char sql[200];

	(void)sc;
	if (++n->chunks == 1) {
		snprintf(sql, sizeof(sql), "ALTER ROLE %s NOLOGIN", n->role);
		cbt_exec(n->admin, sql);
	}
}

static void test_failed_reconnect_reports_the_chunks_own_error(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_listener l = { .version = CB_LISTENER_VERSION };
	cb_step_def s = CB_STEP_DEF_INIT;
	/* The second chunk's session dies under it (its own backend terminated). */
	cbt_numbers n = { .last = 50, .extra_sql = "SELECT cbt_cut_second()" };
	char role[64], sql[1024], conninfo[CBT_CONNINFO_MAX + 100];
	nologin nl = { conn, role, 0 };
	cb_job *job = NULL;
	PGconn *own;
	cb_job_result r;
	int rc;

	snprintf(role, sizeof(role), "cbt_ff_role_%ld", (long)getpid());
	cbt_exec(conn, "DROP TABLE IF EXISTS sink; CREATE TABLE sink (n bigint NOT NULL); "
		       "DROP SEQUENCE IF EXISTS cbt_cuts; CREATE SEQUENCE cbt_cuts; "
		       "CREATE OR REPLACE FUNCTION cbt_cut_second() RETURNS int LANGUAGE plpgsql "
		       "AS $$ BEGIN IF nextval('cbt_cuts') = 2 THEN "
		       "PERFORM pg_terminate_backend(pg_backend_pid()); END IF; RETURN 1; END $$");
	snprintf(sql, sizeof(sql),
		 "DROP ROLE IF EXISTS %s; CREATE ROLE %s LOGIN; GRANT USAGE ON SCHEMA public TO "
		 "%s; GRANT ALL ON ALL TABLES IN SCHEMA public TO %s; GRANT ALL ON ALL SEQUENCES "
		 "IN SCHEMA public TO %s",
		 role, role, role, role, role);
	cbt_exec(conn, sql);
	snprintf(conninfo, sizeof(conninfo), "%s user=%s", db, role);
	own = cbt_connect(conninfo);

	CBT_PASS_FATAL(cb_job_new(&job, "reconnect_fails", &err), &err);
	/* A refused reconnect is waited out for the rest of the lease: keep it
	 * short. */
	CBT_PASS(cb_job_set_lock(job, NULL, 3, 0, &err), &err);
	s.name = "numbers";
	s.build = cbt_numbers_build;
	s.user = &n;
	s.chunk_size = 10;
	s.retry_limit = 3;
	s.retry_backoff_ms = 10;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	l.ctx = &nl;
	l.after_chunk = forbid_login;
	CBT_PASS(cb_job_add_listener(job, &l, &err), &err);
	rc = cb_job_launch(&r, own, job, NULL, NULL, &err);
	/* The message the caller gets (the repository is gone too, so the
	 * launch fails) tells the whole story, on one line. */
	{
		const char *msg = rc < 0 ? err.message : r.exit_message;

		CBT_CONTAINS(msg, "chunk 2: ");
		/* in cbatch's words, not libpq's "FATAL:  terminating connection ..." */
		CBT_CONTAINS(msg, "its database session was ended by another process");
		CBT_EQ_LL(strstr(msg, "FATAL:") == NULL, 1);
		CBT_CONTAINS(msg, "connecting again");
		CBT_CONTAINS(msg, "not permitted to log in");
		CBT_EQ_LL(strchr(msg, '\n') == NULL, 1);
		CBT_EQ_LL(rc < 0 || r.status == CB_STATUS_FAILED, 1);
	}
	PQfinish(own);
	snprintf(sql, sizeof(sql),
		 "ALTER ROLE %s LOGIN; SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
		 "WHERE usename = '%s'",
		 role, role);
	cbt_exec(conn, sql);
	cbt_wait_sessions_gone(conn);
	snprintf(sql, sizeof(sql), "DROP OWNED BY %s; DROP ROLE %s", role, role);
	cbt_exec(conn, sql);
	cb_job_free(job);
}

/* ---- issue 9: paths fixed at the first open, existing files --------------- */

/* The newest step execution's committed context, @p member of writer.0. */
static void committed_text(char *out, size_t size, const char *job, const char *member)
{
	char sql[600];

	snprintf(sql, sizeof(sql),
		 "SELECT c.serialized_context->'writer.0'->>'%s' FROM "
		 "batch_step_execution_context c JOIN batch_step_execution s USING "
		 "(step_execution_id) JOIN batch_job_execution e USING (job_execution_id) JOIN "
		 "batch_job_instance i USING (job_instance_id) WHERE i.job_name = '%s' "
		 "ORDER BY s.step_execution_id DESC LIMIT 1",
		 member, job);
	cbt_query_str(conn, sql, out, size);
}

/* Launch @p job with `file=@p file` (and -append:long=1 when @p append). */
static void launch(cb_job_result *r, cb_job *job, const char *file, int append)
{
	cb_error err = CB_ERROR_INIT;
	char arg[700];
	cb_params *p = NULL;

	snprintf(arg, sizeof(arg), "file=%s", file);
	CBT_PASS(cb_params_new(&p, &err), &err);
	CBT_PASS(cb_params_parse_arg(p, arg, &err), &err);
	if (append)
		CBT_PASS(cb_params_parse_arg(p, "-append:long=1", &err), &err);
	CBT_PASS(cb_job_launch(r, conn, job, p, NULL, &err), &err);
	cb_params_free(p);
}

static void test_restart_from_another_directory_finds_the_same_file(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_job *job = export_job("relative_export", 0, &err);
	char base[512], a[600], b[600], cwd[4096], want[700], saved[1024];
	cb_job_result r;
	long long first;

	CBT_PASS_FATAL(job ? 0 : err.code, &err);
	CU_ASSERT_FATAL(getcwd(cwd, sizeof(cwd)) != NULL);
	fresh_dir(base, sizeof(base), "relative");
	snprintf(a, sizeof(a), "%s/a", base);
	snprintf(b, sizeof(b), "%s/b", base);
	CU_ASSERT_FATAL(mkdir(a, 0777) == 0 && mkdir(b, 0777) == 0);
	/* The first execution runs in a/ and fails after 7 chunks. */
	CU_ASSERT_FATAL(chdir(a) == 0);
	setenv("CBT_FAIL_AT", "750", 1);
	launch(&r, job, "out-{job_execution}.csv", 0);
	unsetenv("CBT_FAIL_AT");
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	first = r.job_execution_id;
	snprintf(want, sizeof(want), "%s/out-%lld.csv", a, first);
	committed_text(saved, sizeof(saved), "relative_export", "path");
	CBT_EQ_STR(saved, want);
	/* The restart runs in b/, as another execution: it finishes the same file. */
	CU_ASSERT_FATAL(chdir(b) == 0);
	CBT_PASS(cb_job_restart(&r, conn, job, first, NULL, &err), &err);
	CU_ASSERT_FATAL(chdir(cwd) == 0);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CU_ASSERT(r.job_execution_id != first);
	assert_exact(want, "relative_export", "after the restart from another directory");
	CBT_EQ_LL(entries(a), 1);
	CBT_EQ_LL(entries(b), 0);
	unlink(want);
	rmdir(a);
	rmdir(b);
	rmdir(base);
	cb_job_free(job);
}

static void test_new_instance_refuses_an_existing_file(void)
{
	char dir[512], path[600], file_arg[640], out[4096], errout[8192];
	const char *argv[] = { self_exe(), "--as-job",    "--db",   db,
			       "run",      "file_export", file_arg, NULL };
	size_t len;
	char *kept;

	fresh_dir(dir, sizeof(dir), "exists");
	snprintf(path, sizeof(path), "%s/out.csv", dir);
	snprintf(file_arg, sizeof(file_arg), "file=%s", path);
	{
		FILE *f = fopen(path, "w");

		CU_ASSERT_FATAL(f != NULL);
		fputs("id,payload\n1,from an earlier export\n", f);
		fclose(f);
	}
	/* invalid input, nothing written: exit 2 */
	CBT_EQ_LL(cbt_run(argv, out, sizeof(out), errout, sizeof(errout)), 2);
	CBT_CONTAINS(errout, path);
	CBT_CONTAINS(errout, "exists; remove it, choose another path, or set append");
	kept = cbt_slurp(path, &len);
	CBT_EQ_LL(len, 36);
	CU_ASSERT(kept && memcmp(kept, "id,payload\n1,from an earlier export\n", 36) == 0);
	free(kept);
	CBT_EQ_LL(entries(dir), 1);
	unlink(path);
	rmdir(dir);
}

static void test_append_mode_appends_and_restarts_exactly(void)
{
	static const char prefix[] = "id,payload\n0,kept from before\n";
	cb_error err = CB_ERROR_INIT;
	cb_job *job = export_job("append_export", 0, &err);
	char dir[512], path[600];
	size_t want_len = 0, have_len = 0;
	char *want, *have, *full;
	cb_job_result r;
	FILE *f;

	CBT_PASS_FATAL(job ? 0 : err.code, &err);
	fresh_dir(dir, sizeof(dir), "append");
	snprintf(path, sizeof(path), "%s/out.csv", dir);
	f = fopen(path, "w");
	CU_ASSERT_FATAL(f != NULL);
	fputs(prefix, f);
	fclose(f);
	setenv("CBT_FAIL_AT", "750", 1);
	launch(&r, job, path, 1);
	unsetenv("CBT_FAIL_AT");
	CBT_EQ_STR(cb_status_name(r.status), "FAILED");
	/* Lines that no commit accounts for (a chunk written before a COMMIT
	 * that never happened) go on restart. */
	f = fopen(path, "a");
	CU_ASSERT_FATAL(f != NULL);
	fputs("999,never committed\n", f);
	fclose(f);
	CBT_PASS(cb_job_restart(&r, conn, job, r.job_execution_id, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	/* The old content, then the export without a second header. */
	full = expected_output(&want_len);
	CU_ASSERT_FATAL(full != NULL);
	want = malloc(want_len + sizeof(prefix));
	CU_ASSERT_FATAL(want != NULL);
	memcpy(want, prefix, sizeof(prefix) - 1);
	memcpy(want + sizeof(prefix) - 1, full + 11, want_len - 11);
	want_len = want_len - 11 + sizeof(prefix) - 1;
	have = cbt_slurp(path, &have_len);
	CU_ASSERT(have && first_difference(want, want_len, have, have_len) == 0);
	CBT_EQ_LL(committed_offset("append_export"), (long long)have_len);
	free(full);
	free(want);
	free(have);
	CBT_EQ_LL(entries(dir), 1);
	unlink(path);
	rmdir(dir);
	cb_job_free(job);
}

static const CU_TestInfo tests[] = {
	{ "zombie leaves the successor's file alone",
	  test_zombie_leaves_the_successors_file_alone },
	{ "zombie leaves the successor's published file alone (atomic)",
	  test_zombie_leaves_the_successors_published_file_alone },
	{ "lost COMMIT answer with retries keeps committed lines",
	  test_lost_commit_answer_is_retried_keeping_committed_lines },
	{ "lost COMMIT answer without retries keeps committed lines",
	  test_lost_commit_answer_without_retries_keeps_committed_lines },
	{ "failed reconnect reports the chunk's own error",
	  test_failed_reconnect_reports_the_chunks_own_error },
	{ "restart from another directory finds the same file",
	  test_restart_from_another_directory_finds_the_same_file },
	{ "new instance refuses an existing file", test_new_instance_refuses_an_existing_file },
	{ "append mode appends and restarts exactly",
	  test_append_mode_appends_and_restarts_exactly },
	CU_TEST_INFO_NULL,
};

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--as-job") == 0)
		return job_main(argc - 1, argv + 1);
	return cbt_main("file_fencing", init, clean, tests);
}
