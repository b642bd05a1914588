/*
 * The read-only lists: one handler for every list route. A list differs
 * from another only in what its route row says (its query, its call, its
 * rows' member and cursor), so that the checks, the borrowed connection and
 * the error replies are written once and cannot drift apart.
 */
#include "console.h"

#include <string.h>

static int index_of(const cb__qargs *a, const char *key)
{
	for (int i = 0; a->params && a->params[i].key; i++)
		if (strcmp(a->params[i].key, key) == 0)
			return i;
	return -1;
}

long long cb__qargs_int(const cb__qargs *a, const char *key)
{
	int i = index_of(a, key);

	return i < 0 ? 0 : a->num[i];
}

const char *cb__qargs_text(const cb__qargs *a, const char *key)
{
	int i = index_of(a, key);

	return i < 0 ? NULL : a->text[i];
}

/* The query of @p l checked into @p a, in the row's order; else -1 having
 * replied 400. */
static int check_query(cb__request *r, const cb__list *l, cb__qargs *a)
{
	const char *keys[CB__QPARAMS_MAX + 1] = { NULL };
	size_t n = 0;

	memset(a, 0, sizeof(*a));
	a->params = l->query;
	for (; l->query && l->query[n].key && n < CB__QPARAMS_MAX; n++)
		keys[n] = l->query[n].key;
	if (cb__query_only(r, keys) < 0 || (l->path && l->path(r) < 0))
		return -1;
	for (size_t i = 0; i < n; i++) {
		const cb__qparam *p = &l->query[i];
		int rc;

		if (p->kind == CB__Q_INT)
			rc = cb__query_int(r, p->key, p->min, p->max, p->dflt, &a->num[i]);
		else if (p->kind == CB__Q_TIME)
			rc = cb__query_time(r, p->key, &a->text[i]);
		else
			rc = cb__query_text(r, p->key, (size_t)p->max, &a->text[i]);
		if (rc < 0)
			return -1;
	}
	return l->check ? l->check(r, a) : 0;
}

/* A full page continues below its last row's cursor; a short one is the last. */
static json_t *next_page(const cb__list *l, const cb__qargs *a, json_t *rows)
{
	size_t n = json_array_size(rows);

	if (n != (size_t)cb__qargs_int(a, "limit"))
		return json_null();
	return json_incref(json_object_get(json_array_get(rows, n - 1), l->cursor));
}

void cb__list_serve(cb__request *r, const cb__list *l)
{
	cb_error err = CB_ERROR_INIT;
	cb__qargs a;
	cb__page page = { NULL, NULL };
	PGconn *conn;
	json_t *doc;
	int rc;

	if (check_query(r, l, &a) < 0)
		return;
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	rc = l->fetch(&page, conn, r, &a, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0) {
		json_decref(page.rows);
		json_decref(page.next);
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	if (l->cursor)
		page.next = next_page(l, &a, page.rows);
	if (l->doc)
		doc = l->doc(r, &a, page.rows, page.next);
	else if (l->next_key)
		doc = json_pack("{s:o,s:o}", l->rows_key, page.rows, l->next_key, page.next);
	else
		doc = json_pack("{s:o}", l->rows_key, page.rows);
	cb__reply_json(r, MHD_HTTP_OK, doc);
}
