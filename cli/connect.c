/*
 * Connecting: the public cb_cli_connect (the toolkit's connect, pg/connect.c,
 * kept here so that the ABI does not change) and a command's connection with
 * the schema and the display zone checked.
 */
#include "cli_internal.h"

#include "pgkit.h"

#include <stdlib.h>
#include <string.h>

#include "cbatch/lock.h"
#include "clock.h"
#include "log.h"

int cb_cli_connect(PGconn **out, const char *conninfo, cb_error *err)
{
	return cb__pg_connect(out, conninfo, err);
}

/* Connect, refuse a transaction pooler (every command, before it does
 * anything: exit 1 with CB003's message, as run's own refusal), and check the
 * schema and CBATCH_TZ when @p check. @return 0, or the exit code of a
 * reported error. */
/* How long a command started while the database has no read-write primary
 * (a switchover or failover under way) waits for one, unless it says
 * (c->primary_wait: a run's outage budget): the default lease. */
#define NO_PRIMARY_WAIT CB_DEFAULT_LEASE_SECONDS

/* How long the look at why a connection was refused may take (a host that
 * does not answer at all is not waited for: that is a wrong address). */
#define REFUSAL_PROBE_SECONDS 5.0

/*
 * One try at a command's session: connect, refuse a pooler, check the
 * schema and the zone. @return 0; -1 with c->err set (not reported), its
 * session closed, and *lost set when it failed for want of a read-write
 * primary rather than of its input; or the exit code of an error already
 * reported (a bad CBATCH_TZ).
 */
static int open_once(struct cli *c, PGconn **conn, int check, int *lost)
{
	int rc;

	*lost = 0;
	if (cb_cli_connect(conn, c->db, &c->err) < 0) {
		/* Not for a conninfo that does not parse (no SQLSTATE). */
		*lost = c->err.sqlstate[0] && cb__pg_refused_for_now(c->db, REFUSAL_PROBE_SECONDS);
		return -1;
	}
	rc = cb__pg_session_exclusive(*conn, &c->err) < 0 ? -1 : 0;
	if (rc == 0 && check && cb_repo_schema_check(*conn, &c->err) < 0)
		rc = -1;
	/* CBATCH_TZ is checked by the server whose tz data shows it: here, for
	 * every command that connects, so a bad one fails the same way for all. */
	if (rc == 0 && check)
		rc = cb__cli_zone_attach(c, *conn);
	if (rc != 0) {
		/* The session ended under it (the server shutting down for a
		 * switchover: 57P01), or the server became read-only. */
		*lost = rc < 0 && cb__pg_lost(&c->err, *conn);
		PQfinish(*conn);
		*conn = NULL;
	}
	return rc;
}

int cb__cli_open_db(struct cli *c, PGconn **conn, int check)
{
	double wait = c->primary_wait >= 0 ? c->primary_wait : NO_PRIMARY_WAIT;
	double until = cb__clock_mono() + wait, pause = 0.2;
	int lost, rc;

	/* A command started during a switchover (a scheduler's firing among
	 * them) waits for the new primary, as a run that is going on does:
	 * whether the switchover met its connect or, a moment later, its
	 * checks (its session ended before it recorded anything). Once a
	 * session was had, the server refusing connections is the same
	 * switchover going on, not a wrong address; so it is for a run that a
	 * scheduler node launched (CBATCH_SCHEDULER_NODE): the node had its
	 * session on the same conninfo a moment before. */
	int had_session = getenv("CBATCH_SCHEDULER_NODE") != NULL;

	while ((rc = open_once(c, conn, check, &lost)) < 0 &&
	       (lost || (had_session && strncmp(c->err.sqlstate, "08", 2) == 0)) &&
	       cb__clock_mono() < until) {
		had_session = had_session || lost;
		if (pause == 0.2)
			cb__log(c->prog, CB__LOG_WARN, CB__EV_REPOSITORY_LOST,
				CB__LOG_WITH(.code = "CB_EDB"),
				"no read-write primary just now (%.300s); waiting up to %.0f s for one",
				c->err.message, wait);
		cb__clock_sleep(pause);
		pause = pause * 2 > 2 ? 2 : pause * 2;
		cb_error_clear(&c->err);
	}
	return rc < 0 ? cb__cli_fail(c, CB_EXIT_FAILED) : rc;
}

int cb__cli_check_env(struct cli *c)
{
	PGconn *conn = NULL;
	int rc = cb__cli_open_db(c, &conn, 1);

	PQfinish(conn);
	return rc;
}
