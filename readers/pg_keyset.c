/*
 * The PostgreSQL keyset paging reader (include/cbatch/readers.h).
 *
 * Two prepared statements: the first page (no key condition) and the next
 * page ("(k1, k2) > ($1, $2)"), both ORDER BY the keys LIMIT <page size>. A page is
 * fetched inside the chunk transaction with cb_tx_query when the current one
 * is used up and was full; a short page is the last one.
 *
 * Pages. Items are cb_row views into a page's PGresult, and an item must stay
 * valid until its chunk ends. So a page is released only at the first fetch
 * after a chunk boundary (update or rollback), and only if no item of the
 * chunk now running can point into it. Each page slot owns an array of
 * page_size cb_rows, allocated once and reused: a steady job allocates
 * nothing per row or per page. With page_size == chunk size (the default)
 * one page is alive at a time (more when a chunk spans several pages).
 *
 * Positions. The position is the key of the last item handed out: a row of a
 * live page (last_row) or, once that page may go, a copy (cur). update()
 * stores it in the execution context and remembers it as pending; the next
 * read() proves that chunk committed and makes it the committed position
 * (com). rollback() rewinds to com: the chunk being rolled back may be the
 * one whose update() already ran (a failed COMMIT).
 *
 * Bound. Unless the options say `unbounded`, the input is what matched when
 * the step execution first opened the reader: the largest key then (in key
 * order, through the same FROM and WHERE as the pages, DESC LIMIT 1) is the
 * high-water mark, and both page queries add "(k1, k2) <= ($hwm)". update()
 * stores it beside the last key, so it commits with the first chunk, and an
 * open from a saved context (a restart, a reconnect) takes it from there
 * instead of asking again. No row at the first open: the bound is "nothing"
 * (JSON null) and the reader ends at once, whatever arrives meanwhile.
 */
#include "cbatch/readers.h"
#include "cbatch/sys/tx.h"

#include "partition_filter.h"
#include "pg_sql.h"
#include "cbatch/partition.h"

#include <limits.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A key's text values, in growable buffers kept for the reader's lifetime. */
struct keybuf {
	char **v;
	size_t *cap;
	int valid; /* 0: the start of the input */
};

struct page {
	PGresult *res; /* NULL in a spare slot */
	cb_row *rows;  /* page_size entries */
	int ntuples;
};

struct keyset {
	/* options (copies) */
	char *schema;
	char *table;
	char *where;
	char *query;    /* FROM (query) AS table, or NULL */
	char **qparams; /* the query's $1..$n */
	size_t nqparams;
	char **columns;
	size_t ncolumns;
	char **keys;
	size_t nkeys;
	size_t opt_page_size;
	int unbounded; /* the option: no high-water mark */
	char what[200];
	/* from open */
	int opened;
	PGconn *conn;
	size_t page_size;
	char limit[24];
	char stmt_first[64];
	char stmt_next[64];
	int *keycol;         /* result column of each key */
	const char **params; /* query params, partition values, keys */
	cb__rd_filter part;  /* this step execution's partition of the input */
	/* pages: [0, npages) live, the last one current; [npages, cappages) spare */
	struct page *pages;
	size_t npages;
	size_t cappages;
	size_t pos;       /* next row of the current page */
	int dropped;      /* current page dropped by rollback: fetch again */
	int done;         /* the current page was short: nothing after it */
	int boundary;     /* a chunk ended since the last fetch */
	size_t keep_from; /* at the next fetch, release pages before this */
	/* positions */
	const cb_row *last_row; /* last item handed out, NULL: see at */
	struct keybuf *at;      /* &cur, &com, or NULL for the start */
	struct keybuf cur;
	struct keybuf pend; /* stored by the last update() */
	struct keybuf com;  /* committed */
	int pending;
	/* the bound: hwm valid, or nothing (no row at the first open) */
	struct keybuf hwm;
	int nothing;
};

static int keybuf_init(struct keybuf *k, size_t n)
{
	k->v = calloc(n, sizeof(*k->v));
	k->cap = calloc(n, sizeof(*k->cap));
	k->valid = 0;
	return k->v && k->cap ? 0 : CB_ENOMEM;
}

static void keybuf_free(struct keybuf *k, size_t n)
{
	size_t i;

	if (k->v)
		for (i = 0; i < n; i++)
			free(k->v[i]);
	free(k->v);
	free(k->cap);
	memset(k, 0, sizeof(*k));
}

