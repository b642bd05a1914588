/*
 * The server session behind each client connection, and the names of the
 * statements prepared on it.
 *
 * cbatch keeps state in its server sessions: prepared statements, LISTEN,
 * and the lock owner's session (a takeover ends it). A pooler in transaction
 * or statement mode hands a client another server session per transaction
 * and hands each server session to other clients in between, so none of that
 * holds: it is refused. Each connection learns its session (backend pid and
 * start time) in one query before the first statement that depends on it,
 * and the statements where the owner's session matters carry that identity
 * for the server to check (batch_session_check, SQLSTATE CB003). When two
 * live connections of this process find the same server session, the pooler
 * shares sessions between clients: that is refused at once, before any
 * chunk runs on it (no session pooler or direct connection ever gives one
 * server session to two clients). A partition claim (batch_partition_claim)
 * records the claimant's session before this check; the claimant's first
 * checkpoint verifies and records it again, and a refused claimant releases
 * its partition lock, so no takeover ever ends that session.
 *
 * What is kept per connection lives in libpq instance data (an event
 * procedure), so that a reset forgets the old session and PQfinish frees it.
 * The one query that learns a session is the repository's
 * (repository/session.c, cb__conn_session); it hands the answer to
 * cb__conn_session_learned here.
 */
#include "pgkit.h"

#include "cbatch/sys/conn.h"
#include "clock.h"
#include "text.h"

#include <libpq-events.h>
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct conn_state {
	PGconn *conn;
	int known; /* the session below is the current one */
	int pid;
	char start[48]; /* backend_start, ISO 8601 in UTC */
	char tag[24];   /* this connection's part of its statement names */
	unsigned long stmts;
	char schema_fp[96]; /* the repository schema found right on this session ("": none) */
	int excl_pid;       /* the server session found exclusive (0: none yet) */
	char excl_start[48];
	PGconn *mirror; /* statements prepared here are prepared there too (cb__conn_mirror) */
	struct conn_state *next; /* in `sessions` while known */
} conn_state;

static pthread_mutex_t sessions_mu = PTHREAD_MUTEX_INITIALIZER;
static conn_state *sessions; /* the known sessions of this process's connections */
static atomic_ulong connections;
static atomic_ulong orphan_stmts;
static unsigned int process_mark;
static pthread_once_t mark_once = PTHREAD_ONCE_INIT;

/* Not a time judgment: a value another process is unlikely to have. Without
 * the kernel's entropy (a very old kernel), the wall clock and the pid. */
static void make_mark(void)
{
	if (getentropy(&process_mark, sizeof(process_mark)) != 0)
		process_mark = (unsigned int)(unsigned long long)(cb__clock_wall() * 1e6) ^
			       ((unsigned int)getpid() << 12);
}

/* Caller holds sessions_mu. */
static void unlink_state(conn_state *st)
{
	for (conn_state **p = &sessions; *p; p = &(*p)->next)
		if (*p == st) {
			*p = st->next;
			break;
		}
	st->next = NULL;
	st->known = 0;
}

static int event_proc(PGEventId id, void *info, void *pass)
{
	(void)pass;
	switch (id) {
	case PGEVT_REGISTER: {
		PGconn *conn = ((PGEventRegister *)info)->conn;
		conn_state *st = calloc(1, sizeof(*st));

		if (!st)
			return 0;
		pthread_once(&mark_once, make_mark);
		st->conn = conn;
		/* Unique among this process's connections (the counter) and, with
		 * the random mark, among processes: no name is ever met again on
		 * another connection, whatever session it lands on. */
		snprintf(st->tag, sizeof(st->tag), "%08x%lx", process_mark,
			 (unsigned long)atomic_fetch_add(&connections, 1) + 1);
		return PQsetInstanceData(conn, event_proc, st);
	}
	case PGEVT_CONNRESET: {
		conn_state *st = PQinstanceData(((PGEventConnReset *)info)->conn, event_proc);

		if (st) {
			/* A new session: learned again before it is relied on. */
			pthread_mutex_lock(&sessions_mu);
			unlink_state(st);
			pthread_mutex_unlock(&sessions_mu);
			st->schema_fp[0] = '\0';
			st->excl_pid = 0; /* a pooler check of it starts over */
		}
		return 1;
	}
	case PGEVT_CONNDESTROY: {
		conn_state *st = PQinstanceData(((PGEventConnDestroy *)info)->conn, event_proc);

		if (st) {
			pthread_mutex_lock(&sessions_mu);
			unlink_state(st);
			pthread_mutex_unlock(&sessions_mu);
			free(st);
		}
		return 1;
	}
	default:
		return 1;
	}
}

