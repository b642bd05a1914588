/*
 * The PostgreSQL cursor reader (include/cbatch/readers.h): one query,
 * streamed through a server-side cursor on a second connection that holds a
 * REPEATABLE READ, read-only snapshot for the whole step — no page is ever
 * re-queried. Its pages are kept from the last committed position on, so a
 * rolled-back chunk can be read again from memory; restart moves the cursor
 * past the rows a committed chunk consumed.
 */
#include "cbatch/readers.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbatch/sys/conn.h"
#include "pg_sql.h"

struct page {
	PGresult *res;
	cb_row *rows;
	long long start; /* absolute index of its first row */
	int n;
};

struct cursor {
	char *query;
	char **qparams;
	size_t nqparams;
	size_t opt_fetch;
	char what[160];
	PGconn *conn; /* our own */
	int open;
	size_t fetch;
	struct page *pages;
	size_t npages, cappages;
	long long pos;       /* rows handed out */
	long long committed; /* rows consumed by committed chunks */
	long long pending;   /* position stored by the last update, -1 if none */
	int exhausted;
};

static void drop_pages_before(struct cursor *c, long long abs)
{
	size_t k = 0;

	while (k < c->npages && c->pages[k].start + c->pages[k].n <= abs) {
		PQclear(c->pages[k].res);
		free(c->pages[k].rows);
		k++;
	}
	if (k) {
		memmove(c->pages, c->pages + k, (c->npages - k) * sizeof(*c->pages));
		c->npages -= k;
	}
}

static int command(struct cursor *c, const char *sql, int n, const char *const *params,
		   cb_error *err)
{
	PGresult *res = PQexecParams(c->conn, sql, n, NULL, params, NULL, NULL, 0);
	int rc = 0;

	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		rc = cb_pg_error(err, c->conn, res, c->what);
	}
	PQclear(res);
	return rc;
}

static void cur_close(void *state)
{
	struct cursor *c = state;

	drop_pages_before(c, (long long)1 << 62);
	free(c->pages);
	c->pages = NULL;
	c->npages = c->cappages = 0;
	/* Ending the read-only transaction closes the cursor. */
	PQfinish(c->conn);
	c->conn = NULL;
	c->open = 0;
}

static int cur_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	struct cursor *c = state;
	char move[64];
	int rc;

	cur_close(c);
	c->fetch = c->opt_fetch ? c->opt_fetch : cb_step_context_chunk_size(sc);
	c->conn = cb_pg_connect_like(cb_step_context_conn(sc), "cbatch-cursor");
	if (PQstatus(c->conn) != CONNECTION_OK)
		return cb_pg_error(err, c->conn, NULL, c->what);
	c->committed = 0;
	if (saved && json_is_integer(json_object_get(saved, "consumed")))
		c->committed = json_integer_value(json_object_get(saved, "consumed"));
	if (c->committed < 0)
		return cb_error_set(err, CB_EINVAL, "%s: saved position is negative", c->what);
	c->pos = c->committed;
	c->pending = -1;
	c->exhausted = 0;
	rc = command(c, "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", 0, NULL, err);
	if (rc == 0) {
		char *sql = malloc(strlen(c->query) + 64);

		if (!sql)
			return cb_error_set(err, CB_ENOMEM, "%s: out of memory", c->what);
		sprintf(sql, "DECLARE cb_cursor NO SCROLL CURSOR FOR %s", c->query);
		rc = command(c, sql, (int)c->nqparams, (const char *const *)c->qparams, err);
		free(sql);
	}
	if (rc == 0 && c->committed > 0) {
		/* Restart: skip what committed chunks consumed (same query, same order). */
		snprintf(move, sizeof(move), "MOVE FORWARD %lld FROM cb_cursor", c->committed);
		rc = command(c, move, 0, NULL, err);
	}
	c->open = rc == 0;
	return rc;
}

static int fetch(struct cursor *c, cb_error *err)
{
	char sql[64];
	struct page *p;
	PGresult *res;
	long long start =
		c->npages ? c->pages[c->npages - 1].start + c->pages[c->npages - 1].n : c->pos;

	if (c->npages == c->cappages) {
		size_t cap = c->cappages ? c->cappages * 2 : 4;
		struct page *np = realloc(c->pages, cap * sizeof(*np));

		if (!np)
			return cb_error_set(err, CB_ENOMEM, "%s: out of memory", c->what);
		c->pages = np;
		c->cappages = cap;
	}
	snprintf(sql, sizeof(sql), "FETCH FORWARD %zu FROM cb_cursor", c->fetch);
	res = PQexec(c->conn, sql);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		int rc = cb_pg_error(err, c->conn, res, c->what);

		PQclear(res);
		return rc;
	}
	if (PQntuples(res) == 0) {
		PQclear(res);
		c->exhausted = 1;
		return CB_DONE;
	}
	p = &c->pages[c->npages];
	p->res = res;
	p->n = PQntuples(res);
	p->start = start;
	p->rows = malloc((size_t)p->n * sizeof(cb_row));
	if (!p->rows) {
		PQclear(res);
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", c->what);
	}
	for (int i = 0; i < p->n; i++)
		p->rows[i] = (cb_row){ res, i };
	c->npages++;
	return 0;
}

