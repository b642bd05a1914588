/*
 * One clock (issue 27): every time judgment of the repository reads
 * batch_now(), which is clock_timestamp() in production and the session's
 * cbatch.virtual_now when a test or a simulation sets it.
 *
 * The catalog half of the rule: in a new repository nothing but batch_now()
 * reads PostgreSQL's clock (functions, column defaults, views and rules,
 * triggers, constraints, index expressions and predicates, policies). Its
 * source half is unit.layering.clock (tests/layering/check_clock.cmake).
 * Then virtual time shown driving judgments: a lease, a schedule claim's
 * lateness, a cleanup's cutoff, and the defaults that stamp audit rows;
 * while a session without the setting keeps the real clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

#include "cbtest.h"

static char db[CBT_CONNINFO_MAX];

/* A direct read of the clock, in an expression as the catalog prints it
 * (PostgreSQL's regular expressions, matched case-insensitively). */
#define CLOCK_RE                                                                                   \
	"'(^|[^a-z0-9_.])now\\s*\\(\\s*\\)|''now''|clock_timestamp|current_timestamp|"             \
	"current_date|current_time\\M|localtimestamp|localtime\\M|statement_timestamp|"            \
	"transaction_timestamp|timeofday'"

/* Each object of the repository's schema with the SQL text it evaluates:
 * what, text. batch_now() itself is the one place allowed. */
#define SCHEMA_TEXTS                                                                               \
	"SELECT 'function ' || p.oid::regprocedure AS what, pg_get_functiondef(p.oid) AS t "       \
	" FROM pg_proc p WHERE p.pronamespace = 'public'::regnamespace "                           \
	"  AND p.prokind IN ('f', 'p') AND p.proname <> 'batch_now' "                              \
	"UNION ALL SELECT 'default of ' || d.adrelid::regclass || '.' || a.attname, "              \
	" pg_get_expr(d.adbin, d.adrelid) FROM pg_attrdef d "                                      \
	" JOIN pg_attribute a ON a.attrelid = d.adrelid AND a.attnum = d.adnum "                   \
	" JOIN pg_class c ON c.oid = d.adrelid WHERE c.relnamespace = 'public'::regnamespace "     \
	"UNION ALL SELECT 'rule ' || r.rulename || ' of ' || r.ev_class::regclass, "               \
	" pg_get_ruledef(r.oid) FROM pg_rewrite r JOIN pg_class c ON c.oid = r.ev_class "          \
	" WHERE c.relnamespace = 'public'::regnamespace "                                          \
	"UNION ALL SELECT 'trigger ' || g.tgname || ' of ' || g.tgrelid::regclass, "               \
	" pg_get_triggerdef(g.oid) FROM pg_trigger g JOIN pg_class c ON c.oid = g.tgrelid "        \
	" WHERE c.relnamespace = 'public'::regnamespace AND NOT g.tgisinternal "                   \
	"UNION ALL SELECT 'constraint ' || o.conname, pg_get_constraintdef(o.oid) "                \
	" FROM pg_constraint o WHERE o.connamespace = 'public'::regnamespace "                     \
	"UNION ALL SELECT 'index ' || i.indexrelid::regclass, pg_get_indexdef(i.indexrelid) "      \
	" FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid "                                \
	" WHERE c.relnamespace = 'public'::regnamespace "                                          \
	"UNION ALL SELECT 'policy ' || y.polname || ' of ' || y.polrelid::regclass, "              \
	" concat_ws(' ', pg_get_expr(y.polqual, y.polrelid), "                                     \
	"           pg_get_expr(y.polwithcheck, y.polrelid)) "                                     \
	" FROM pg_policy y JOIN pg_class c ON c.oid = y.polrelid "                                 \
	" WHERE c.relnamespace = 'public'::regnamespace"

static int init(void)
{
	PGconn *conn = NULL;

	if (cbt_repo_db(db, sizeof(db), "one_clock", &conn) < 0)
		return -1;
	PQfinish(conn);
	return 0;
}

static int clean(void)
{
	cbt_db_drop(db);
	return 0;
}

