/*
 * The catalog as the preflight checks see it (pgkit.h): a table's columns
 * and their types, looked up without erring on a missing table (to_regclass),
 * and which assignments of one type to another lose something silently.
 */
#include "pgkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Columns: name, type, base type (a domain's own), category, ordered. */
static const char columns_sql[] =
	"SELECT a.attname, pg_catalog.format_type(a.atttypid, a.atttypmod), "
	"pg_catalog.format_type(bt.oid, CASE WHEN t.typtype = 'd' THEN t.typtypmod "
	"ELSE a.atttypmod END), bt.typcategory, "
	"bt.typcategory = 'S' OR EXISTS (SELECT 1 FROM pg_catalog.pg_opclass oc "
	"JOIN pg_catalog.pg_am am ON am.oid = oc.opcmethod WHERE am.amname = 'btree' "
	"AND oc.opcdefault AND oc.opcintype = bt.oid), c.relkind "
	"FROM pg_catalog.pg_class c "
	"LEFT JOIN pg_catalog.pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 "
	"AND NOT a.attisdropped "
	"LEFT JOIN pg_catalog.pg_type t ON t.oid = a.atttypid "
	"LEFT JOIN pg_catalog.pg_type bt ON bt.oid = CASE WHEN t.typtype = 'd' "
	"THEN t.typbasetype ELSE t.oid END "
	"WHERE c.oid = pg_catalog.to_regclass($1) ORDER BY a.attnum";

int cb__pg_rel_load(cb__pg_rel *r, PGconn *conn, const char *schema, const char *table,
		    const char *what, cb_error *err)
{
	char *qualified = NULL;
	const char *params[1];
	int rc;

	memset(r, 0, sizeof(*r));
	snprintf(r->name, sizeof(r->name), "%s%s%s", schema ? schema : "", schema ? "." : "",
		 table);
	rc = cb__pg_qualified_name(&qualified, conn, schema, table, err);
	if (rc)
		return rc;
	params[0] = qualified;
	r->res = PQexecParams(conn, columns_sql, 1, NULL, params, NULL, NULL, 0);
	free(qualified);
	if (PQresultStatus(r->res) != PGRES_TUPLES_OK) {
		rc = cb_pg_error(err, conn, r->res, "looking up the table in the catalog");
		cb_error_prefix(err, "%s", what);
		cb__pg_rel_free(r);
		return rc;
	}
	if (PQntuples(r->res) == 0) {
		cb__pg_rel_free(r);
		return cb_error_set(err, CB_EINVAL, "%s: table \"%s\" does not exist%s", what,
				    r->name, schema ? "" : " (in the search_path)");
	}
	r->relkind = PQgetvalue(r->res, 0, 5)[0];
	r->ncols = PQgetisnull(r->res, 0, 0) ? 0 : PQntuples(r->res);
	return 0;
}

void cb__pg_rel_free(cb__pg_rel *r)
{
	if (!r)
		return;
	PQclear(r->res);
	r->res = NULL;
	r->ncols = 0;
}

int cb__pg_rel_column(const cb__pg_rel *r, const char *name)
{
	for (int i = 0; i < r->ncols; i++)
		if (strcmp(PQgetvalue(r->res, i, 0), name) == 0)
			return i;
	return -1;
}

int cb__pg_rel_need(const cb__pg_rel *r, const char *name, const char *what, const char *label,
		    cb_error *err)
{
	char list[300];
	size_t len = 0;
	int i = cb__pg_rel_column(r, name);

	if (i >= 0)
		return i;
	list[0] = '\0';
	for (int c = 0; c < r->ncols && len < sizeof(list); c++)
		len += (size_t)snprintf(list + len, sizeof(list) - len, "%s%s", c ? ", " : "",
					PQgetvalue(r->res, c, 0));
	if (len >= sizeof(list))
		memcpy(list + sizeof(list) - 5, "...", 4);
	return cb_error_set(err, CB_EINVAL, "%s: %s \"%s\" does not exist (columns: %s)", what,
			    label ? label : "column", name, list);
}

const char *cb__pg_rel_type(const cb__pg_rel *r, int col)
{
	return PQgetvalue(r->res, col, 1);
}

const char *cb__pg_rel_base_type(const cb__pg_rel *r, int col)
{
	return PQgetvalue(r->res, col, 2);
}

char cb__pg_rel_category(const cb__pg_rel *r, int col)
{
	return PQgetvalue(r->res, col, 3)[0];
}