static conn_state *state_of(PGconn *conn)
{
	conn_state *st;

	if (!conn)
		return NULL;
	st = PQinstanceData(conn, event_proc);
	if (!st && PQregisterEventProc(conn, event_proc, "cbatch", NULL))
		st = PQinstanceData(conn, event_proc);
	return st;
}

const char *cb__conn_schema_memo(PGconn *conn)
{
	conn_state *st = state_of(conn);

	return st && st->schema_fp[0] ? st->schema_fp : NULL;
}

void cb__conn_schema_memo_set(PGconn *conn, const char *fingerprint)
{
	conn_state *st = state_of(conn);

	if (!st)
		return;
	if (!fingerprint || strlen(fingerprint) >= sizeof(st->schema_fp))
		st->schema_fp[0] = '\0';
	else
		snprintf(st->schema_fp, sizeof(st->schema_fp), "%s", fingerprint);
}

void cb__conn_mirror_set(PGconn *conn, PGconn *mirror)
{
	conn_state *st = state_of(conn);

	if (st)
		st->mirror = mirror;
}

PGconn *cb__conn_mirror(PGconn *conn)
{
	conn_state *st = conn ? PQinstanceData(conn, event_proc) : NULL;

	return st ? st->mirror : NULL;
}

void cb__conn_stmt_name(char *out, size_t size, PGconn *conn, const char *prefix)
{
	conn_state *st = state_of(conn);

	if (!prefix)
		prefix = "s";
	if (st) {
		snprintf(out, size, "cb_%.20s_%s_%lu", prefix, st->tag, ++st->stmts);
		return;
	}
	/* No instance data (out of memory): still unique in the process. */
	pthread_once(&mark_once, make_mark);
	snprintf(out, size, "cb_%.20s_%08x_%lu", prefix, process_mark,
		 (unsigned long)atomic_fetch_add(&orphan_stmts, 1) + 1);
}

static int refuse_shared(cb_error *err, int pid, const char *start)
{
	int rc = cb_error_set(
		err, CB_EDB,
		"transaction pooling is not supported: two connections of this process got the "
		"same server session (backend %d started %s), so a pooler in transaction or "
		"statement mode is in between; cbatch needs one server session per connection "
		"(prepared statements, LISTEN, the lock owner's session): use PgBouncer "
		"pool_mode=session, or connect directly",
		pid, start);

	if (err && err->code == rc && !err->sqlstate[0])
		snprintf(err->sqlstate, sizeof(err->sqlstate), "CB003");
	return rc;
}

int cb__conn_session_learned(int *pid, const char **start, PGconn *conn, int backend_pid,
			     const char *backend_start, cb_error *err)
{
	conn_state *st = state_of(conn);
	int shared = 0;

	*pid = 0;
	*start = NULL;
	if (!st)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	st->pid = backend_pid;
	snprintf(st->start, sizeof(st->start), "%s", backend_start);
	/* A connection another thread is finishing is forgotten only after
	 * libpq has closed its socket (PQfinish fires CONNDESTROY last), and a
	 * session pooler may hand its server session to this connection in
	 * between: a session found on another connection is judged shared only
	 * if it is still there a while later (a transaction pooler's sharing
	 * lasts as long as both connections). */
	for (int wait_ms = 0;; wait_ms += 10) {
		shared = 0;
		pthread_mutex_lock(&sessions_mu);
		for (conn_state *o = sessions; o; o = o->next)
			if (o != st && o->pid == st->pid && strcmp(o->start, st->start) == 0)
				shared = 1;
		if (!shared && !st->known) {
			st->known = 1;
			st->next = sessions;
			sessions = st;
		}
		pthread_mutex_unlock(&sessions_mu);
		if (!shared || wait_ms >= 2000)
			break;
		cb__clock_sleep(0.01);
	}
	if (shared)
		return refuse_shared(err, st->pid, st->start);
	*pid = st->pid;
	*start = st->start;
	return 0;
}

int cb__conn_known_session(int *pid, const char **start, PGconn *conn)
{
	conn_state *st = conn ? PQinstanceData(conn, event_proc) : NULL;

	*pid = 0;
	*start = NULL;
	if (!st || !st->known)
		return 0;
	*pid = st->pid;
	*start = st->start;
	return 1;
}

/* ---- transaction pooling, refused up front ---- */

static int refuse_moved(cb_error *err, int pid, const char *start, int now_pid,
			const char *now_start)
{
	int rc = cb_error_set(
		err, CB_EDB,
		"transaction pooling is not supported: the server session of this connection "
		"changed between two transactions (backend %d started %s, then backend %d started "
		"%s), so a pooler in transaction or statement mode is in between; cbatch needs one "
		"server session per connection (prepared statements, LISTEN, the lock owner's "
		"session): use PgBouncer pool_mode=session, or connect directly",
		pid, start, now_pid, now_start);

	if (err && err->code == rc && !err->sqlstate[0])
		snprintf(err->sqlstate, sizeof(err->sqlstate), "CB003");
	return rc;
}