static void test_nothing_in_the_catalog_reads_the_clock_but_batch_now(void)
{
	PGconn *conn = cbt_connect(db);
	PGresult *res;

	CU_ASSERT_PTR_NOT_NULL_FATAL(conn);
	/* The pattern finds what it is meant to: batch_now() reads the clock. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM pg_proc WHERE proname = 'batch_now' "
				     "AND pg_get_functiondef(oid) ~* " CLOCK_RE),
		  1);
	/* And it looked at the whole schema (the functions and the defaults at least). */
	CU_ASSERT(cbt_query_ll(conn, "SELECT count(*) FROM (" SCHEMA_TEXTS ") s "
				     "WHERE s.what LIKE 'function %'") > 50);
	CU_ASSERT(cbt_query_ll(conn,
			       "SELECT count(*) FROM (" SCHEMA_TEXTS ") s "
			       "WHERE s.what LIKE 'default of %' AND s.t ~ 'batch_now\\(\\)'") >=
		  13);
	/* Each offender, with the line that reads the clock. */
	res = PQexec(conn, "SELECT s.what, (regexp_match(s.t, '([^\\n]*(?:' || " CLOCK_RE
			   " || ')[^\\n]*)', 'in'))[1] FROM (" SCHEMA_TEXTS ") s "
			   "WHERE s.t ~* " CLOCK_RE " ORDER BY 1");
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		CBT_FAILF("catalog query failed: %s", PQerrorMessage(conn));
	else
		for (int i = 0; i < PQntuples(res); i++)
			CBT_FAILF("%s reads the clock directly (use batch_now()): %s",
				  PQgetvalue(res, i, 0), PQgetvalue(res, i, 1));
	PQclear(res);
	PQfinish(conn);
}

/* Set @p conn's virtual time to @p instant (a timestamptz's text), or back to
 * the real clock (NULL). */
