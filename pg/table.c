/*
 * The table options of the built-in PostgreSQL writers: checking the column
 * lists, quoting "schema"."table", and looking up the columns' types.
 */
#include "pgkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int cb__pg_check_names(const char *const *v, size_t n, const char *what, const char *table,
		       const char *label, cb_error *err)
{
	char prefix[CB_ERROR_MESSAGE_MAX];

	if (table)
		snprintf(prefix, sizeof(prefix), "%s on \"%s\"", what, table);
	else
		snprintf(prefix, sizeof(prefix), "%s", what);
	for (size_t i = 0; i < n; i++) {
		if (!v[i] || !v[i][0])
			return cb_error_set(err, CB_EINVAL, "%s: %s %zu is empty", prefix, label,
					    i + 1);
		for (size_t j = 0; j < i; j++)
			if (strcmp(v[i], v[j]) == 0)
				return cb_error_set(err, CB_EINVAL, "%s: %s \"%s\" given twice",
						    prefix, label, v[i]);
	}
	return 0;
}

int cb__pg_qualified_name(char **out, PGconn *conn, const char *schema, const char *table,
			  cb_error *err)
{
	char *qs = NULL, *qt = NULL, *s;
	size_t n;
	int rc;

	*out = NULL;
	rc = cb_pg_quote_ident(&qt, conn, table, err);
	if (rc)
		return rc;
	if (!schema) {
		*out = qt;
		return 0;
	}
	rc = cb_pg_quote_ident(&qs, conn, schema, err);
	if (rc) {
		free(qt);
		return rc;
	}
	n = strlen(qs) + 1 + strlen(qt) + 1;
	s = malloc(n);
	if (s)
		snprintf(s, n, "%s.%s", qs, qt);
	free(qs);
	free(qt);
	if (!s)
		return cb_error_set(err, CB_ENOMEM, "out of memory quoting table \"%s\"", table);
	*out = s;
	return 0;
}

int cb__pg_column_types(char **types, char *delims, PGconn *conn, const char *qualified,
			const char *const *names, size_t n, const char *what, const char *table,
			cb_error *err)
{
	static const char sql[] =
		"SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), "
		"t.typdelim, t.typcategory = 'A' "
		"FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
		"WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped";
	const char *params[1] = { qualified };
	PGresult *res;
	size_t i;
	int rc = 0, nt, r;

	for (i = 0; i < n; i++)
		types[i] = NULL;
	res = PQexecParams(conn, sql, 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		rc = cb_pg_error(err, conn, res, "looking up the columns of the table");
		cb_error_prefix(err, "%s", what);
		goto done;
	}
	nt = PQntuples(res);
	for (i = 0; i < n; i++) {
		for (r = 0; r < nt; r++)
			if (strcmp(PQgetvalue(res, r, 0), names[i]) == 0)
				break;
		if (r == nt) {
			rc = cb_error_set(err, CB_EINVAL, "%s: table \"%s\" has no column \"%s\"",
					  what, table, names[i]);
			goto done;
		}
		if (PQgetvalue(res, r, 3)[0] == 't') {
			rc = cb_error_set(
				err, CB_EINVAL,
				"%s: column \"%s\" of table \"%s\" has the array type %s, "
				"which array parameters cannot carry",
				what, names[i], table, PQgetvalue(res, r, 1));
			goto done;
		}
		types[i] = strdup(PQgetvalue(res, r, 1));
		if (!types[i]) {
			rc = cb_error_set(err, CB_ENOMEM, "out of memory");
			goto done;
		}
		delims[i] = PQgetvalue(res, r, 2)[0] ? PQgetvalue(res, r, 2)[0] : ',';
	}
done:
	PQclear(res);
	if (rc)
		for (i = 0; i < n; i++) {
			free(types[i]);
			types[i] = NULL;
		}
	return rc;
}