/* Copy value @p i (@p len bytes, no NUL inside) into @p k. */
static int keybuf_set(struct keybuf *k, size_t i, const char *s, size_t len)
{
	if (len + 1 > k->cap[i]) {
		size_t cap = len + 1 < 32 ? 32 : len + 1;
		char *p = realloc(k->v[i], cap);

		if (!p)
			return CB_ENOMEM;
		k->v[i] = p;
		k->cap[i] = cap;
	}
	memcpy(k->v[i], s, len);
	k->v[i][len] = '\0';
	return 0;
}

static int keybuf_copy(struct keybuf *dst, const struct keybuf *src, size_t n)
{
	size_t i;

	if (dst == src)
		return 0;
	dst->valid = 0;
	if (!src || !src->valid)
		return 0;
	for (i = 0; i < n; i++)
		if (keybuf_set(dst, i, src->v[i], strlen(src->v[i])) < 0)
			return CB_ENOMEM;
	dst->valid = 1;
	return 0;
}

/* Key value @p i at the current position, or NULL at the start. */
static const char *position(const struct keyset *ks, size_t i)
{
	if (ks->last_row)
		return PQgetvalue(ks->last_row->res, ks->last_row->row, ks->keycol[i]);
	if (ks->at && ks->at->valid)
		return ks->at->v[i];
	return NULL;
}

/* Save the position into @p k. */
static int save_position(struct keyset *ks, struct keybuf *k)
{
	size_t i;

	if (ks->last_row) {
		for (i = 0; i < ks->nkeys; i++) {
			const cb_row *r = ks->last_row;

			if (keybuf_set(k, i, PQgetvalue(r->res, r->row, ks->keycol[i]),
				       (size_t)PQgetlength(r->res, r->row, ks->keycol[i])) < 0) {
				k->valid = 0;
				return CB_ENOMEM;
			}
		}
		k->valid = 1;
		return 0;
	}
	return keybuf_copy(k, ks->at, ks->nkeys);
}

static void release_pages(struct keyset *ks)
{
	size_t i;

	for (i = 0; i < ks->npages; i++) {
		PQclear(ks->pages[i].res);
		ks->pages[i].res = NULL;
		ks->pages[i].ntuples = 0;
	}
	ks->npages = 0;
	ks->pos = 0;
	ks->last_row = NULL;
}

static void ks_close(void *state)
{
	struct keyset *ks = state;
	size_t i;

	if (!ks)
		return;
	/* a long-lived process (the scheduler) reuses its connection: no leak */
	cb__pg_deallocate(ks->conn, ks->stmt_first);
	cb__pg_deallocate(ks->conn, ks->stmt_next);
	release_pages(ks);
	for (i = 0; i < ks->cappages; i++)
		free(ks->pages[i].rows);
	free(ks->pages);
	ks->pages = NULL;
	ks->cappages = 0;
	free(ks->keycol);
	ks->keycol = NULL;
	free(ks->params);
	ks->params = NULL;
	cb__rd_filter_free(&ks->part);
	keybuf_free(&ks->cur, ks->nkeys);
	keybuf_free(&ks->pend, ks->nkeys);
	keybuf_free(&ks->com, ks->nkeys);
	keybuf_free(&ks->hwm, ks->nkeys);
	ks->nothing = 0;
	ks->at = NULL;
	ks->pending = 0;
	ks->opened = 0;
	ks->conn = NULL;
}

static void ks_free(void *state)
{
	struct keyset *ks = state;

	if (!ks)
		return;
	ks_close(ks);
	free(ks->schema);
	free(ks->table);
	free(ks->query);
	cb__rd_strv_free(ks->qparams, ks->nqparams);
	free(ks->where);
	cb__rd_strv_free(ks->columns, ks->ncolumns);
	cb__rd_strv_free(ks->keys, ks->nkeys);
	free(ks);
}

/*
 * Build the statements: the first page, the pages after a key and, when
 * bounded, the high-water mark query (the last key in key order). @p qkeys:
 * the quoted keys. The select list is the given columns plus any key not
 * among them (or "*"); the mark's, the keys alone. Parameters: the query's,
 * the partition's, the mark's (bounded), the last key's (next page).
 */
