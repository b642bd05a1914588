/* Helpers shared by the integration tests: suite setup, clock, sessions. */
#include <stdio.h>
#include <time.h>

#include <cbatch.h>

#include "cbtest.h"

int cbt_repo_db(char *conninfo, size_t size, const char *prefix, PGconn **conn)
{
	cb_error err = CB_ERROR_INIT;

	*conn = NULL;
	if (cbt_db_create(conninfo, size, prefix) < 0)
		return -1;
	*conn = PQconnectdb(conninfo);
	if (PQstatus(*conn) != CONNECTION_OK || cb_repo_schema_init(*conn, NULL, NULL, &err) < 0) {
		fprintf(stderr, "%s suite: %s%s\n", prefix, PQerrorMessage(*conn), err.message);
		return -1;
	}
	return 0;
}

double cbt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

void cbt__wait_sessions_gone(const char *file, int line, PGconn *conn)
{
	for (int i = 0; i < 3000; i++) {
		if (cbt__query_ll(file, line, conn,
				  "SELECT count(*) FROM pg_stat_activity WHERE datname = "
				  "current_database() AND pid <> pg_backend_pid()") == 0)
			return;
		cbt_sleep_ms(10);
	}
	cbt__failf(file, line, 0, "other sessions of the database did not end within 30 s");
}