/*
 * Send @p sql (simple protocol; its last statement is CB__SESSION_SQL) on
 * @p conn and read the session from its last result. @p timeout_ms > 0:
 * give up after that long without an answer. @return 0, 1 (timed out: the
 * connection is left busy, for PQfinish), CB_EDB.
 */
static int read_session(int *pid, char *start, size_t size, PGconn *conn, const char *sql,
			int timeout_ms, cb_error *err)
{
	PGresult *res, *last = NULL;
	int rc = 0;

	if (!PQsendQuery(conn, sql))
		return cb_pg_error(err, conn, NULL, "read the connection's server session");
	if (timeout_ms > 0) {
		double deadline = cb__clock_mono() + timeout_ms / 1000.0;

		while (PQisBusy(conn)) {
			struct pollfd p = { .fd = PQsocket(conn), .events = POLLIN };
			double left = deadline - cb__clock_mono();

			if (left <= 0)
				return 1;
			if (cb__clock_poll(&p, 1, left) < 0 && errno != EINTR)
				break;
			if (!PQconsumeInput(conn))
				break;
		}
	}
	/* The last result, or the first error (what follows it is not run). */
	while ((res = PQgetResult(conn)) != NULL) {
		if (last && PQresultStatus(last) == PGRES_FATAL_ERROR) {
			PQclear(res);
			continue;
		}
		PQclear(last);
		last = res;
	}
	if (!last || PQresultStatus(last) != PGRES_TUPLES_OK) {
		rc = cb_pg_error(err, conn, last, "read the connection's server session");
	} else if (PQntuples(last) != 1 || PQgetisnull(last, 0, 1)) {
		rc = cb_error_set(err, CB_EDB,
				  "cannot read this connection's server session "
				  "(pg_stat_get_activity has no row for it)");
	} else {
		*pid = atoi(PQgetvalue(last, 0, 0));
		snprintf(start, size, "%s", PQgetvalue(last, 0, 1));
	}
	PQclear(last);
	return rc < 0 ? rc : 0;
}

int cb__pg_session_exclusive(PGconn *conn, cb_error *err)
{
	char start[48], pstart[48], again[48];
	int pid = 0, ppid = 0, apid = 0, rc;
	PGconn *probe;
	conn_state *st;

	if (!conn)
		return cb_error_set(err, CB_EINVAL, "no connection to check");
	if ((rc = read_session(&pid, start, sizeof(start), conn, CB__SESSION_SQL, 0, err)) < 0)
		return rc;
	/* A kept connection (pg/keep.c) was found exclusive by an earlier run:
	 * its server session is still that one, or a pooler moved it. The probe,
	 * a new server backend each time, was most of a warm runner's firing. */
	if ((st = state_of(conn)) != NULL && st->excl_pid) {
		if (st->excl_pid != pid || strcmp(st->excl_start, start) != 0)
			return refuse_moved(err, st->excl_pid, st->excl_start, pid, start);
		return 0;
	}
	probe = cb_pg_connect_like(conn, "cbatch-probe");
	if (PQstatus(probe) != CONNECTION_OK) {
		char msg[CB_ERROR_MESSAGE_MAX];

		cb__redact_secrets(msg, sizeof(msg), PQerrorMessage(probe));
		msg[strcspn(msg, "\n")] = '\0';
		PQfinish(probe);
		cb_error_set(err, CB_EDB,
			     "cannot open a second connection to check for a connection pooler: %s",
			     msg);
		/* The first connection was had with the same conninfo: the server
		 * is going away (a switchover) or full, not a wrong address; the
		 * callers wait that out as a lost session. */
		snprintf(err->sqlstate, sizeof(err->sqlstate), "08006");
		return CB_EDB;
	}
	/* In a transaction: a transaction pooler keeps that server session for
	 * the probe alone while this connection reads its own again. */
	rc = read_session(&ppid, pstart, sizeof(pstart), probe, "BEGIN; " CB__SESSION_SQL, 2000,
			  err);
	if (rc == 0 && ppid == pid && strcmp(pstart, start) == 0)
		rc = refuse_shared(err, pid, start);
	else if (rc == 0 &&
		 (rc = read_session(&apid, again, sizeof(again), conn, CB__SESSION_SQL, 0, err)) ==
			 0 &&
		 (apid != pid || strcmp(again, start) != 0))
		rc = refuse_moved(err, pid, start, apid, again);
	PQfinish(probe);
	if (rc == 0 && st) {
		st->excl_pid = pid;
		snprintf(st->excl_start, sizeof(st->excl_start), "%s", start);
	}
	return rc < 0 ? rc : 0;
}