static int build_sql(struct keyset *ks, char **first, char **next, char **hwm, char *const *qkeys,
		     cb_error *err)
{
	char *text[3] = { NULL, NULL, NULL };
	size_t len, i, j, nbound = ks->unbounded ? 0 : ks->nkeys;
	size_t base = ks->nqparams + ks->part.nvalues;
	char *qtable = NULL, *qschema = NULL, *q = NULL;
	int rc = 0, which, nstmt = ks->unbounded ? 2 : 3;

	*first = *next = *hwm = NULL;
	rc = cb__rd_quote(&qtable, ks->conn, ks->what, ks->table, err);
	if (!rc && ks->schema)
		rc = cb__rd_quote(&qschema, ks->conn, ks->what, ks->schema, err);
	for (which = 0; which < nstmt && !rc; which++) {
		FILE *f = open_memstream(&text[which], &len);
		int any;

		if (!f) {
			rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
			break;
		}
		cb__rd_add(f, "SELECT ");
		if (which == 2) {
			for (i = 0; i < ks->nkeys; i++)
				cb__rd_add(f, "%s%s", i ? ", " : "", qkeys[i]);
		} else if (ks->ncolumns == 0) {
			cb__rd_add(f, "*");
		} else {
			for (i = 0; i < ks->ncolumns && !rc; i++) {
				rc = cb__rd_quote(&q, ks->conn, ks->what, ks->columns[i], err);
				if (!rc)
					cb__rd_add(f, "%s%s", i ? ", " : "", q);
				free(q);
				q = NULL;
			}
			for (i = 0; i < ks->nkeys && !rc; i++) {
				for (j = 0; j < ks->ncolumns; j++)
					if (strcmp(ks->columns[j], ks->keys[i]) == 0)
						break;
				if (j == ks->ncolumns)
					cb__rd_add(f, ", %s", qkeys[i]);
			}
		}
		if (ks->query)
			cb__rd_add(f, " FROM (\n%s\n) AS %s", ks->query, qtable);
		else if (qschema)
			cb__rd_add(f, " FROM %s.%s", qschema, qtable);
		else
			cb__rd_add(f, " FROM %s", qtable);
		/* the filter on its own lines, so that a trailing "--" comment is harmless */
		any = ks->where || ks->part.sql;
		if (ks->where)
			cb__rd_add(f, " WHERE (\n%s\n)", ks->where);
		if (ks->part.sql)
			cb__rd_add(f, "%s(%s)", ks->where ? " AND " : " WHERE ", ks->part.sql);
		if (which < 2 && nbound) {
			/* the high-water mark: the input that existed at the first open */
			cb__rd_add(f, any ? " AND (" : " WHERE (");
			for (i = 0; i < ks->nkeys; i++)
				cb__rd_add(f, "%s%s", i ? ", " : "", qkeys[i]);
			cb__rd_add(f, ") <= (");
			for (i = 0; i < ks->nkeys; i++)
				cb__rd_add(f, "%s$%zu", i ? ", " : "", base + i + 1);
			cb__rd_add(f, ")");
			any = 1;
		}
		if (which == 1) {
			cb__rd_add(f, any ? " AND (" : " WHERE (");
			for (i = 0; i < ks->nkeys; i++)
				cb__rd_add(f, "%s%s", i ? ", " : "", qkeys[i]);
			cb__rd_add(f, ") > (");
			for (i = 0; i < ks->nkeys; i++)
				cb__rd_add(f, "%s$%zu", i ? ", " : "", base + nbound + i + 1);
			cb__rd_add(f, ")");
		}
		cb__rd_add(f, " ORDER BY ");
		/* the mark: the last key, by the same index read backwards */
		for (i = 0; i < ks->nkeys; i++)
			cb__rd_add(f, "%s%s%s", i ? ", " : "", qkeys[i], which == 2 ? " DESC" : "");
		/* A literal, not a parameter: with LIMIT $n PostgreSQL plans the
		 * page query again on every execution (measured: ~60 us a chunk). */
		if (which == 2)
			cb__rd_add(f, " LIMIT 1");
		else
			cb__rd_add(f, " LIMIT %zu", ks->page_size);
		if (ferror(f))
			rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
		if (fclose(f) != 0 && !rc)
			rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
	}
	free(qtable);
	free(qschema);
	if (rc) {
		for (which = 0; which < 3; which++)
			free(text[which]);
		return rc;
	}
	*first = text[0];
	*next = text[1];
	*hwm = text[2];
	return 0;
}

