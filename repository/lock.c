/*
 * The execution lock, repository side: the owner identity that holds it, and
 * its SQL (acquire and takeover, heartbeat, release, audit, listing,
 * force-unlock). Its engine side (lock name, taking it for a run, the fence
 * that every checkpoint carries) is framework/lock.c, the heartbeat thread
 * framework/heartbeat.c; the metrics are repository/metrics.c.
 */
#include "repo.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cbatch/lock.h"

/* ---- owner identity ---- */

static char owner_buf[200];
static pid_t owner_pid;
static pthread_mutex_t owner_mu = PTHREAD_MUTEX_INITIALIZER;

/*
 * State (field 3) and start time (field 22, clock ticks since boot) of
 * process @p pid from /proc/PID/stat. The command name (field 2) may hold
 * spaces and parentheses: fields are counted after its last ')'.
 * @return 0, or -1 when there is no such process (or no /proc).
 */
static int proc_stat(char *state, unsigned long long *start, long pid)
{
	char path[64], buf[1024], *p;
	size_t n;
	FILE *f;
	int field;

	snprintf(path, sizeof(path), "/proc/%ld/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	if (!p || p[1] != ' ')
		return -1;
	p += 2;
	*state = *p;
	for (field = 3; field < 22 && p; field++) {
		p = strchr(p, ' ');
		if (p)
			p++;
	}
	if (!p)
		return -1;
	*start = strtoull(p, NULL, 10);
	return 0;
}

/* This process's boot id (8 characters) and PID namespace inode, or "0". */
static void host_marks(char *boot, size_t boot_size, char *pidns, size_t pidns_size)
{
	char link[64] = "";
	FILE *f = fopen("/proc/sys/kernel/random/boot_id", "r");
	ssize_t n;

	snprintf(boot, boot_size, "0");
	if (f) {
		char b[64] = "";

		if (fgets(b, sizeof(b), f) && strlen(b) >= 8)
			snprintf(boot, boot_size, "%.8s", b);
		fclose(f);
	}
	snprintf(pidns, pidns_size, "0");
	n = readlink("/proc/self/ns/pid", link, sizeof(link) - 1);
	if (n > 0) {
		char *a, *z;

		link[n] = '\0';
		a = strchr(link, '[');
		z = a ? strchr(a, ']') : NULL;
		if (a && z && z > a + 1)
			snprintf(pidns, pidns_size, "%.*s", (int)(z - a - 1), a + 1);
	}
}

const char *cb__owner_id(void)
{
	/* host:pid:starttime:pidns:boot:random — a host name alone is not unique
	 * (containers); the pid's start time tells a reused pid from the owner
	 * (cb__owner_gone). It is made once per process: a child forked after
	 * the parent launched a job is another process and must not carry its
	 * parent's identity. Threads that launch at once must not see it half
	 * written. */
	pthread_mutex_lock(&owner_mu);
	if (!owner_buf[0] || owner_pid != getpid()) {
		char host[96] = "unknown", boot[16], pidns[24], state;
		unsigned long long r = 0, start = 0;
		FILE *f = fopen("/dev/urandom", "rb");

		if (!f || fread(&r, sizeof(r), 1, f) != 1)
			r = (unsigned long long)time(NULL) ^ ((unsigned long long)getpid() << 32);
		if (f)
			fclose(f);
		gethostname(host, sizeof(host) - 1);
		host[sizeof(host) - 1] = '\0';
		host_marks(boot, sizeof(boot), pidns, sizeof(pidns));
		if (proc_stat(&state, &start, (long)getpid()) < 0)
			start = 0;
		snprintf(owner_buf, sizeof(owner_buf), "%s:%ld:%llu:%s:%s:%016llx", host,
			 (long)getpid(), start, pidns, boot, r);
		owner_pid = getpid();
	}
	pthread_mutex_unlock(&owner_mu);
	return owner_buf;
}

int cb__owner_gone(const char *owner_id)
{
	char buf[256], host[96] = "", boot[16], pidns[24], *f[6], state, *end;
	unsigned long long start, want;
	long pid;

	if (!owner_id || strlen(owner_id) >= sizeof(buf))
		return 0;
	snprintf(buf, sizeof(buf), "%s", owner_id);
	/* From the right: the host name comes first and is the free-form part. */
	for (int i = 5; i >= 1; i--) {
		char *c = strrchr(buf, ':');

		if (!c)
			return 0;
		*c = '\0';
		f[i] = c + 1;
	}
	f[0] = buf;
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	host_marks(boot, sizeof(boot), pidns, sizeof(pidns));
	/* Another host, boot or PID namespace: its pids are not ours to look up. */
	if (strcmp(f[0], host) != 0 || strcmp(f[4], boot) != 0 || strcmp(f[3], pidns) != 0 ||
	    strcmp(boot, "0") == 0 || strcmp(pidns, "0") == 0)
		return 0;
	pid = strtol(f[1], &end, 10);
	if (*end || pid <= 0)
		return 0;
	want = strtoull(f[2], &end, 10);
	if (*end || want == 0)
		return 0;
	/* kill(0) sees processes that /proc may hide (hidepid); a process that
	 * exists but whose stat cannot be read cannot be told apart: alive. */
	if (kill((pid_t)pid, 0) < 0 && errno == ESRCH)
		return 1;
	if (proc_stat(&state, &start, pid) < 0)
		return 0;
	return start != want || state == 'Z' || state == 'X';
}

/* ---- the lock's SQL ---- */

static void fmt_double(char *buf, size_t size, double v)
{
	snprintf(buf, size, "%.6f", v);
}

/* The current holder of @p lock_name if its lease is live, else "". */
static int live_holder(char *out, size_t size, PGconn *conn, const char *lock_name, cb_error *err)
{
	const char *p[1] = { lock_name };
	PGresult *res;

	out[0] = '\0';
	res = cb__repo_exec(conn, "read lock holder",
			    "SELECT owner_id FROM batch_lock WHERE lock_name = $1 "
			    "AND batch_lock_is_held(released, locked_until)",
			    1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 1)
		snprintf(out, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int cb__lock_acquire(cb__lock_grant *out, PGconn *conn, const char *lock_name, const char *owner_id,
		     double lease_seconds, cb_error *err)
{
	char lease[32], holder[256], pid[16];
	const char *p[6] = { lock_name, owner_id, lease, NULL, pid, NULL };
	PGresult *res;
	const char *outcome;
	int rc, spid;

	memset(out, 0, sizeof(*out));
	fmt_double(lease, sizeof(lease), lease_seconds);
	/* The session the lock will record as its owner's must be this
	 * connection's own: a takeover ends it. */
	rc = cb__conn_session(&spid, &p[5], conn, err);
	if (rc < 0)
		return rc;
	snprintf(pid, sizeof(pid), "%d", spid);
	/* A holder on this host whose process is gone is taken over at once. The
	 * read takes no lock; the acquire checks again that it is still the owner. */
	rc = live_holder(holder, sizeof(holder), conn, lock_name, err);
	if (rc < 0)
		return rc;
	if (holder[0] && strcmp(holder, owner_id) != 0 && cb__owner_gone(holder))
		p[3] = holder;
	res = cb__repo_exec(
		conn, "acquire lock",
		"SELECT fencing_token, outcome, holder, held_until, held_left_seconds, "
		"coalesce(old_session_ended, true), coalesce(note, '') "
		"FROM batch_lock_acquire(p_lock_name => $1, p_owner_id => $2, "
		"p_lease_seconds => $3::float8, p_dead_owner => $4, p_session_pid => $5::int, "
		"p_session_start => $6::timestamptz)",
		6, p, err);
	if (!res)
		return CB_EDB;
	outcome = PQgetvalue(res, 0, 1);
	out->outcome = strcmp(outcome, "SKIPPED_HELD") == 0           ? CB__LOCK_HELD :
		       strcmp(outcome, "LEASE_EXPIRED_TAKEOVER") == 0 ? CB__LOCK_TAKEOVER :
		       strcmp(outcome, "OWNER_DEAD_TAKEOVER") == 0    ? CB__LOCK_OWNER_DEAD :
									CB__LOCK_ACQUIRED;
	out->fencing_token = PQgetisnull(res, 0, 0) ? 0 : atoll(PQgetvalue(res, 0, 0));
	snprintf(out->holder, sizeof(out->holder), "%s", PQgetvalue(res, 0, 2));
	snprintf(out->held_until, sizeof(out->held_until), "%s", PQgetvalue(res, 0, 3));
	out->held_left_seconds = PQgetisnull(res, 0, 4) ? 0 : atof(PQgetvalue(res, 0, 4));
	out->old_session_ended = PQgetvalue(res, 0, 5)[0] == 't';
	snprintf(out->note, sizeof(out->note), "%s", PQgetvalue(res, 0, 6));
	PQclear(res);
	return 0;
}

int cb__lock_record_session(PGconn *conn, const char *lock_name, const char *owner_id,
			    long long token, cb_error *err)
{
	char tok[24], pid[16];
	const char *p[5] = { lock_name, owner_id, tok, pid, NULL };
	int rc, spid;

	rc = cb__conn_session(&spid, &p[4], conn, err);
	if (rc < 0)
		return rc;
	snprintf(pid, sizeof(pid), "%d", spid);
	snprintf(tok, sizeof(tok), "%lld", token);
	return cb__repo_command(conn, "record lock session",
				"SELECT batch_lock_record_session($1, $2, $3::bigint, $4::int, "
				"$5::timestamptz)",
				5, p, err);
}

int cb__lock_held(int *held, PGconn *conn, const char *lock_name, const char *owner_id,
		  long long token, cb_error *err)
{
	char tok[24];
	const char *p[3] = { lock_name, owner_id, tok };
	PGresult *res;

	*held = 0;
	snprintf(tok, sizeof(tok), "%lld", token);
	/* FOR SHARE: a takeover in flight (it ends our session under its row
	 * lock) is waited for, so that its outcome is what we see. */
	res = cb__repo_exec(conn, "check lock",
			    "SELECT 1 FROM batch_lock WHERE lock_name = $1 AND owner_id = $2 "
			    "AND fencing_token = $3::bigint AND NOT released FOR SHARE",
			    3, p, err);
	if (!res)
		return CB_EDB;
	*held = PQntuples(res) > 0;
	PQclear(res);
	return 0;
}

int cb__lock_bound_waits(char *saved, size_t size, PGconn *conn, double seconds, cb_error *err)
{
	char ms[32];
	const char *p[1] = { ms };
	PGresult *res;

	saved[0] = '\0';
	snprintf(ms, sizeof(ms), "%lld", (long long)(seconds * 1000.0 + 0.5));
	res = cb__repo_exec(conn, "bound lock waits",
			    "SELECT current_setting('lock_timeout'), "
			    "set_config('lock_timeout', $1 || 'ms', false)",
			    1, p, err);
	if (!res)
		return CB_EDB;
	snprintf(saved, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int cb__lock_restore_waits(PGconn *conn, const char *saved, cb_error *err)
{
	const char *p[1] = { saved };

	return cb__repo_command(conn, "restore lock_timeout",
				"SELECT set_config('lock_timeout', $1, false)", 1, p, err);
}

int cb__lock_heartbeat(int *alive, PGconn *conn, const char *lock_name, const char *owner_id,
		       long long token, double lease_seconds, long long job_execution_id,
		       cb_error *err)
{
	char tok[24], lease[32], exec[24];
	const char *p[5] = { lock_name, owner_id, tok, lease, exec };
	PGresult *res;

	*alive = 0;
	snprintf(tok, sizeof(tok), "%lld", token);
	snprintf(exec, sizeof(exec), "%lld", job_execution_id);
	fmt_double(lease, sizeof(lease), lease_seconds);
	res = cb__repo_exec(conn, "heartbeat",
			    "SELECT batch_lock_heartbeat(p_lock_name => $1, p_owner_id => $2, "
			    "p_fencing_token => $3::bigint, p_lease_seconds => $4::float8, "
			    "p_job_execution_id => $5::bigint)",
			    5, p, err);
	if (!res)
		return err->code ? err->code : CB_EDB;
	*alive = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	return 0;
}

int cb__lock_release(PGconn *conn, const char *lock_name, const char *owner_id, long long token,
		     double at_least_seconds, long long job_execution_id, cb_error *err)
{
	char tok[24], least[32], exec[24];
	const char *p[5] = { lock_name, owner_id, tok, least, exec };

	snprintf(tok, sizeof(tok), "%lld", token);
	snprintf(exec, sizeof(exec), "%lld", job_execution_id);
	fmt_double(least, sizeof(least), at_least_seconds);
	return cb__repo_command(conn, "release lock",
				"SELECT batch_lock_release(p_lock_name => $1, p_owner_id => $2, "
				"p_fencing_token => $3::bigint, p_at_least_seconds => $4::float8, "
				"p_job_execution_id => $5::bigint)",
				5, p, err);
}

int cb__lock_audit(PGconn *conn, const char *lock_name, const char *owner_id, const char *outcome,
		   long long token, long long job_execution_id, const char *detail, cb_error *err)
{
	char tok[24], exec[24];
	const char *p[6] = { lock_name,
			     owner_id,
			     outcome,
			     token ? tok : NULL,
			     job_execution_id ? exec : NULL,
			     detail ? detail : "" };

	snprintf(tok, sizeof(tok), "%lld", token);
	snprintf(exec, sizeof(exec), "%lld", job_execution_id);
	return cb__repo_command(conn, "record lock outcome",
				"INSERT INTO batch_lock_audit (lock_name, owner_id, outcome, "
				"fencing_token, job_execution_id, detail) "
				"VALUES ($1, $2, $3, $4::bigint, $5::bigint, left($6, 2000))",
				6, p, err);
}

/* The lock listing's statements. Held locks come from a partial index,
 * recent ones from the audit's time index: neither walks the rows the history
 * left (one per parameterized name, one per partition ever claimed). $1:
 * after (NULL: from the start), $2: limit + 1, $3: recent seconds, $4: the
 * listing's instant, batch_now() read just before (see list_instant). */
#define LOCK_JSON_SQL                                                                              \
	"jsonb_build_object('lock_name', l.lock_name, 'owner_id', l.owner_id,"                     \
	" 'fencing_token', l.fencing_token, 'locked_at', l.locked_at,"                             \
	" 'locked_until', l.locked_until, 'released', l.released,"                                 \
	" 'lease_left_seconds', round(extract(epoch FROM l.locked_until - "                        \
	"   $4::timestamptz)::numeric, 3),"                                                        \
	" 'job_execution_id', l.job_execution_id)"

/* In natural order (ledger:2 before ledger:10): by batch_natural_key, whose
 * byte order is that order and which is injective, so that a page starts
 * after the key of the last name of the page before (sql/013). */
#define NATURAL_KEY(x) "batch_natural_key(" x ") COLLATE \"C\""

static const char *const lock_list_sql[2] = {
	"SELECT coalesce(jsonb_agg(j ORDER BY k), '[]') FROM ("
	" SELECT " NATURAL_KEY(
		"l.lock_name") " AS k, " LOCK_JSON_SQL " AS j FROM batch_lock l"
			       " WHERE (NOT l.released OR l.lock_name = ANY (ARRAY("
			       "  SELECT a.lock_name FROM batch_lock_audit a"
			       "  WHERE a.event_time >= $4::timestamptz"
			       "   - make_interval(secs => $3::double precision))))"
			       " AND ($1::text IS NULL OR " NATURAL_KEY("l.lock_name") " > " NATURAL_KEY(
				       "$1::text") ")"
						   " AND (NOT l.released OR greatest(l.locked_until, l.updated_at) >="
						   "  $4::timestamptz - make_interval(secs => $3::double precision))"
						   " ORDER BY " NATURAL_KEY(
							   "l.lock_name") " LIMIT $2::int) x",
	"SELECT coalesce(jsonb_agg(j ORDER BY k), '[]') FROM ("
	" SELECT " NATURAL_KEY(
		"l.lock_name") " AS k, " LOCK_JSON_SQL " AS j FROM batch_lock l"
			       " WHERE ($1::text IS NULL OR " NATURAL_KEY("l.lock_name") " > " NATURAL_KEY(
				       "$1::text") ")"
						   " AND $3::double precision > 0"
						   " ORDER BY " NATURAL_KEY(
							   "l.lock_name") " LIMIT $2::int) x",
};

/*
 * The listing's one instant, read before it as a value of its own: the window
 * of recent locks is then a known constant, so the planner estimates it from
 * the audit's statistics and walks the time index (batch_now() in the
 * statement itself is volatile, an unknown the planner guesses a third of the
 * audit for); and every lease left is reckoned from the same instant. @p out
 * receives it in UTC with microseconds in ISO 8601, read back exactly whatever
 * the session's DateStyle (as CB__SESSION_SQL does).
 */
static int list_instant(char *out, size_t size, PGconn *conn, cb_error *err)
{
	PGresult *res = cb__repo_exec(conn, "read the database's clock",
				      "SELECT to_char(batch_now() AT TIME ZONE 'UTC', "
				      "'YYYY-MM-DD\"T\"HH24:MI:SS.US\"Z\"')",
				      0, NULL, err);

	if (!res)
		return CB_EDB;
	snprintf(out, size, "%s", PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

int cb_lock_list_page(json_t **out, char **next_after, PGconn *conn, const cb_lock_list_options *o,
		      cb_error *err)
{
	cb_lock_list_options d = { 0, 0, NULL, 0 };
	char lim[16], recent[64], instant[64];
	const char *p[4] = { NULL, lim, recent, instant };
	json_error_t jerr;
	PGresult *res;
	size_t n;

	*out = NULL;
	if (next_after)
		*next_after = NULL;
	if (!o)
		o = &d;
	if (o->limit < 0 || o->limit > 1000 || o->recent_seconds < 0)
		return cb_error_set(err, CB_EINVAL,
				    "list locks: limit %d out of range 1..1000 or negative recent "
				    "window",
				    o->limit);
	p[0] = o->after;
	/* One more than asked: whether a next page exists. */
	snprintf(lim, sizeof(lim), "%d", (o->limit ? o->limit : 100) + 1);
	snprintf(recent, sizeof(recent), "%.3f",
		 o->recent_seconds > 0 ? o->recent_seconds : 3600.0);
	if (list_instant(instant, sizeof(instant), conn, err) < 0)
		return CB_EDB;
	res = cb__repo_exec(conn, "list locks", lock_list_sql[o->all ? 1 : 0], 4, p, err);
	if (!res)
		return CB_EDB;
	*out = json_loads(PQgetvalue(res, 0, 0), 0, &jerr);
	PQclear(res);
	if (!*out)
		return cb_error_set(err, CB_EDB, "list locks: unreadable JSON: %s", jerr.text);
	n = json_array_size(*out);
	if (n > (size_t)(o->limit ? o->limit : 100)) {
		json_array_remove(*out, n - 1);
		if (next_after) {
			const json_t *last =
				json_object_get(json_array_get(*out, n - 2), "lock_name");

			*next_after =
				strdup(json_string_value(last) ? json_string_value(last) : "");
			if (!*next_after) {
				json_decref(*out);
				*out = NULL;
				return cb_error_set(err, CB_ENOMEM, "out of memory");
			}
		}
	}
	return 0;
}

int cb_lock_list(json_t **out, PGconn *conn, cb_error *err)
{
	return cb_lock_list_page(out, NULL, conn, NULL, err);
}

int cb_lock_force_unlock(PGconn *conn, const char *lock_name, const char *who, const char *reason,
			 cb_error *err)
{
	char detail[1024];
	const char *p[3] = { lock_name, who, detail };
	PGresult *res;
	int rc = 0;

	snprintf(detail, sizeof(detail), "forced by %s: %s", who,
		 reason && *reason ? reason : "no reason given");
	/* The row stays so that the next owner's token is higher: the old
	 * holder's session is ended, and if it still runs it is fenced off. */
	res = cb__repo_exec(conn, "force unlock",
			    "SELECT unlocked FROM batch_lock_force_unlock($1, $2, $3)", 3, p, err);
	if (!res)
		return CB_EDB;
	if (PQgetvalue(res, 0, 0)[0] != 't')
		rc = cb_error_set(err, CB_ENOTFOUND, "no lock named '%s'", lock_name);
	PQclear(res);
	return rc;
}
