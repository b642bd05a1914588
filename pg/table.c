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

int cb__pg_column_types(char **types, char *delims, char **colls, PGconn *conn,
			const char *qualified, const char *const *names, size_t n, const char *what,
			const char *table, cb_error *err)
{
	/* The collation clause only where the column's collation is not its
	 * type's: an array parameter ($1::text[]) carries the type's, so
	 * without it the statement would compare the values by another
	 * equality than the column's (a nondeterministic collation). */
	static const char sql[] =
		"SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), "
		"t.typdelim, t.typcategory = 'A', "
		"CASE WHEN a.attcollation <> 0 AND a.attcollation <> t.typcollation THEN "
		"' COLLATE ' || pg_catalog.quote_ident(cn.nspname) || '.' || "
		"pg_catalog.quote_ident(c.collname) END "
		"FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
		"LEFT JOIN pg_catalog.pg_collation c ON c.oid = a.attcollation "
		"LEFT JOIN pg_catalog.pg_namespace cn ON cn.oid = c.collnamespace "
		"WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped";
	const char *params[1] = { qualified };
	PGresult *res;
	size_t i;
	int rc = 0, nt, r;

	for (i = 0; i < n; i++) {
		types[i] = NULL;
		if (colls)
			colls[i] = NULL;
	}
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
		if (colls && !PQgetisnull(res, r, 4))
			colls[i] = strdup(PQgetvalue(res, r, 4));
		if (!types[i] || (colls && !PQgetisnull(res, r, 4) && !colls[i])) {
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
			if (colls) {
				free(colls[i]);
				colls[i] = NULL;
			}
		}
	return rc;
}

/*
 * The unique indexes that ON CONFLICT (keys) can take as its arbiter: valid,
 * not partial, on plain columns, with exactly the key columns. Per index and
 * key column (in index order): the column, the index's collation clause
 * (where not the type's own), whether the index's equality is the type's
 * default one (which GROUP BY uses), whether equal values are identical
 * (the B-tree "equalimage" support function, as deduplication asks it), and
 * the index and operator class for messages.
 */
static const char arbiters_sql[] =
	"SELECT i.indexrelid, a.attname, "
	"CASE WHEN ic.coll <> 0 AND ic.coll <> t.typcollation THEN "
	"' COLLATE ' || pg_catalog.quote_ident(cn.nspname) || '.' || "
	"pg_catalog.quote_ident(co.collname) END, "
	"(SELECT o.amopopr FROM pg_catalog.pg_amop o WHERE o.amopfamily = oc.opcfamily "
	"AND o.amoplefttype = oc.opcintype AND o.amoprighttype = oc.opcintype "
	"AND o.amopstrategy = 3) IS NOT DISTINCT FROM "
	"(SELECT o.amopopr FROM pg_catalog.pg_opclass d JOIN pg_catalog.pg_amop o "
	"ON o.amopfamily = d.opcfamily AND o.amoplefttype = d.opcintype "
	"AND o.amoprighttype = d.opcintype AND o.amopstrategy = 3 "
	"WHERE d.opcmethod = oc.opcmethod AND d.opcdefault AND d.opcintype = oc.opcintype), "
	"coalesce((SELECT CASE p.amproc WHEN 'pg_catalog.btequalimage'::pg_catalog.regproc "
	"THEN true WHEN 'pg_catalog.btvarstrequalimage'::pg_catalog.regproc "
	"THEN coalesce(co.collisdeterministic, true) ELSE false END "
	"FROM pg_catalog.pg_amproc p WHERE p.amprocfamily = oc.opcfamily "
	"AND p.amproclefttype = oc.opcintype AND p.amprocrighttype = oc.opcintype "
	"AND p.amprocnum = 4), false), "
	"i.indexrelid::pg_catalog.regclass::text, oc.opcname, "
	"coalesce(co.collname, '') "
	"FROM pg_catalog.pg_index i "
	"CROSS JOIN LATERAL unnest(i.indkey::int2[], i.indcollation::oid[], "
	"i.indclass::oid[]) WITH ORDINALITY AS ic(attnum, coll, cls, n) "
	"JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ic.attnum "
	"JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
	"JOIN pg_catalog.pg_opclass oc ON oc.oid = ic.cls "
	"LEFT JOIN pg_catalog.pg_collation co ON co.oid = ic.coll "
	"LEFT JOIN pg_catalog.pg_namespace cn ON cn.oid = co.collnamespace "
	"WHERE i.indrelid = $1::regclass AND i.indisunique AND i.indisvalid "
	"AND i.indpred IS NULL AND i.indexprs IS NULL AND i.indnkeyatts = $2::int "
	"AND ic.n <= i.indnkeyatts ORDER BY i.indexrelid, ic.n";