/* A saved key array (@p name: its member) into @p k. */
static int restore_key(struct keyset *ks, struct keybuf *k, const json_t *lk, const char *name,
		       cb_error *err)
{
	size_t i;

	if (!json_is_array(lk) || json_array_size(lk) != ks->nkeys)
		return cb_error_set(err, CB_EINVAL, "%s: saved %s is not an array of %zu strings",
				    ks->what, name, ks->nkeys);
	for (i = 0; i < ks->nkeys; i++) {
		const json_t *v = json_array_get(lk, i);
		const char *s = json_string_value(v);
		size_t n = json_string_length(v);

		if (!s || memchr(s, '\0', n))
			return cb_error_set(err, CB_EINVAL,
					    "%s: saved %s value %zu is not a NUL-free string",
					    ks->what, name, i + 1);
		if (keybuf_set(k, i, s, n) < 0)
			return cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
	}
	k->valid = 1;
	return 0;
}

/*
 * The saved position and bound. @p *have_bound: the saved context held the
 * bound ("hwm": a key, or null for nothing), so it is not taken again.
 */
static int restore(struct keyset *ks, const json_t *saved, int *have_bound, cb_error *err)
{
	const json_t *lk, *hwm;
	int rc;

	*have_bound = 0;
	if (!saved || !json_is_object(saved))
		return 0;
	hwm = json_object_get(saved, "hwm");
	if (hwm && !ks->unbounded) {
		if (json_is_null(hwm))
			ks->nothing = 1;
		else if ((rc = restore_key(ks, &ks->hwm, hwm, "hwm", err)) < 0)
			return rc;
		*have_bound = 1;
	}
	lk = json_object_get(saved, "last_key");
	if (!lk || json_is_null(lk))
		return 0;
	if ((rc = restore_key(ks, &ks->com, lk, "last_key", err)) < 0)
		return rc;
	ks->at = &ks->com;
	return 0;
}

/*
 * Take the high-water mark: the last key (in key order) of what matches now,
 * on the step's connection, before the first chunk's transaction. No row:
 * the bound is nothing.
 */
static int take_bound(struct keyset *ks, const char *sql, cb_error *err)
{
	PGresult *res;
	size_t i;
	int rc = 0;

	for (i = 0; i < ks->nqparams; i++)
		ks->params[i] = ks->qparams[i];
	for (i = 0; i < ks->part.nvalues; i++)
		ks->params[ks->nqparams + i] = ks->part.values[i];
	res = PQexecParams(ks->conn, sql, (int)(ks->nqparams + ks->part.nvalues), NULL, ks->params,
			   NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		rc = cb_pg_error(err, ks->conn, res, "taking the high-water mark");
		cb_error_prefix(err, "%s", ks->what);
		goto done;
	}
	if (PQntuples(res) == 0) {
		ks->nothing = 1;
		goto done;
	}
	for (i = 0; i < ks->nkeys; i++) {
		if (PQgetisnull(res, 0, (int)i)) {
			rc = cb_error_set(err, CB_EINVAL,
					  "%s: key column \"%s\" is NULL in a row; keys must be "
					  "NOT NULL",
					  ks->what, ks->keys[i]);
			goto done;
		}
		if (keybuf_set(&ks->hwm, i, PQgetvalue(res, 0, (int)i),
			       (size_t)PQgetlength(res, 0, (int)i)) < 0) {
			rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
			goto done;
		}
	}
	ks->hwm.valid = 1;
done:
	PQclear(res);
	return rc;
}

