/* Suite setup shared by the API-level integration tests. */
#include <stdio.h>

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