static int cur_read(void *state, cb_tx *tx, void **item, cb_error *err)
{
	struct cursor *c = state;

	(void)tx;
	if (!c->open)
		return cb_error_set(err, CB_EINVAL, "%s: read before open", c->what);
	if (c->pending >= 0) {
		/* A read after update: that chunk committed; its pages can go. */
		c->committed = c->pending;
		c->pending = -1;
		drop_pages_before(c, c->committed);
	}
	for (;;) {
		for (size_t k = 0; k < c->npages; k++) {
			struct page *p = &c->pages[k];

			if (c->pos >= p->start && c->pos < p->start + p->n) {
				*item = &p->rows[c->pos - p->start];
				c->pos++;
				return 0;
			}
		}
		if (c->exhausted)
			return CB_DONE;
		{
			int rc = fetch(c, err);

			if (rc)
				return rc;
		}
	}
}

static int cur_update(void *state, json_t *out, cb_error *err)
{
	struct cursor *c = state;

	(void)err;
	c->pending = c->pos;
	return json_object_set_new(out, "consumed", json_integer(c->pos));
}

static void cur_rollback(void *state)
{
	struct cursor *c = state;

	/* The rows since the last commit are still in memory: read them again. */
	c->pending = -1;
	c->pos = c->committed;
}

static void cur_describe(void *state, const void *item, char *buf, size_t size)
{
	const cb_row *r = item;

	(void)state;
	snprintf(buf, size, "%s=%s", PQfname(r->res, 0), cb_row_get(r, 0));
}

static void cur_free(void *state)
{
	struct cursor *c = state;

	if (!c)
		return;
	cur_close(c);
	free(c->query);
	for (size_t i = 0; i < c->nqparams; i++)
		free(c->qparams[i]);
	free(c->qparams);
	free(c);
}

/*
 * The preflight (item.h `check`): the query prepared unnamed on the check's
 * connection (the run's own connection opens later, on the same database),
 * so that a table or column it names that does not exist is found before
 * anything is recorded; its row columns and types go to the writers' checks.
 */
static int cur_check(void *state, const cb_step_context *sc, cb_error *err)
{
	struct cursor *c = state;
	PGconn *conn = cb_step_context_conn(sc);

	if (!conn)
		return cb_error_set(err, CB_EINVAL, "%s: no step context or connection", c->what);
	return cb__rd_check_query(conn, sc, c->query, (int)c->nqparams, c->what, "the query", err);
}

int cb_pg_cursor_reader_new(cb_reader *out, const cb_pg_cursor_options *opts, cb_error *err)
{
	struct cursor *c;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !opts || opts->version != CB_PG_CURSOR_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL,
				    "pg cursor reader: no options (or of unknown "
				    "version)");
	if (!opts->query || !opts->query[0])
		return cb_error_set(err, CB_EINVAL, "pg cursor reader: no query");
	if (opts->nquery_params && !opts->query_params)
		return cb_error_set(err, CB_EINVAL,
				    "pg cursor reader: nquery_params without "
				    "query_params");
	c = calloc(1, sizeof(*c));
	if (!c)
		return cb_error_set(err, CB_ENOMEM, "pg cursor reader: out of memory");
	snprintf(c->what, sizeof(c->what), "pg cursor reader (%.100s)", opts->query);
	c->query = strdup(opts->query);
	c->qparams = calloc(opts->nquery_params ? opts->nquery_params : 1, sizeof(char *));
	if (!c->query || !c->qparams) {
		cur_free(c);
		return cb_error_set(err, CB_ENOMEM, "pg cursor reader: out of memory");
	}
	for (size_t i = 0; i < opts->nquery_params; i++) {
		c->qparams[i] = opts->query_params[i] ? strdup(opts->query_params[i]) : NULL;
		c->nqparams = i + 1;
		if (opts->query_params[i] && !c->qparams[i]) {
			cur_free(c);
			return cb_error_set(err, CB_ENOMEM, "pg cursor reader: out of memory");
		}
	}
	c->opt_fetch = opts->fetch_size;
	*out = (cb_reader){ .version = CB_READER_VERSION,
			    .state = c,
			    .open = cur_open,
			    .read = cur_read,
			    .update = cur_update,
			    .describe = cur_describe,
			    .rollback = cur_rollback,
			    .close = cur_close,
			    .free = cur_free,
			    .check = cur_check };
	return 0;
}