static int ks_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	struct keyset *ks = state;
	char **qkeys = NULL;
	size_t nbound;
	char *first = NULL, *next = NULL, *hwm = NULL;
	size_t i;
	int rc = 0, have_bound = 0;

	ks_close(ks);
	if (!sc || !cb_step_context_conn(sc))
		return cb_error_set(err, CB_EINVAL, "%s: no step context or connection", ks->what);
	ks->conn = cb_step_context_conn(sc);
	ks->page_size = ks->opt_page_size ? ks->opt_page_size : cb_step_context_chunk_size(sc);
	if (ks->page_size == 0 || ks->page_size > INT_MAX / 2 ||
	    ks->page_size > SIZE_MAX / sizeof(cb_row))
		return cb_error_set(err, CB_EINVAL, "%s: invalid page size %zu", ks->what,
				    ks->page_size);
	snprintf(ks->limit, sizeof(ks->limit), "%zu", ks->page_size);

	rc = cb__rd_partition_filter(&ks->part, ks->conn, cb_step_context_partition(sc),
				     ks->nqparams + 1, ks->what, err);
	if (rc)
		goto done;
	ks->keycol = calloc(ks->nkeys, sizeof(*ks->keycol));
	ks->params =
		calloc(ks->nqparams + ks->part.nvalues + 2 * ks->nkeys + 1, sizeof(*ks->params));
	qkeys = calloc(ks->nkeys, sizeof(*qkeys));
	if (!ks->keycol || !ks->params || !qkeys || keybuf_init(&ks->cur, ks->nkeys) ||
	    keybuf_init(&ks->pend, ks->nkeys) || keybuf_init(&ks->com, ks->nkeys) ||
	    keybuf_init(&ks->hwm, ks->nkeys)) {
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
		goto done;
	}
	for (i = 0; i < ks->nkeys && !rc; i++)
		rc = cb__rd_quote(&qkeys[i], ks->conn, ks->what, ks->keys[i], err);
	if (rc)
		goto done;
	rc = build_sql(ks, &first, &next, &hwm, qkeys, err);
	if (rc)
		goto done;
	nbound = ks->unbounded ? 0 : ks->nkeys;
	rc = cb_pg_prepare(ks->conn, ks->stmt_first, "ks", first,
			   (int)(ks->nqparams + ks->part.nvalues + nbound), err);
	if (!rc)
		rc = cb_pg_prepare(ks->conn, ks->stmt_next, "ks", next,
				   (int)(ks->nqparams + ks->part.nvalues + nbound + ks->nkeys),
				   err);
	if (rc) {
		cb_error_prefix(err, "%s: preparing the page query", ks->what);
		goto done;
	}
	rc = cb__rd_find_keycols(ks->keycol, ks->conn, ks->stmt_first, ks->keys, qkeys, ks->nkeys,
				 ks->what, "page", err);
	if (rc)
		goto done;
	rc = restore(ks, saved, &have_bound, err);
	/* the first open of this step execution: the input is what matches now */
	if (!rc && !ks->unbounded && !have_bound)
		rc = take_bound(ks, hwm, err);
	if (rc)
		goto done;
	ks->pos = 0;
	ks->dropped = 0;
	ks->done = 0;
	ks->boundary = 0;
	ks->keep_from = 0;
	ks->opened = 1;
done:
	if (qkeys)
		for (i = 0; i < ks->nkeys; i++)
			free(qkeys[i]);
	free(qkeys);
	free(first);
	free(next);
	free(hwm);
	if (rc)
		ks_close(ks);
	return rc;
}

/*
 * The preflight (item.h `check`): the table and the columns it names
 * against the catalog, then the page query prepared unnamed (the filter,
 * a query's text), whose row columns and types go to the writers' checks.
 * Nothing is prepared by name and no mark is taken: `open` does that. The
 * partition's range is not known in a check (a partition is made when the
 * step first starts): its filter is left out.
 */
static int ks_check(void *state, const cb_step_context *sc, cb_error *err)
{
	struct keyset *ks = state;
	char **qkeys = NULL;
	char *first = NULL, *next = NULL, *hwm = NULL;
	cb__pg_rel r;
	size_t i;
	int rc = 0, col;

	if (ks->opened)
		return 0;
	if (!sc || !cb_step_context_conn(sc))
		return cb_error_set(err, CB_EINVAL, "%s: no step context or connection", ks->what);
	ks->conn = cb_step_context_conn(sc);
	ks->page_size = ks->opt_page_size ? ks->opt_page_size : cb_step_context_chunk_size(sc);
	if (ks->page_size == 0)
		ks->page_size = 1;
	if (!ks->query) {
		rc = cb__pg_rel_load(&r, ks->conn, ks->schema, ks->table, ks->what, err);
		if (rc)
			return rc;
		for (i = 0; i < ks->ncolumns && rc == 0; i++)
			if ((col = cb__pg_rel_need(&r, ks->columns[i], ks->what, NULL, err)) < 0)
				rc = col;
		for (i = 0; i < ks->nkeys && rc == 0; i++)
			if ((col = cb__pg_rel_need(&r, ks->keys[i], ks->what, "key column", err)) <
			    0)
				rc = col;
		cb__pg_rel_free(&r);
		if (rc)
			return rc;
	}
	qkeys = calloc(ks->nkeys, sizeof(*qkeys));
	if (!qkeys)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
	for (i = 0; i < ks->nkeys && !rc; i++)
		rc = cb__rd_quote(&qkeys[i], ks->conn, ks->what, ks->keys[i], err);
	if (!rc)
		rc = build_sql(ks, &first, &next, &hwm, qkeys, err);
	if (!rc)
		rc = cb__rd_check_query(ks->conn, sc, first,
					(int)(ks->nqparams + (ks->unbounded ? 0 : ks->nkeys)),
					ks->what, "the page query", err);
	for (i = 0; i < ks->nkeys; i++)
		free(qkeys[i]);
	free(qkeys);
	free(first);
	free(next);
	free(hwm);
	return rc;
}

