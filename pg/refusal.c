/*
 * Why a connection was refused, read from data rather than from words: a
 * server's messages follow its lc_messages (a Korean server says "데이터베이스
 * 시스템이 중지 중입니다", not "the database system is shutting down") and
 * libpq's own follow the program's locale, so matching English text would
 * make a command started during a switchover on such a server exit at once
 * instead of waiting for the new primary.
 */
#include "pgkit.h"

#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"

/* SQLSTATEs a server gives at connection start while it cannot take
 * sessions just now: shutting down, starting up, in recovery (57P03), or
 * shut down by an administrator or a crash as the session began. */
static int for_now(const char *code)
{
	return strcmp(code, "57P01") == 0 || strcmp(code, "57P02") == 0 ||
	       strcmp(code, "57P03") == 0;
}

/* With verbose errors libpq writes each server error as "SEVERITY:  CODE:
 * message": the severity is translated, the layout and the code are not.
 * Every host of a multi-host conninfo adds its own. */
static int says_for_now(const char *msg)
{
	for (const char *p = strstr(msg, ":  "); p; p = strstr(p + 1, ":  ")) {
		const char *c = p + 3;
		char code[6];
		size_t n = 0;

		while (n < 5 && ((c[n] >= '0' && c[n] <= '9') || (c[n] >= 'A' && c[n] <= 'Z')))
			n++;
		if (n != 5 || c[5] != ':')
			continue;
		memcpy(code, c, 5);
		code[5] = '\0';
		if (for_now(code))
			return 1;
	}
	return 0;
}

int cb__pg_refused_for_now(const char *conninfo, double seconds)
{
	/* Any server will do (target_session_attrs=any, after the conninfo's
	 * own): one that answers but takes no writes is what a read-write
	 * conninfo refused. */
	const char *keys[] = { "dbname", "fallback_application_name", "target_session_attrs",
			       NULL };
	const char *vals[] = { NULL, "cbatch", "any", NULL };
	double deadline = cb__clock_mono() + seconds;
	PostgresPollingStatusType st = PGRES_POLLING_WRITING;
	PGconn *conn;
	int refused = 0;

	if (!conninfo)
		conninfo = getenv("CBATCH_DB");
	vals[0] = conninfo ? conninfo : "";
	if (!(conn = PQconnectStartParams(keys, vals, 1)))
		return 0;
	/* Before the first answer is read: the codes are in the message. */
	PQsetErrorVerbosity(conn, PQERRORS_VERBOSE);
	while (PQstatus(conn) != CONNECTION_BAD && st != PGRES_POLLING_OK &&
	       st != PGRES_POLLING_FAILED) {
		/* The socket changes from one host to the next. */
		struct pollfd p = { .fd = PQsocket(conn),
				    .events = st == PGRES_POLLING_READING ? POLLIN : POLLOUT };
		double left = deadline - cb__clock_mono();

		if (p.fd < 0 || left <= 0)
			break;
		if (cb__clock_poll(&p, 1, left) < 0 && errno != EINTR)
			break;
		st = PQconnectPoll(conn);
	}
	/* Answering: a standby, or a primary read-only or just back, which is
	 * what a read-write conninfo refuses during a switchover. */
	if (PQstatus(conn) == CONNECTION_OK)
		refused = 1;
	else if (PQstatus(conn) == CONNECTION_BAD)
		refused = says_for_now(PQerrorMessage(conn));
	PQfinish(conn);
	return refused;
}
