/* Helpers of the PostgreSQL readers (readers/pg_sql.h). */
#include "pg_sql.h"

#include <stdio.h>

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

char *cb__rd_strdup(const char *s)
{
	return s ? strdup(s) : NULL;
}

void cb__rd_strv_free(char **v, size_t n)
{
	if (!v)
		return;
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

char **cb__rd_strv_dup(const char *const *v, size_t n)
{
	char **d = calloc(n ? n : 1, sizeof(*d));

	if (!d)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		d[i] = strdup(v[i]);
		if (!d[i]) {
			cb__rd_strv_free(d, i);
			return NULL;
		}
	}
	return d;
}

void cb__rd_add(FILE *f, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
}

int cb__rd_quote(char **out, PGconn *conn, const char *what, const char *ident, cb_error *err)
{
	int rc = cb_pg_quote_ident(out, conn, ident, err);

	if (rc)
		cb_error_prefix(err, "%s", what);
	return rc;
}

int cb__rd_check_ident(const char *s, const char *what, const char *label, size_t i, cb_error *err)
{
	if (!s || !s[0])
		return cb_error_set(err, CB_EINVAL, "%s: %s %zu is empty", what, label, i + 1);
	return 0;
}

int cb__rd_find_keycols(int *keycol, PGconn *conn, const char *stmt, char *const *keys,
			char *const *qkeys, size_t n, const char *what, const char *query,
			cb_error *err)
{
	PGresult *res = PQdescribePrepared(conn, stmt);
	int rc = 0;

	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		char doing[64];

		snprintf(doing, sizeof(doing), "describing the %s query", query);
		rc = cb_pg_error(err, conn, res, doing);
		cb_error_prefix(err, "%s", what);
		goto done;
	}
	for (size_t i = 0; i < n; i++) {
		/* PQfnumber folds unquoted names: the quoted form matches exactly */
		keycol[i] = PQfnumber(res, qkeys[i]);
		if (keycol[i] < 0) {
			rc = cb_error_set(err, CB_EINVAL,
					  "%s: key column \"%s\" is not in the %s query's result",
					  what, keys[i], query);
			goto done;
		}
	}
done:
	PQclear(res);
	return rc;
}

void cb__rd_describe_keys(char *buf, size_t size, char *const *keys, size_t n, const int *keycol,
			  const PGresult *res, int row)
{
	size_t off = 0;

	if (!buf || size == 0)
		return;
	buf[0] = '\0';
	if (!res || !keycol)
		return;
	for (size_t i = 0; i < n && off < size; i++) {
		int w = snprintf(buf + off, size - off, "%s%s=%s", i ? ", " : "", keys[i],
				 PQgetvalue(res, row, keycol[i]));

		if (w < 0)
			break;
		off += (size_t)w;
	}
}

int cb__rd_check_table(const char *what, const cb__rd_table *t, cb_error *err)
{
	int rc;

	if (!t->table || !t->table[0])
		return cb_error_set(err, CB_EINVAL, "%s: no table", what);
	if (t->schema && !t->schema[0])
		return cb_error_set(err, CB_EINVAL, "%s on \"%s\": empty schema name", what,
				    t->table);
	if (!t->keys || t->nkeys == 0 || t->nkeys > 100)
		return cb_error_set(err, CB_EINVAL, "%s on \"%s\": no key columns (or too many)",
				    what, t->table);
	if (!t->columns && t->ncolumns > 0)
		return cb_error_set(err, CB_EINVAL, "%s on \"%s\": ncolumns without columns", what,
				    t->table);
	for (size_t i = 0; t->params && i < t->nparams; i++)
		if (!t->params[i])
			return cb_error_set(err, CB_EINVAL,
					    "%s on \"%s\": query parameter $%zu is NULL", what,
					    t->table, i + 1);
	for (size_t i = 0; i < t->nkeys; i++) {
		if ((rc = cb__rd_check_ident(t->keys[i], what, "key column", i, err)) < 0)
			return rc;
		for (size_t j = 0; j < i; j++)
			if (strcmp(t->keys[i], t->keys[j]) == 0)
				return cb_error_set(err, CB_EINVAL,
						    "%s on \"%s\": key column \"%s\" given twice",
						    what, t->table, t->keys[i]);
	}
	for (size_t i = 0; i < t->ncolumns; i++)
		if ((rc = cb__rd_check_ident(t->columns[i], what, "column", i, err)) < 0)
			return rc;
	return 0;
}

int cb__rd_check_query(PGconn *conn, const cb_step_context *sc, const char *sql, int nparams,
		       const char *what, const char *query, cb_error *err)
{
	static const char types_sql[] =
		"SELECT pg_catalog.format_type(t.o, t.m) FROM unnest($1::oid[], $2::int4[]) "
		"WITH ORDINALITY AS t(o, m, n) ORDER BY t.n";
	PGresult *res = PQprepare(conn, "", sql, nparams, NULL), *desc = NULL, *types = NULL;
	char *oids = NULL, *mods = NULL;
	size_t olen, mlen;
	FILE *fo = NULL, *fm = NULL;
	const char *params[2];
	int rc = 0, nf, i;

	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		rc = cb_pg_error(err, conn, res, query);
		cb_error_prefix(err, "%s", what);
		/* SQLSTATE class 42: the statement does not fit the tables */
		if (strncmp(err->sqlstate, "42", 2) == 0)
			err->code = rc = CB_EINVAL;
		goto done;
	}
	desc = PQdescribePrepared(conn, "");
	if (PQresultStatus(desc) != PGRES_COMMAND_OK) {
		rc = cb_pg_error(err, conn, desc, query);
		cb_error_prefix(err, "%s", what);
		goto done;
	}
	/* The items' columns and their types, for the writers' checks. */
	nf = PQnfields(desc);
	fo = open_memstream(&oids, &olen);
	fm = open_memstream(&mods, &mlen);
	if (!fo || !fm) {
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	fputc('{', fo);
	fputc('{', fm);
	for (i = 0; i < nf; i++) {
		fprintf(fo, "%s%u", i ? "," : "", (unsigned)PQftype(desc, i));
		fprintf(fm, "%s%d", i ? "," : "", PQfmod(desc, i));
	}
	fputc('}', fo);
	fputc('}', fm);
	if (fclose(fo) != 0 || fclose(fm) != 0) {
		fo = fm = NULL;
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	fo = fm = NULL;
	params[0] = oids;
	params[1] = mods;
	types = PQexecParams(conn, types_sql, 2, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(types) != PGRES_TUPLES_OK || PQntuples(types) != nf) {
		rc = cb_pg_error(err, conn, types, "looking up the types of the rows");
		cb_error_prefix(err, "%s", what);
		goto done;
	}
	for (i = 0; i < nf && rc == 0; i++)
		if (cb_step_context_set_source_type(sc, PQfname(desc, i), PQgetvalue(types, i, 0)) <
		    0)
			rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
done:
	if (fo)
		fclose(fo);
	if (fm)
		fclose(fm);
	free(oids);
	free(mods);
	PQclear(res);
	PQclear(desc);
	PQclear(types);
	return rc;
}