/* Make sure a spare page slot exists. */
static int reserve_slot(struct keyset *ks, cb_error *err)
{
	size_t cap;
	struct page *p;

	if (ks->npages < ks->cappages)
		return 0;
	cap = ks->cappages ? ks->cappages * 2 : 2;
	p = realloc(ks->pages, cap * sizeof(*p));
	if (!p)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
	ks->pages = p;
	while (ks->cappages < cap) {
		p = &ks->pages[ks->cappages];
		p->res = NULL;
		p->ntuples = 0;
		p->rows = malloc(ks->page_size * sizeof(*p->rows));
		if (!p->rows)
			return ks->npages < ks->cappages ?
				       0 :
				       cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
		ks->cappages++;
	}
	return 0;
}

/* Release the pages no running chunk can reach: [0, keep_from). */
static void retire(struct keyset *ks)
{
	size_t i, keep = ks->keep_from;
	struct page tmp;

	if (!ks->boundary)
		return;
	if (keep > ks->npages)
		keep = ks->npages;
	for (i = 0; i < keep; i++) {
		PQclear(ks->pages[i].res);
		ks->pages[i].res = NULL;
		ks->pages[i].ntuples = 0;
	}
	/* live pages to the front, spare slots (with their row arrays) after */
	for (i = 0; i < ks->npages - keep; i++) {
		tmp = ks->pages[i];
		ks->pages[i] = ks->pages[keep + i];
		ks->pages[keep + i] = tmp;
	}
	ks->npages -= keep;
	ks->boundary = 0;
	ks->keep_from = 0;
}

static int fetch(struct keyset *ks, cb_tx *tx, cb_error *err)
{
	PGresult *res = NULL;
	const char *stmt;
	struct page *p;
	size_t i;
	int rc, nparams, nt, r;

	/* the last item's page may be released below: keep its key */
	if (ks->last_row) {
		if (save_position(ks, &ks->cur) < 0)
			return cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
		ks->last_row = NULL;
		ks->at = &ks->cur;
	}
	/* pages no item of this chunk points into (the query's keys are copies) */
	retire(ks);
	rc = reserve_slot(ks, err);
	if (rc)
		return rc;
	for (i = 0; i < ks->nqparams; i++)
		ks->params[i] = ks->qparams[i];
	for (i = 0; i < ks->part.nvalues; i++)
		ks->params[ks->nqparams + i] = ks->part.values[i];
	nparams = (int)(ks->nqparams + ks->part.nvalues);
	if (!ks->unbounded) {
		for (i = 0; i < ks->nkeys; i++)
			ks->params[(size_t)nparams + i] = ks->hwm.v[i];
		nparams += (int)ks->nkeys;
	}
	if (ks->at && ks->at->valid) {
		for (i = 0; i < ks->nkeys; i++)
			ks->params[(size_t)nparams + i] = ks->at->v[i];
		stmt = ks->stmt_next;
		nparams += (int)ks->nkeys;
	} else {
		stmt = ks->stmt_first;
	}
	rc = cb_tx_query(tx, &res, stmt, nparams, ks->params, NULL, NULL, err);
	if (rc) {
		PQclear(res);
		return cb_error_prefix(err, "%s: page query", ks->what);
	}
	nt = PQntuples(res);
	if (PQresultStatus(res) != PGRES_TUPLES_OK || nt < 0 || (size_t)nt > ks->page_size) {
		PQclear(res);
		return cb_error_set(err, CB_EDB, "%s: unexpected page query result", ks->what);
	}
	for (r = 0; r < nt; r++)
		for (i = 0; i < ks->nkeys; i++)
			if (PQgetisnull(res, r, ks->keycol[i])) {
				PQclear(res);
				return cb_error_set(err, CB_EINVAL,
						    "%s: key column \"%s\" is NULL in a row; keys "
						    "must be NOT NULL",
						    ks->what, ks->keys[i]);
			}
	p = &ks->pages[ks->npages++];
	p->res = res;
	p->ntuples = nt;
	for (r = 0; r < nt; r++) {
		p->rows[r].res = res;
		p->rows[r].row = r;
	}
	ks->pos = 0;
	ks->dropped = 0;
	ks->done = (size_t)nt < ks->page_size;
	return 0;
}

