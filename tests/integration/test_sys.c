/*
 * The plug-in author's surface (include/cbatch/sys/): duplicate counting from
 * a writer, both as the SQL fragment and as a call, and a second connection
 * like the step's.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>
#include <cbatch/sys/conn.h>
#include <cbatch/sys/tx.h>

#include "cbtest.h"
#include "numbers.h"

static char db[CBT_CONNINFO_MAX];
static PGconn *conn;

static int init(void)
{
	return cbt_repo_db(db, sizeof(db), "sys", &conn);
}

static int clean(void)
{
	PQfinish(conn);
	cbt_db_drop(db);
	return 0;
}

/* A second writer that reports one absorbed write per chunk from the client. */
static int dup_write(void *state, cb_tx *tx, void *const *items, size_t count, cb_error *err)
{
	int rc;

	(void)state, (void)items, (void)count;
	rc = cb_tx_count_duplicates(tx, 0, err); /* nothing to add: queues nothing */
	if (rc == 0 && cb_tx_count_duplicates(tx, -1, err) != CB_EINVAL)
		return cb_error_set(err, CB_ERROR, "a negative count was accepted");
	cb_error_clear(err);
	return rc ? rc : cb_tx_count_duplicates(tx, 1, err);
}

static int build(void *user, const cb_step_context *sc, cb_chunk_parts *parts, cb_error *err)
{
	int rc = cbt_numbers_build(user, sc, parts, err);

	if (rc < 0)
		return rc;
	parts->writers[1] = (cb_writer){ .version = CB_WRITER_VERSION, .write = dup_write };
	parts->nwriters = 2;
	return 0;
}

static void test_writers_count_duplicates_with_the_chunk(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cbt_numbers n;
	cb_job *job = NULL;
	cb_job_result r;

	memset(&n, 0, sizeof(n));
	n.last = 30;
	/* Server side: two per chunk, through the SQL fragment. */
	n.extra_sql = "SELECT " CB_TX_DUPLICATES_ADD("2");
	cbt_exec(conn, "DROP TABLE IF EXISTS sink; CREATE TABLE sink (n bigint PRIMARY KEY)");
	CBT_PASS_FATAL(cb_job_new(&job, "dups", &err), &err);
	s.name = "numbers";
	s.build = build;
	s.user = &n;
	s.chunk_size = 10;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM sink"), 30);
	/* 3 chunks x (2 from SQL + 1 from the call). */
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT duplicate_target_write_count FROM "
				     "batch_step_execution s JOIN batch_job_execution e USING "
				     "(job_execution_id) JOIN batch_job_instance i USING "
				     "(job_instance_id) WHERE i.job_name = 'dups'"),
		  9);
	cb_job_free(job);
}

static int dup_tasklet(void *user, const cb_step_context *sc, cb_tx *tx, json_t *context,
		       cb_error *err)
{
	(void)user, (void)sc, (void)context;
	if (cb_tx_pipelined(tx))
		return cb_error_set(err, CB_ERROR, "a tasklet's transaction is pipelined");
	return cb_tx_count_duplicates(tx, 3, err) ? CB_ERROR : CB_DONE;
}

static void test_tasklets_may_call_count_duplicates(void)
{
	cb_error err = CB_ERROR_INIT;
	cb_step_def s = CB_STEP_DEF_INIT;
	cb_job *job = NULL;
	cb_job_result r;

	CBT_PASS_FATAL(cb_job_new(&job, "dup_tasklet", &err), &err);
	s.kind = CB_STEP_TASKLET;
	s.name = "t";
	s.tasklet = dup_tasklet;
	CBT_PASS(cb_job_add_step(job, &s, &err), &err);
	CBT_PASS(cb_job_launch(&r, conn, job, NULL, NULL, &err), &err);
	CBT_EQ_STR(cb_status_name(r.status), "COMPLETED");
	cb_job_free(job);
}

static void test_connect_like_opens_a_named_session_to_the_same_database(void)
{
	PGconn *c = cb_pg_connect_like(conn, "cbatch-test-like");
	char name[128] = "", here[128] = "", there[128] = "";

	CU_ASSERT_PTR_NOT_NULL_FATAL(c);
	CBT_EQ_LL(PQstatus(c), CONNECTION_OK);
	cbt_query_str(c, "SELECT current_setting('application_name')", name, sizeof(name));
	CBT_EQ_STR(name, "cbatch-test-like");
	cbt_query_str(c, "SELECT current_database() || '/' || current_user", there, sizeof(there));
	cbt_query_str(conn, "SELECT current_database() || '/' || current_user", here, sizeof(here));
	CBT_EQ_STR(there, here);
	PQfinish(c);
}

static const CU_TestInfo tests[] = {
	{ "writers count duplicates with the chunk", test_writers_count_duplicates_with_the_chunk },
	{ "tasklets may call count duplicates", test_tasklets_may_call_count_duplicates },
	{ "connect like opens a named session to the same database",
	  test_connect_like_opens_a_named_session_to_the_same_database },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("sys", init, clean, tests);
}