int cb__pg_rel_ordered(const cb__pg_rel *r, int col)
{
	return PQgetvalue(r->res, col, 4)[0] == 't';
}

/* What a type's text says about the values it holds. */
enum kind {
	K_OTHER,
	K_TEXT,
	K_CHAR,
	K_INT,
	K_FLOAT,
	K_NUMERIC,
	K_DATE,
	K_TS,
	K_TSTZ
};

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* @p n: a numeric's scale (declared: an unconstrained numeric, whose scale
 * only its values know, is -1 and never judged lossy) or a character type's length, -1 unbounded. */
static enum kind kind(const char *type, long *n)
{
	const char *p = strchr(type, '(');

	*n = -1;
	if (starts(type, "timestamp"))
		return strstr(type, "with time zone") ? K_TSTZ : K_TS;
	if (strcmp(type, "date") == 0)
		return K_DATE;
	if (strcmp(type, "integer") == 0 || strcmp(type, "bigint") == 0 ||
	    strcmp(type, "smallint") == 0)
		return K_INT;
	if (strcmp(type, "real") == 0 || strcmp(type, "double precision") == 0)
		return K_FLOAT;
	if (starts(type, "numeric")) {
		const char *comma = p ? strchr(p, ',') : NULL;

		if (p)
			*n = comma ? strtol(comma + 1, NULL, 10) : 0;
		return K_NUMERIC;
	}
	if (starts(type, "character varying") || starts(type, "character(") ||
	    strcmp(type, "character") == 0 || starts(type, "bit")) {
		if (p)
			*n = strtol(p + 1, NULL, 10);
		return p ? K_CHAR : K_TEXT;
	}
	if (strcmp(type, "text") == 0)
		return K_TEXT;
	return K_OTHER;
}

int cb__pg_lossy(char *why, size_t size, const char *source, const char *target)
{
	long sn, tn;
	enum kind s = kind(source, &sn), t = kind(target, &tn);

	why[0] = '\0';
	if (t == K_DATE && (s == K_TS || s == K_TSTZ))
		snprintf(why, size, "a %s value loses its time of day in a %s column", source,
			 target);
	else if (t == K_TS && s == K_TSTZ)
		snprintf(why, size,
			 "a %s value loses its time zone in a %s column (it becomes the "
			 "session's local time)",
			 source, target);
	else if (t == K_INT && s == K_NUMERIC && sn > 0)
		snprintf(why, size,
			 "a %s value may have a fraction, which a %s column cannot hold (such "
			 "a value fails at chunk time)",
			 source, target);
	else if (t == K_NUMERIC && tn >= 0 && s == K_NUMERIC && sn > tn)
		snprintf(why, size, "a %s value is rounded to %ld decimal places in a %s column",
			 source, tn, target);
	else if (t == K_CHAR && tn >= 0 && s != K_INT && s != K_DATE &&
		 (s != K_CHAR || sn < 0 || sn > tn))
		snprintf(why, size,
			 "a %s value is cut to %ld characters in a %s column (the writer's cast "
			 "truncates)",
			 source, tn, target);
	return why[0] != '\0';
}

int cb__pg_assignable(int *ok, PGconn *conn, const char *source, const char *target, cb_error *err)
{
	/* A domain assigns as its base type; any type assigns to a string
	 * (I/O conversion), as INSERT ... SELECT would allow. */
	static const char sql[] =
		"SELECT s.oid = t.oid OR t.typcategory = 'S' OR EXISTS (SELECT 1 FROM "
		"pg_catalog.pg_cast c WHERE c.castsource = s.oid AND c.casttarget = t.oid "
		"AND c.castcontext IN ('a', 'i')) FROM pg_catalog.pg_type s0 "
		"JOIN pg_catalog.pg_type s ON s.oid = CASE WHEN s0.typtype = 'd' "
		"THEN s0.typbasetype ELSE s0.oid END, pg_catalog.pg_type t "
		"WHERE s0.oid = $1::pg_catalog.regtype AND t.oid = $2::pg_catalog.regtype";
	const char *params[2] = { source, target };
	PGresult *res = PQexecParams(conn, sql, 2, NULL, params, NULL, NULL, 0);
	int rc = 0;

	*ok = 1;
	if (PQresultStatus(res) != PGRES_TUPLES_OK)
		rc = cb_pg_error(err, conn, res, "comparing two types");
	else if (PQntuples(res) == 1)
		*ok = PQgetvalue(res, 0, 0)[0] == 't';
	PQclear(res);
	return rc;
}