static int ks_read(void *state, cb_tx *tx, void **item, cb_error *err)
{
	struct keyset *ks = state;
	int rc;

	*item = NULL;
	if (!ks->opened)
		return cb_error_set(err, CB_EINVAL, "%s: read before open", ks->what);
	if (ks->pending) {
		/* a read after update(): that chunk committed */
		if (keybuf_copy(&ks->com, &ks->pend, ks->nkeys) < 0)
			return cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
		ks->pending = 0;
	}
	if (ks->nothing)
		return CB_DONE; /* no row when the step execution started */
	for (;;) {
		if (ks->npages > 0 && !ks->dropped) {
			struct page *p = &ks->pages[ks->npages - 1];

			if (ks->pos < (size_t)p->ntuples) {
				ks->last_row = &p->rows[ks->pos++];
				*item = (void *)ks->last_row;
				return 0;
			}
			if (ks->done)
				return CB_DONE;
		}
		rc = fetch(ks, tx, err);
		if (rc)
			return rc;
	}
}

static void set_boundary(struct keyset *ks, size_t keep_from)
{
	if (!ks->boundary || keep_from > ks->keep_from)
		ks->keep_from = keep_from;
	ks->boundary = 1;
}

static int ks_update(void *state, json_t *out, cb_error *err)
{
	struct keyset *ks = state;
	json_t *arr = NULL;
	size_t i;

	if (!ks->opened)
		return cb_error_set(err, CB_EINVAL, "%s: update before open", ks->what);
	if (!json_is_object(out))
		return cb_error_set(err, CB_EINVAL, "%s: update needs a JSON object", ks->what);
	if (position(ks, 0)) {
		arr = json_array();
		if (!arr)
			return cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
		for (i = 0; i < ks->nkeys; i++) {
			json_t *v = json_string(position(ks, i));

			if (!v) {
				json_decref(arr);
				return cb_error_set(err, CB_EINVAL,
						    "%s: value of key column \"%s\" is not valid "
						    "UTF-8",
						    ks->what, ks->keys[i]);
			}
			if (json_array_append_new(arr, v) < 0) {
				json_decref(arr);
				return cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
			}
		}
		if (json_object_set_new(out, "last_key", arr) < 0)
			return cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
	}
	if (!ks->unbounded) {
		/* the bound commits with the chunk; a restart keeps it */
		arr = ks->nothing ? json_null() : json_array();
		for (i = 0; arr && !ks->nothing && i < ks->nkeys; i++) {
			json_t *v = json_string(ks->hwm.v[i]);

			if (!v || json_array_append_new(arr, v) < 0) {
				json_decref(arr);
				return cb_error_set(err, v ? CB_ENOMEM : CB_EINVAL,
						    "%s: high-water mark of key column \"%s\" %s",
						    ks->what, ks->keys[i],
						    v ? "out of memory" : "is not valid UTF-8");
			}
		}
		if (!arr || json_object_set_new(out, "hwm", arr) < 0)
			return cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
	}
	if (save_position(ks, &ks->pend) < 0)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", ks->what);
	ks->pending = 1;
	/* the chunk ends: pages fully read by now are not needed by the next one */
	if (ks->npages > 0) {
		int cur_used = ks->dropped || ks->pos >= (size_t)ks->pages[ks->npages - 1].ntuples;

		set_boundary(ks, cur_used ? ks->npages : ks->npages - 1);
	}
	return 0;
}

static void ks_rollback(void *state)
{
	struct keyset *ks = state;

	if (!ks || !ks->opened)
		return;
	/* an update() not followed by a read belongs to the chunk rolled back */
	ks->pending = 0;
	ks->last_row = NULL;
	ks->at = ks->com.valid ? &ks->com : NULL;
	ks->done = 0;
	if (ks->npages > 0) {
		ks->dropped = 1;
		set_boundary(ks, ks->npages);
	}
}