static void virtual_now(PGconn *conn, const char *instant)
{
	const char *p[1] = { instant ? instant : "" };
	PGresult *res = PQexecParams(conn, "SELECT set_config('cbatch.virtual_now', $1, false)", 1,
				     NULL, p, NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		CBT_FAILF("set cbatch.virtual_now: %s", PQerrorMessage(conn));
	PQclear(res);
}

/* The outcome of batch_lock_acquire of the test's lock by @p owner, lease 600 s. */
static void acquire(char *out, size_t size, PGconn *conn, const char *owner)
{
	const char *p[1] = { owner };
	PGresult *res = PQexecParams(
		conn, "SELECT outcome FROM batch_lock_acquire('one_clock.lease', $1, 600)", 1, NULL,
		p, NULL, NULL, 0);

	snprintf(out, size, "%s",
		 PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 ?
			 PQgetvalue(res, 0, 0) :
			 PQerrorMessage(conn));
	PQclear(res);
}

#define HELD_AT_ITS_CLOCK                                                                          \
	"SELECT count(*) FROM batch_lock WHERE lock_name = 'one_clock.lease' "                     \
	"AND batch_lock_is_held(released, locked_until)"
#define ON_THE_REAL_CLOCK                                                                          \
	"SELECT (abs(extract(epoch FROM batch_now() - clock_timestamp())) < 1)::int"

static void test_a_lease_runs_out_in_virtual_time_only(void)
{
	PGconn *a = cbt_connect(db), *b = cbt_connect(db), *real = cbt_connect(db);
	char out[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(a && b && real);
	/* Taken at the real clock for 10 minutes: held there. */
	acquire(out, sizeof(out), a, "owner-a");
	CBT_EQ_STR(out, "ACQUIRED");
	acquire(out, sizeof(out), b, "owner-b");
	CBT_EQ_STR(out, "SKIPPED_HELD");
	/* An hour later in b's virtual time, the lease is over; the real clock
	 * (another session, meanwhile) still sees it held. */
	cbt_exec(b, "SELECT set_config('cbatch.virtual_now', "
		    "(clock_timestamp() + interval '1 hour')::text, false)");
	CBT_EQ_LL(cbt_query_ll(b, HELD_AT_ITS_CLOCK), 0);
	CBT_EQ_LL(cbt_query_ll(real, HELD_AT_ITS_CLOCK), 1);
	CBT_EQ_LL(cbt_query_ll(real, ON_THE_REAL_CLOCK), 1);
	acquire(out, sizeof(out), b, "owner-b");
	CBT_EQ_STR(out, "LEASE_EXPIRED_TAKEOVER");
	/* The new lease and the audit row (its column default) are reckoned
	 * from the virtual instant, exactly: virtual time stands still. */
	CBT_EQ_LL(cbt_query_ll(b, "SELECT count(*) FROM batch_lock WHERE lock_name = "
				  "'one_clock.lease' AND owner_id = 'owner-b' AND locked_at = "
				  "batch_now() AND locked_until = batch_now() + interval '600 s'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(b, "SELECT count(*) FROM batch_lock_audit WHERE lock_name = "
				  "'one_clock.lease' AND outcome = 'LEASE_EXPIRED_TAKEOVER' "
				  "AND event_time = batch_now()"),
		  1);
	/* Back on the real clock: b's lease, reckoned from an hour ahead, holds. */
	cbt_exec(b, "RESET cbatch.virtual_now");
	CBT_EQ_LL(cbt_query_ll(b, ON_THE_REAL_CLOCK), 1);
	acquire(out, sizeof(out), real, "owner-c");
	CBT_EQ_STR(out, "SKIPPED_HELD");
	PQfinish(a); /* its session was ended by the takeover */
	PQfinish(b);
	PQfinish(real);
}

/* Claim fire instant @p fire of schedule one_clock: "OUTCOME KIND". */
static void claim(char *out, size_t size, PGconn *conn, const char *fire, const char *key)
{
	const char *p[2] = { fire, key };
	PGresult *res = PQexecParams(
		conn,
		"SELECT outcome || ' ' || claimed_kind FROM batch_schedule_claim("
		" p_schedule_id => (SELECT schedule_id FROM batch_schedule "
		"  WHERE schedule_name = 'one_clock'), p_version => 0, "
		" p_fire_time => $1::timestamptz, p_kind => 'SCHEDULED', p_missed_until => NULL, "
		" p_missed_count => 0, p_param_time => $1::timestamptz, "
		" p_next_fire_time => $1::timestamptz + interval '1 hour', p_node => 'node-1', "
		" p_job_key => $2, p_parameters => '[]')",
		2, NULL, p, NULL, NULL, 0);

	snprintf(out, size, "%s",
		 PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1 ?
			 PQgetvalue(res, 0, 0) :
			 PQerrorMessage(conn));
	PQclear(res);
}

static void test_lateness_and_cutoffs_are_judged_in_virtual_time(void)
{
	PGconn *conn = cbt_connect(db);
	char out[512];

	CU_ASSERT_PTR_NOT_NULL_FATAL(conn);
	cbt_exec(conn, "INSERT INTO batch_schedule (schedule_name, cron_expression, time_zone, "
		       "job_name, overlap_policy, next_fire_time) VALUES ('one_clock', "
		       "'0 * * * *', 'UTC', 'tick', 'ALLOW', '2030-01-01 00:00:00+00')");
	/* 10 s after its instant: on time (grace 60 s). */
	virtual_now(conn, "2030-01-01 00:00:10+00");
	claim(out, sizeof(out), conn, "2030-01-01 00:00:00+00", "k1");
	CBT_EQ_STR(out, "CLAIMED SCHEDULED");
	/* 5 minutes after: a misfire, stamped (the columns' defaults) with the
	 * virtual instant. */
	virtual_now(conn, "2030-01-01 01:05:00+00");
	claim(out, sizeof(out), conn, "2030-01-01 01:00:00+00", "k2");
	CBT_EQ_STR(out, "CLAIMED MISFIRE_RUN");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM batch_schedule_firing WHERE "
				     "fire_time = '2030-01-01 01:00:00+00' "
				     "AND claimed_at = '2030-01-01 01:05:00+00'"),
		  1);
	CBT_EQ_LL(cbt_query_ll(conn,
			       "SELECT count(*) FROM batch_schedule_event WHERE "
			       "outcome = 'MISFIRED' AND recorded_at = '2030-01-01 01:05:00+00'"),
		  1);
	/* A cleanup's cutoff is reckoned from the virtual instant too. */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT (cutoff = '2030-01-01 01:05:00+00'::timestamptz - "
				     "interval '30 days')::int FROM batch_cleanup_plan(interval "
				     "'30 days')"),
		  1);
	/* On the real clock, years before 2030, no instant of 2030 is late. */
	virtual_now(conn, NULL);
	claim(out, sizeof(out), conn, "2030-01-01 02:00:00+00", "k3");
	CBT_EQ_STR(out, "CLAIMED SCHEDULED");
	PQfinish(conn);
}

static const CU_TestInfo tests[] = {
	{ "nothing in the catalog reads the clock but batch_now",
	  test_nothing_in_the_catalog_reads_the_clock_but_batch_now },
	{ "a lease runs out in virtual time only", test_a_lease_runs_out_in_virtual_time_only },
	{ "lateness and cutoffs are judged in virtual time",
	  test_lateness_and_cutoffs_are_judged_in_virtual_time },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("one_clock", init, clean, tests);
}