static int key_index(const char *const *keys, size_t nkeys, const char *name)
{
	for (size_t k = 0; k < nkeys; k++)
		if (strcmp(keys[k], name) == 0)
			return (int)k;
	return -1;
}

int cb__pg_key_equality(char **colls, int *image, PGconn *conn, const char *qualified,
			const char *const *keys, size_t nkeys, const char *what, const char *table,
			cb_error *err)
{
	char nkeys_text[24];
	const char *params[2] = { qualified, nkeys_text };
	const char *chosen_index = NULL;
	PGresult *res;
	int rc = 0, nt, r, start, found = 0;
	size_t k;

	for (k = 0; k < nkeys; k++)
		image[k] = 0;
	snprintf(nkeys_text, sizeof(nkeys_text), "%zu", nkeys);
	res = PQexecParams(conn, arbiters_sql, 2, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		rc = cb_pg_error(err, conn, res, "looking up the unique indexes of the table");
		cb_error_prefix(err, "%s", what);
		goto done;
	}
	nt = PQntuples(res);
	for (start = 0; start < nt; start = r) {
		int all = 1;

		/* one index: rows start..r-1 */
		for (r = start;
		     r < nt && strcmp(PQgetvalue(res, r, 0), PQgetvalue(res, start, 0)) == 0; r++)
			if (key_index(keys, nkeys, PQgetvalue(res, r, 1)) < 0)
				all = 0;
		if (!all || (size_t)(r - start) != nkeys)
			continue; /* not an arbiter of ON CONFLICT (keys) */
		for (int j = start; j < r; j++) {
			int ki = key_index(keys, nkeys, PQgetvalue(res, j, 1));
			const char *clause = PQgetisnull(res, j, 2) ? NULL : PQgetvalue(res, j, 2);

			if (PQgetvalue(res, j, 3)[0] != 't') {
				rc = cb_error_set(
					err, CB_EINVAL,
					"%s: key column \"%s\" of table \"%s\": its unique "
					"index %s compares with the operator class %s, "
					"whose equality is not the type's default one: the "
					"chunk's items with equal keys cannot be merged by "
					"it",
					what, keys[ki], table, PQgetvalue(res, j, 5),
					PQgetvalue(res, j, 6));
				goto done;
			}
			if (!found) {
				free(colls[ki]);
				colls[ki] = clause ? strdup(clause) : NULL;
				if (clause && !colls[ki]) {
					rc = cb_error_set(err, CB_ENOMEM, "out of memory");
					goto done;
				}
				image[ki] = PQgetvalue(res, j, 4)[0] == 't';
			} else if ((clause == NULL) != (colls[ki] == NULL) ||
				   (clause && strcmp(clause, colls[ki]) != 0)) {
				rc = cb_error_set(
					err, CB_EINVAL,
					"%s: key column \"%s\" of table \"%s\": the unique "
					"indexes %s and %s compare it with different "
					"collations: the chunk's items with equal keys "
					"cannot be merged by both",
					what, keys[ki], table, chosen_index, PQgetvalue(res, j, 5));
				goto done;
			}
		}
		if (!found)
			chosen_index = PQgetvalue(res, start, 5);
		found = 1;
	}
done:
	PQclear(res);
	return rc;
}

int cb__pg_has_arbiter(int *found, PGconn *conn, const char *qualified, const char *const *keys,
		       size_t nkeys, cb_error *err)
{
	char nkeys_text[24];
	const char *params[2] = { qualified, nkeys_text };
	PGresult *res;
	int rc = 0, nt, r, start;

	*found = 0;
	snprintf(nkeys_text, sizeof(nkeys_text), "%zu", nkeys);
	res = PQexecParams(conn, arbiters_sql, 2, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		rc = cb_pg_error(err, conn, res, "looking up the unique indexes of the table");
		goto done;
	}
	nt = PQntuples(res);
	for (start = 0; start < nt && !*found; start = r) {
		int all = 1;

		for (r = start;
		     r < nt && strcmp(PQgetvalue(res, r, 0), PQgetvalue(res, start, 0)) == 0; r++)
			if (key_index(keys, nkeys, PQgetvalue(res, r, 1)) < 0)
				all = 0;
		*found = all && (size_t)(r - start) == nkeys;
	}
done:
	PQclear(res);
	return rc;
}