static void ks_describe(void *state, const void *item, char *buf, size_t size)
{
	const struct keyset *ks = state;
	const cb_row *r = item;

	if (buf && size)
		buf[0] = '\0';
	if (ks && r)
		cb__rd_describe_keys(buf, size, ks->keys, ks->nkeys, ks->keycol, r->res, r->row);
}

int cb_pg_keyset_reader_new(cb_reader *out, const cb_pg_keyset_options *opts, cb_error *err)
{
	const char *what = "pg keyset reader";
	cb_pg_keyset_options o;
	struct keyset *ks;
	cb__rd_table t;
	int rc;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !opts)
		return cb_error_set(err, CB_EINVAL, "%s: no options", what);
	if (opts->version < 1 || opts->version > CB_PG_KEYSET_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL, "%s: unsupported options version %u", what,
				    opts->version);
	/* Only the members of the caller's version (the rest stay zero: bounded). */
	memset(&o, 0, sizeof(o));
	memcpy(&o, opts,
	       opts->version == 1 ? offsetof(cb_pg_keyset_options, unbounded) : sizeof(o));
	/* Counts of 0 with a list: NULL-terminated lists (item.h, CB_COUNT). */
	o.ncolumns = cb_list_count(o.columns, o.ncolumns);
	o.nkeys = cb_list_count(o.key_columns, o.nkeys);
	o.nquery_params = cb_list_count(o.query_params, o.nquery_params);
	opts = &o;
	t.schema = opts->schema;
	t.table = opts->table;
	t.columns = opts->columns;
	t.ncolumns = opts->ncolumns;
	t.keys = opts->key_columns;
	t.nkeys = opts->nkeys;
	t.params = opts->query_params;
	t.nparams = opts->nquery_params;
	if ((rc = cb__rd_check_table(what, &t, err)) < 0)
		return rc;
	if (opts->query && opts->schema)
		return cb_error_set(
			err, CB_EINVAL,
			"%s on \"%s\": a query takes no schema (the table names the query)", what,
			opts->table);
	if (opts->nquery_params > 0 && (!opts->query || !opts->query_params))
		return cb_error_set(err, CB_EINVAL,
				    "%s on \"%s\": query parameters without a query", what,
				    opts->table);
	if (opts->page_size > INT_MAX / 2)
		return cb_error_set(err, CB_EINVAL, "%s on \"%s\": page size too large", what,
				    opts->table);

	ks = calloc(1, sizeof(*ks));
	if (!ks)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	snprintf(ks->what, sizeof(ks->what), "%s on \"%s%s%s\"", what,
		 opts->schema ? opts->schema : "", opts->schema ? "." : "", opts->table);
	ks->schema = cb__rd_strdup(opts->schema);
	ks->table = cb__rd_strdup(opts->table);
	ks->where = cb__rd_strdup(opts->where);
	if (opts->query) {
		ks->query = cb__rd_strdup(opts->query);
		ks->qparams = cb__rd_strv_dup(opts->query_params, opts->nquery_params);
		ks->nqparams = opts->nquery_params;
		if (!ks->query || (opts->nquery_params && !ks->qparams)) {
			rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
			free(ks->schema);
			free(ks->table);
			free(ks->where);
			free(ks->query);
			cb__rd_strv_free(ks->qparams, ks->qparams ? ks->nqparams : 0);
			free(ks);
			return rc;
		}
	}
	ks->keys = cb__rd_strv_dup(opts->key_columns, opts->nkeys);
	ks->columns = cb__rd_strv_dup(opts->columns, opts->ncolumns);
	if ((opts->schema && !ks->schema) || !ks->table || (opts->where && !ks->where) ||
	    !ks->keys || !ks->columns) {
		cb__rd_strv_free(ks->keys, ks->keys ? opts->nkeys : 0);
		cb__rd_strv_free(ks->columns, ks->columns ? opts->ncolumns : 0);
		ks->keys = ks->columns = NULL;
		ks_free(ks);
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	}
	ks->nkeys = opts->nkeys;
	ks->ncolumns = opts->ncolumns;
	ks->opt_page_size = opts->page_size;
	ks->unbounded = opts->unbounded != 0;

	out->version = CB_READER_VERSION;
	out->state = ks;
	out->open = ks_open;
	out->read = ks_read;
	out->update = ks_update;
	out->describe = ks_describe;
	out->rollback = ks_rollback;
	out->close = ks_close;
	out->free = ks_free;
	out->check = ks_check;
	out->overlap_safe = 1;
	return 0;
}
