/*
 * The PostgreSQL upsert writer (include/cbatch/writers.h): one
 * INSERT ... SELECT * FROM unnest(<array parameters>) ON CONFLICT statement
 * per chunk, queued in the chunk's pipeline.
 */
#include "cbatch/writers.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pg_values.h"

struct upsert {
	/* options (copies) */
	char *schema;
	char *table;
	char **columns;
	size_t ncolumns;
	char **keys;
	size_t nkeys;
	char **update; /* columns set on conflict; none: DO NOTHING */
	size_t nupdate;
	cb_bind_fn bind;
	void *bind_ctx;
	int count_duplicates;  /* add conflicts to the step's duplicate_target_write_count */
	int merge;             /* options version 2: same-key items merged, per-column modes */
	cb_upsert_mode *modes; /* per column (merge) */
	char *stamp;           /* column set to the job execution id, one parameter */
	int stamp_updated;     /* ... and set again on conflict */
	char stamp_value[24];
	char **lossy; /* columns whose assignment may lose something on purpose */
	size_t nlossy;
	char count[24];      /* the chunk's item count, the extra parameter */
	char what[200];      /* names the writer in messages */
	char keys_text[200]; /* the key columns, for messages */
	/* from open */
	int opened;
	const cb_step_context *sc;
	PGconn *conn;
	char stmt[64];
	cb_values values;
	const char **params;
};

static int find(char *const *v, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return (int)i;
	return -1;
}

static void upsert_close(void *state)
{
	struct upsert *u = state;

	if (!u)
		return;
	cb__values_free(&u->values);
	free(u->params);
	u->params = NULL;
	u->opened = 0;
	cb__pg_deallocate(u->conn, u->stmt);
}

static void upsert_free(void *state)
{
	struct upsert *u = state;

	if (!u)
		return;
	upsert_close(u);
	free(u->schema);
	free(u->table);
	cb__strv_free(u->columns, u->ncolumns);
	cb__strv_free(u->keys, u->nkeys);
	cb__strv_free(u->update, u->nupdate);
	free(u->stamp);
	free(u->modes);
	cb__strv_free(u->lossy, u->nlossy);
	free(u);
}

/* Parameters: the column arrays, then the stamp, then the item count. */
static int nparams(const struct upsert *u)
{
	return (int)u->ncolumns + (u->stamp ? 1 : 0) + (u->count_duplicates ? 1 : 0);
}

/*
 * The merge's aggregate of column @p i (quoted @p q) over the chunk's items.
 * A key column is grouped by; where equal keys may differ (@p image 0: a
 * nondeterministic collation's 'abc' and 'ABC', numeric 1.0 and 1.00), the
 * value kept is the chunk's last item's, as for every replaced column,
 * rather than whichever the grouping met first.
 */
static void add_merge_column(struct upsert *u, cb__sql *s, size_t i, const char *q,
			     const unsigned char *image)
{
	if (find(u->keys, u->nkeys, u->columns[i]) >= 0) {
		if (image[i])
			cb__sql_add(s, "_cb_i.%s", q);
		else
			cb__sql_add(s, "(array_agg(_cb_i.%s ORDER BY _cb_ord DESC))[1]", q);
		cb__sql_add(s, " AS %s", q);
		return;
	}
	switch (u->modes[i]) {
	case CB_UPSERT_ADD:
		cb__sql_add(s, "sum(%s)", q);
		break;
	case CB_UPSERT_COUNT:
		cb__sql_add(s, "count(*)");
		break;
	case CB_UPSERT_MAX:
		cb__sql_add(s, "max(%s)", q);
		break;
	case CB_UPSERT_MIN:
		cb__sql_add(s, "min(%s)", q);
		break;
	default: /* the chunk's last item wins */
		cb__sql_add(s, "(array_agg(%s ORDER BY _cb_ord DESC))[1]", q);
	}
	cb__sql_add(s, " AS %s", q);
}

/* The update on conflict of column @p q, by its mode. */
static void add_update(cb__sql *s, cb_upsert_mode mode, const char *q)
{
	switch (mode) {
	case CB_UPSERT_ADD:
		cb__sql_add(s, "%s = coalesce(_cb_t.%s + EXCLUDED.%s, _cb_t.%s, EXCLUDED.%s)", q, q,
			    q, q, q);
		break;
	case CB_UPSERT_COUNT:
		cb__sql_add(s, "%s = coalesce(_cb_t.%s, 0) + EXCLUDED.%s", q, q, q);
		break;
	case CB_UPSERT_MAX:
		cb__sql_add(s, "%s = greatest(_cb_t.%s, EXCLUDED.%s)", q, q, q);
		break;
	case CB_UPSERT_MIN:
		cb__sql_add(s, "%s = least(_cb_t.%s, EXCLUDED.%s)", q, q, q);
		break;
	default:
		cb__sql_add(s, "%s = EXCLUDED.%s", q, q);
	}
}

/* ", "-separated quoted names of @p v[0..n-1], each after @p qual. */
static int add_names(struct upsert *u, cb__sql *s, char *const *v, size_t n, const char *qual,
		     cb_error *err)
{
	char *q = NULL;

	for (size_t i = 0; i < n; i++) {
		int rc = cb_pg_quote_ident(&q, u->conn, v[i], err);

		if (rc)
			return rc;
		cb__sql_add(s, "%s%s%s", i ? ", " : "", qual, q);
		free(q);
	}
	return 0;
}

/* unnest's arguments: each column's array parameter, with the column's
 * collation where it is not its type's (cb__pg_column_types). */
static void add_arrays(struct upsert *u, cb__sql *s, char *const *types, char *const *colls)
{
	for (size_t i = 0; i < u->ncolumns; i++)
		cb__sql_add(s, "%s$%zu::%s[]%s", i ? ", " : "", i + 1, types[i],
			    colls[i] ? colls[i] : "");
}

/*
 * Version 2: the chunk's items merged per key in the statement itself, so
 * that no key reaches ON CONFLICT twice:
 *   SELECT <key>, <aggregate per column> FROM unnest(...) WITH ORDINALITY
 *   GROUP BY <key> ORDER BY <key>
 * The key arrays carry the arbiter index's collation, so that the grouping
 * finds equal the keys that ON CONFLICT finds equal (a nondeterministic
 * collation), not only the bytewise-equal ones; numeric, citext and the
 * like group by their type's own equality.
 * or, when every column is replaced (the last item wins), the cheaper
 *   SELECT DISTINCT ON (<key>) <columns> FROM unnest(...) WITH ORDINALITY
 *   ORDER BY <key>, ordinality DESC
 * In key order: two transactions that upsert the same keys (two runs that
 * overlap) lock the rows in the same order, and so never deadlock.
 */
static int add_merged_source(struct upsert *u, cb__sql *s, char *const *types, char *const *colls,
			     const unsigned char *image, cb_error *err)
{
	char *q = NULL;
	size_t i;
	int rc, replace_only = 1;

	for (i = 0; i < u->ncolumns; i++)
		if (u->modes[i] != CB_UPSERT_REPLACE)
			replace_only = 0;
	if (replace_only) {
		cb__sql_add(s, "(SELECT DISTINCT ON (");
		if ((rc = add_names(u, s, u->keys, u->nkeys, "", err)) != 0)
			return rc;
		cb__sql_add(s, ") ");
		if ((rc = add_names(u, s, u->columns, u->ncolumns, "", err)) != 0)
			return rc;
	} else {
		cb__sql_add(s, "(SELECT ");
		for (i = 0; i < u->ncolumns; i++) {
			rc = cb_pg_quote_ident(&q, u->conn, u->columns[i], err);
			if (rc)
				return rc;
			if (i)
				cb__sql_add(s, ", ");
			add_merge_column(u, s, i, q, image);
			free(q);
		}
	}
	cb__sql_add(s, " FROM unnest(");
	add_arrays(u, s, types, colls);
	cb__sql_add(s, ") WITH ORDINALITY AS _cb_i(");
	if ((rc = add_names(u, s, u->columns, u->ncolumns, "", err)) != 0)
		return rc;
	if (!replace_only) {
		cb__sql_add(s, ", _cb_ord) GROUP BY ");
		if ((rc = add_names(u, s, u->keys, u->nkeys, "_cb_i.", err)) != 0)
			return rc;
	} else {
		cb__sql_add(s, ", _cb_ord)");
	}
	cb__sql_add(s, " ORDER BY ");
	if ((rc = add_names(u, s, u->keys, u->nkeys, replace_only ? "" : "_cb_i.", err)) != 0)
		return rc;
	cb__sql_add(s, replace_only ? ", _cb_ord DESC) AS _cb_u" : ") AS _cb_u");
	return 0;
}

static int build_sql(struct upsert *u, char **out, const char *qualified, char *const *types,
		     char *const *colls, const unsigned char *image, cb_error *err)
{
	cb__sql s;
	char *q = NULL;
	size_t i;
	int rc;

	*out = NULL;
	rc = cb__sql_open(&s, err);
	if (rc)
		return rc;
	if (u->count_duplicates)
		cb__sql_add(&s, "WITH _cb_w AS (");
	cb__sql_add(&s, "INSERT INTO %s%s (", qualified, u->merge ? " AS _cb_t" : "");
	for (i = 0; i < u->ncolumns; i++) {
		rc = cb_pg_quote_ident(&q, u->conn, u->columns[i], err);
		if (rc)
			goto fail;
		cb__sql_add(&s, "%s%s", i ? ", " : "", q);
		free(q);
	}
	if (u->stamp) {
		rc = cb_pg_quote_ident(&q, u->conn, u->stamp, err);
		if (rc)
			goto fail;
		cb__sql_add(&s, ", %s) SELECT _cb_u.*, $%zu::bigint FROM ", q, u->ncolumns + 1);
		free(q);
	} else {
		cb__sql_add(&s, ") SELECT * FROM ");
	}
	if (u->merge) {
		rc = add_merged_source(u, &s, types, colls, image, err);
		if (rc)
			goto fail;
		cb__sql_add(&s, " ON CONFLICT (");
	} else {
		cb__sql_add(&s, "unnest(");
		add_arrays(u, &s, types, colls);
		cb__sql_add(&s, u->stamp ? ") AS _cb_u ON CONFLICT (" : ") ON CONFLICT (");
	}
	for (i = 0; i < u->nkeys; i++) {
		rc = cb_pg_quote_ident(&q, u->conn, u->keys[i], err);
		if (rc)
			goto fail;
		cb__sql_add(&s, "%s%s", i ? ", " : "", q);
		free(q);
	}
	if (u->nupdate == 0) {
		cb__sql_add(&s, ") DO NOTHING");
	} else {
		cb__sql_add(&s, ") DO UPDATE SET ");
		for (i = 0; i < u->nupdate; i++) {
			rc = cb_pg_quote_ident(&q, u->conn, u->update[i], err);
			if (rc)
				goto fail;
			if (i)
				cb__sql_add(&s, ", ");
			add_update(&s,
				   u->merge ?
					   u->modes[find(u->columns, u->ncolumns, u->update[i])] :
					   CB_UPSERT_REPLACE,
				   q);
			free(q);
		}
		if (u->stamp && u->stamp_updated) {
			rc = cb_pg_quote_ident(&q, u->conn, u->stamp, err);
			if (rc)
				goto fail;
			cb__sql_add(&s, ", %s = EXCLUDED.%s", q, q);
			free(q);
		}
	}
	if (u->count_duplicates)
		/* Rows that existed already (updated, or left alone by DO NOTHING)
		 * are duplicates; the count rides in a transaction-local setting that
		 * the chunk checkpoint adds to the step, so it commits with the chunk. */
		cb__sql_add(
			&s,
			" RETURNING (xmax = 0) AS _cb_ins) SELECT " CB_TX_DUPLICATES_ADD(
				"$%zu::bigint - (SELECT count(*) FILTER (WHERE _cb_ins) FROM _cb_w)"),
			u->ncolumns + (u->stamp ? 2 : 1));
	return cb__sql_done(&s, out, err);
fail:
	cb__sql_done(&s, out, NULL);
	free(*out);
	*out = NULL;
	return rc;
}

/*
 * A merge groups the chunk's keys as ON CONFLICT will compare them: by the
 * arbiter index's collation (into @p colls, per column), and knowing which
 * keys' equal values may differ (@p image 0 for those, per column). A key
 * that no GROUP BY can compare as the arbiter does is refused here, before
 * anything is written.
 */
static int key_equality(struct upsert *u, char **colls, unsigned char *image, const char *qualified,
			cb_error *err)
{
	char **kcolls = calloc(u->nkeys, sizeof(*kcolls));
	int *kimage = calloc(u->nkeys, sizeof(*kimage));
	size_t k;
	int rc;

	if (!kcolls || !kimage) {
		free(kcolls);
		free(kimage);
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", u->what);
	}
	for (k = 0; k < u->nkeys; k++) {
		int c = find(u->columns, u->ncolumns, u->keys[k]);

		kcolls[k] = colls[c];
		colls[c] = NULL;
	}
	rc = cb__pg_key_equality(kcolls, kimage, u->conn, qualified, (const char *const *)u->keys,
				 u->nkeys, u->what, u->table, err);
	for (k = 0; k < u->nkeys; k++) {
		int c = find(u->columns, u->ncolumns, u->keys[k]);

		colls[c] = kcolls[k];
		image[c] = (unsigned char)(kimage[k] != 0);
	}
	free(kcolls);
	free(kimage);
	return rc;
}

static int upsert_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	struct upsert *u = state;
	char *qualified = NULL, *sql = NULL;
	char **types = NULL, **colls = NULL;
	char *delims = NULL;
	unsigned char *image = NULL;
	size_t i;
	int rc;

	(void)saved;
	upsert_close(u);
	if (!sc || !cb_step_context_conn(sc))
		return cb_error_set(err, CB_EINVAL, "%s: no step context or connection", u->what);
	u->sc = sc;
	u->conn = cb_step_context_conn(sc);
	types = calloc(u->ncolumns, sizeof(*types));
	colls = calloc(u->ncolumns, sizeof(*colls));
	image = calloc(u->ncolumns, 1);
	delims = malloc(u->ncolumns);
	u->params = calloc(u->ncolumns + 2, sizeof(*u->params));
	if (!types || !colls || !image || !delims || !u->params) {
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", u->what);
		goto done;
	}
	rc = cb__pg_qualified_name(&qualified, u->conn, u->schema, u->table, err);
	if (rc)
		goto done;
	rc = cb__pg_column_types(types, delims, colls, u->conn, qualified,
				 (const char *const *)u->columns, u->ncolumns, u->what, u->table,
				 err);
	if (rc == 0 && u->merge)
		rc = key_equality(u, colls, image, qualified, err);
	if (rc)
		goto done;
	rc = build_sql(u, &sql, qualified, types, colls, image, err);
	if (rc)
		goto done;
	rc = cb_pg_prepare(u->conn, u->stmt, "ups", sql, nparams(u), err);
	if (rc) {
		cb_error_prefix(err, "%s: preparing the upsert", u->what);
		goto done;
	}
	rc = cb__values_init(&u->values, u->ncolumns, (const char *const *)u->columns, delims, err);
	if (rc)
		goto done;
	u->opened = 1;
done:
	for (i = 0; types && i < u->ncolumns; i++)
		free(types[i]);
	for (i = 0; colls && i < u->ncolumns; i++)
		free(colls[i]);
	free(types);
	free(colls);
	free(image);
	free(delims);
	free(qualified);
	free(sql);
	if (rc)
		upsert_close(u);
	return rc;
}

static int upsert_result(void *ctx, const PGresult *res, cb_error *err)
{
	struct upsert *u = ctx;

	return cb__pg_result_check(res, u->conn, "upsert", u->what, err);
}

/* The column of parameter $n, for messages. */
static const char *param_column(void *ctx, int n)
{
	struct upsert *u = ctx;

	if (n >= 1 && (size_t)n <= u->ncolumns)
		return u->columns[n - 1];
	if (u->stamp && (size_t)n == u->ncolumns + 1)
		return u->stamp;
	return NULL;
}

/*
 * The statement failed: say so naming the table, the key columns and, where
 * known, the column (never the prepared statement's name). An overflow the
 * server does not place is in an accumulated column.
 */
static int upsert_error(void *ctx, PGconn *conn, const PGresult *res, cb_error *err)
{
	struct upsert *u = ctx;
	const char *state = res ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
	const char *fallback = NULL, *extra = NULL;
	char more[CB_ERROR_MESSAGE_MAX];
	size_t i, naccum = 0, len = 0;

	more[0] = '\0';
	if (state && strcmp(state, "22003") == 0 && u->merge && cb__error_param(res) == 0) {
		for (i = 0; i < u->ncolumns; i++)
			if (u->modes[i] == CB_UPSERT_ADD || u->modes[i] == CB_UPSERT_COUNT) {
				fallback = u->columns[i];
				if (len < sizeof(more))
					len += (size_t)snprintf(more + len, sizeof(more) - len,
								"%s\"%s\"", naccum ? ", " : "",
								u->columns[i]);
				naccum++;
			}
		if (naccum > 1) {
			char tmp[CB_ERROR_MESSAGE_MAX];

			snprintf(tmp, sizeof(tmp), "one of the accumulated columns %.*s",
				 (int)sizeof(more) - 40, more);
			snprintf(more, sizeof(more), "%.*s", (int)sizeof(more) - 1, tmp);
			fallback = NULL;
			extra = more;
		}
	} else if (state && strcmp(state, "21000") == 0) {
		extra = u->merge ? "two of the chunk's merged keys met one row (the key columns' "
				   "equality differs from the unique index's)" :
				   "two items of the chunk have the same key (options version 1 "
				   "takes one item per key and chunk; version 2 merges them)";
	}
	return cb__writer_error(err, conn, res, u->what, u->keys_text, param_column, u, fallback,
				extra);
}

static int upsert_write(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err)
{
	struct upsert *u = state;
	size_t i;
	int rc;

	if (!u->opened)
		return cb_error_set(err, CB_EINVAL, "%s: write before open", u->what);
	if (n == 0)
		return 0;
	rc = cb__values_bind_chunk(&u->values, u->bind, u->bind_ctx, u->sc, items, n, u->what, err);
	if (rc)
		return rc;
	rc = cb__values_finish(&u->values, u->params, err);
	if (rc)
		return rc;
	snprintf(u->count, sizeof(u->count), "%zu", n);
	i = u->ncolumns;
	if (u->stamp) {
		snprintf(u->stamp_value, sizeof(u->stamp_value), "%lld",
			 cb_step_context_job_execution_id(u->sc));
		u->params[i++] = u->stamp_value;
	}
	u->params[i] = u->count;
	/* a failure names the table and key (upsert_error), not the statement */
	return cb__tx_send_described(tx, u->stmt, u->what, nparams(u), u->params, upsert_result,
				     upsert_error, u, err);
}

/* The bytes of the caller's options: only what its version has. */
static size_t options_size(unsigned int version)
{
	return version >= 3 ? sizeof(cb_pg_upsert_options) :
	       version == 2 ? offsetof(cb_pg_upsert_options, lossy_columns) :
			      offsetof(cb_pg_upsert_options, modes);
}

/*
 * The mode of column @p col against its type: ADD sums and adds (numbers,
 * intervals), COUNT adds a count (numbers), MAX and MIN need an order.
 */
static int check_mode(struct upsert *u, const cb__pg_rel *r, size_t i, int col, cb_error *err)
{
	static const char *const names[] = { "CB_UPSERT_REPLACE", "CB_UPSERT_ADD",
					     "CB_UPSERT_COUNT", "CB_UPSERT_MAX", "CB_UPSERT_MIN" };
	cb_upsert_mode m = u->modes[i];
	char cat = cb__pg_rel_category(r, col);
	const char *base = cb__pg_rel_base_type(r, col);
	const char *need = NULL;

	if (m == CB_UPSERT_ADD && cat != 'N' && strcmp(base, "interval") != 0)
		need = "a number or an interval (it is summed and added)";
	else if (m == CB_UPSERT_COUNT && cat != 'N')
		need = "a number (it counts items)";
	else if ((m == CB_UPSERT_MAX || m == CB_UPSERT_MIN) && !cb__pg_rel_ordered(r, col))
		need = "a type with an order (greatest/least)";
	if (!need)
		return 0;
	return cb_error_set(err, CB_EINVAL,
			    "%s: column \"%s\" has the type %s, but its mode %s needs %s", u->what,
			    u->columns[i], cb__pg_rel_type(r, col), names[m], need);
}

/*
 * Column @p i bound by name takes the reader's value of type @p src: refused
 * when PostgreSQL would not assign it (a text into an integer column: a
 * value that is no number fails at chunk time), or would lose something
 * silently (a timestamptz into a date). lossy_columns lets either through.
 */
static int check_assignment(struct upsert *u, const cb__pg_rel *r, size_t i, int col,
			    const char *src, cb_error *err)
{
	char why[CB_ERROR_MESSAGE_MAX / 2];
	const char *target = cb__pg_rel_base_type(r, col);
	int ok = 1, rc;

	if (cb__pg_lossy(why, sizeof(why), src, target))
		return cb_error_set(err, CB_EINVAL,
				    "%s: column \"%s\": %s; list it in lossy_columns (options "
				    "version 3) if that is meant",
				    u->what, u->columns[i], why);
	if ((rc = cb__pg_assignable(&ok, u->conn, src, target, err)) < 0)
		return cb_error_prefix(err, "%s", u->what);
	if (!ok)
		return cb_error_set(
			err, CB_EINVAL,
			"%s: column \"%s\": the reader gives %s, which PostgreSQL does "
			"not assign to %s (a value that is not one fails at chunk time); "
			"cast it in the reader's query or bind it, or list the column in "
			"lossy_columns (options version 3) if that is meant",
			u->what, u->columns[i], src, cb__pg_rel_type(r, col));
	return 0;
}

/* Prepare the statement unnamed: whatever else the server refuses in it. */
static int check_statement(struct upsert *u, const char *qualified, cb_error *err)
{
	char **types = calloc(u->ncolumns, sizeof(*types));
	char **colls = calloc(u->ncolumns, sizeof(*colls));
	unsigned char *image = calloc(u->ncolumns, 1);
	char *delims = malloc(u->ncolumns);
	char *sql = NULL;
	PGresult *res = NULL;
	size_t i;
	int rc;

	if (!types || !colls || !image || !delims) {
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", u->what);
		goto done;
	}
	rc = cb__pg_column_types(types, delims, colls, u->conn, qualified,
				 (const char *const *)u->columns, u->ncolumns, u->what, u->table,
				 err);
	if (rc == 0 && u->merge)
		rc = key_equality(u, colls, image, qualified, err);
	if (rc == 0)
		rc = build_sql(u, &sql, qualified, types, colls, image, err);
	if (rc)
		goto done;
	res = PQprepare(u->conn, "", sql, nparams(u), NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		rc = cb_pg_error(err, u->conn, res, "the upsert statement");
		cb_error_prefix(err, "%s", u->what);
		/* SQLSTATE class 42: the statement does not fit the table */
		if (strncmp(err->sqlstate, "42", 2) == 0)
			err->code = rc = CB_EINVAL;
	}
done:
	for (i = 0; types && i < u->ncolumns; i++)
		free(types[i]);
	for (i = 0; colls && i < u->ncolumns; i++)
		free(colls[i]);
	PQclear(res);
	free(types);
	free(colls);
	free(image);
	free(delims);
	free(sql);
	return rc;
}

/*
 * The preflight (item.h `check`): the table, its columns, the conflict key's
 * unique index, the modes and the assignments against the catalog, before a
 * launch records anything. Nothing is prepared by name: `open` does that.
 */
static int upsert_check(void *state, const cb_step_context *sc, cb_error *err)
{
	struct upsert *u = state;
	cb__pg_rel r;
	char *qualified = NULL;
	int rc, col, found = 0;
	size_t i;

	if (!sc || !cb_step_context_conn(sc))
		return cb_error_set(err, CB_EINVAL, "%s: no step context or connection", u->what);
	u->conn = cb_step_context_conn(sc);
	rc = cb__pg_rel_load(&r, u->conn, u->schema, u->table, u->what, err);
	if (rc)
		return rc;
	for (i = 0; i < u->ncolumns && rc == 0; i++) {
		const char *src;

		if ((col = cb__pg_rel_need(&r, u->columns[i], u->what, NULL, err)) < 0) {
			rc = col;
			break;
		}
		if (u->merge)
			rc = check_mode(u, &r, i, col, err);
		/* By name, the value is the reader's column: its type is known. */
		src = u->bind ? NULL : cb_step_context_source_type(sc, u->columns[i]);
		if (rc == 0 && src && find(u->lossy, u->nlossy, u->columns[i]) < 0)
			rc = check_assignment(u, &r, i, col, src, err);
	}
	if (rc == 0 && u->stamp &&
	    (col = cb__pg_rel_need(&r, u->stamp, u->what, "stamp column", err)) < 0)
		rc = col;
	if (rc == 0)
		rc = cb__pg_qualified_name(&qualified, u->conn, u->schema, u->table, err);
	if (rc == 0)
		rc = cb__pg_has_arbiter(&found, u->conn, qualified, (const char *const *)u->keys,
					u->nkeys, err);
	if (rc == 0 && !found)
		rc = cb_error_set(err, CB_EINVAL,
				  "%s: ON CONFLICT (%s) needs a unique index or constraint on "
				  "exactly these columns, and table \"%s\" has none (e.g. ALTER "
				  "TABLE ... ADD UNIQUE (%s))",
				  u->what, u->keys_text, r.name, u->keys_text);
	if (rc == 0)
		rc = check_statement(u, qualified, err);
	free(qualified);
	cb__pg_rel_free(&r);
	return rc;
}

int cb_pg_upsert_writer_new(cb_writer *out, const cb_pg_upsert_options *opts, cb_error *err)
{
	struct upsert *u = NULL;
	const char *what = "pg upsert writer";
	cb_pg_upsert_options o;
	size_t i, k;
	int rc;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !opts)
		return cb_error_set(err, CB_EINVAL, "%s: no options", what);
	/* Copy only what the caller's version has (a version-1 struct ends
	 * before modes); NULL-terminated lists (not update_columns: an empty
	 * count there is DO NOTHING). */
	memset(&o, 0, sizeof(o));
	memcpy(&o, opts, options_size(opts->version));
	o.ncolumns = cb_list_count(o.columns, o.ncolumns);
	o.nlossy = cb_list_count(o.lossy_columns, o.nlossy);
	o.nkeys = cb_list_count(o.key_columns, o.nkeys);
	opts = &o;
	if (opts->version < 1 || opts->version > CB_PG_UPSERT_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL, "%s: unsupported options version %u", what,
				    opts->version);
	if (!opts->table || !opts->table[0])
		return cb_error_set(err, CB_EINVAL, "%s: no table", what);
	if (opts->schema && !opts->schema[0])
		return cb_error_set(err, CB_EINVAL, "%s: empty schema name", what);
	if (!opts->columns || opts->ncolumns == 0)
		return cb_error_set(err, CB_EINVAL, "%s on \"%s\": no columns", what, opts->table);
	if (!opts->key_columns || opts->nkeys == 0)
		return cb_error_set(err, CB_EINVAL, "%s on \"%s\": no key columns", what,
				    opts->table);
	if (opts->nupdate > 0 && !opts->update_columns)
		return cb_error_set(err, CB_EINVAL, "%s on \"%s\": nupdate without update_columns",
				    what, opts->table);
	if (opts->ncolumns > 1000)
		return cb_error_set(err, CB_EINVAL, "%s on \"%s\": too many columns", what,
				    opts->table);

	u = calloc(1, sizeof(*u));
	if (!u)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	snprintf(u->what, sizeof(u->what), "%s on \"%s%s%s\"", what,
		 opts->schema ? opts->schema : "", opts->schema ? "." : "", opts->table);
	rc = cb__pg_check_names(opts->columns, opts->ncolumns, u->what, NULL, "column", err);
	if (!rc)
		rc = cb__pg_check_names(opts->key_columns, opts->nkeys, u->what, NULL, "key column",
					err);
	if (!rc && opts->update_columns)
		rc = cb__pg_check_names(opts->update_columns, opts->nupdate, u->what, NULL,
					"update column", err);
	if (rc)
		goto fail;

	u->schema = opts->schema ? strdup(opts->schema) : NULL;
	u->table = strdup(opts->table);
	if ((opts->schema && !u->schema) || !u->table ||
	    cb__strv_dup(&u->columns, opts->columns, opts->ncolumns) < 0)
		goto nomem;
	u->ncolumns = opts->ncolumns;
	if (cb__strv_dup(&u->keys, opts->key_columns, opts->nkeys) < 0)
		goto nomem;
	u->nkeys = opts->nkeys;
	for (i = 0, k = 0; i < u->nkeys && k < sizeof(u->keys_text); i++)
		k += (size_t)snprintf(u->keys_text + k, sizeof(u->keys_text) - k, "%s%s",
				      i ? ", " : "", u->keys[i]);
	for (i = 0; i < u->nkeys; i++)
		if (find(u->columns, u->ncolumns, u->keys[i]) < 0) {
			rc = cb_error_set(err, CB_EINVAL,
					  "%s: key column \"%s\" is not among the columns", u->what,
					  u->keys[i]);
			goto fail;
		}

	if (opts->update_columns) {
		/* listed columns; none listed: DO NOTHING */
		if (cb__strv_dup(&u->update, opts->update_columns, opts->nupdate) < 0)
			goto nomem;
		u->nupdate = opts->nupdate;
		for (i = 0; i < u->nupdate; i++)
			if (find(u->columns, u->ncolumns, u->update[i]) < 0) {
				rc = cb_error_set(
					err, CB_EINVAL,
					"%s: update column \"%s\" is not among the columns",
					u->what, u->update[i]);
				goto fail;
			}
	} else {
		/* every non-key column; a table of keys only: DO NOTHING */
		const char **v = calloc(u->ncolumns, sizeof(*v));

		if (!v)
			goto nomem;
		for (i = 0, k = 0; i < u->ncolumns; i++)
			if (find(u->keys, u->nkeys, u->columns[i]) < 0)
				v[k++] = u->columns[i];
		rc = cb__strv_dup(&u->update, v, k);
		free(v);
		if (rc < 0)
			goto nomem;
		u->nupdate = k;
	}
	if (opts->version >= 2) {
		u->merge = 1;
		u->modes = calloc(u->ncolumns, sizeof(*u->modes));
		if (!u->modes)
			goto nomem;
		for (i = 0; opts->modes && i < u->ncolumns; i++) {
			cb_upsert_mode m = opts->modes[i];

			if ((int)m < CB_UPSERT_REPLACE || m > CB_UPSERT_MIN) {
				rc = cb_error_set(err, CB_EINVAL,
						  "%s: column \"%s\" has mode %d, not a "
						  "cb_upsert_mode",
						  u->what, u->columns[i], (int)m);
				goto fail;
			}
			if (m != CB_UPSERT_REPLACE && find(u->keys, u->nkeys, u->columns[i]) >= 0) {
				rc = cb_error_set(err, CB_EINVAL,
						  "%s: key column \"%s\" must have the mode "
						  "CB_UPSERT_REPLACE",
						  u->what, u->columns[i]);
				goto fail;
			}
			u->modes[i] = m;
		}
	}
	if (opts->nlossy && !opts->lossy_columns) {
		rc = cb_error_set(err, CB_EINVAL, "%s: nlossy without lossy_columns", u->what);
		goto fail;
	}
	for (i = 0; i < opts->nlossy; i++)
		if (!opts->lossy_columns[i] ||
		    find(u->columns, u->ncolumns, opts->lossy_columns[i]) < 0) {
			rc = cb_error_set(
				err, CB_EINVAL, "%s: lossy column \"%s\" is not among the columns",
				u->what,
				opts->lossy_columns[i] ? opts->lossy_columns[i] : "(null)");
			goto fail;
		}
	if (opts->nlossy && cb__strv_dup(&u->lossy, opts->lossy_columns, opts->nlossy) < 0)
		goto nomem;
	u->nlossy = opts->nlossy;
	u->bind = opts->bind;
	u->bind_ctx = opts->bind_ctx;
	u->count_duplicates = opts->count_duplicates;
	if (opts->stamp_column) {
		if (!opts->stamp_column[0] ||
		    find(u->columns, u->ncolumns, opts->stamp_column) >= 0) {
			rc = cb_error_set(err, CB_EINVAL,
					  "%s: stamp column \"%s\" must be a further "
					  "column, not one of the columns",
					  u->what, opts->stamp_column);
			goto fail;
		}
		u->stamp = strdup(opts->stamp_column);
		if (!u->stamp)
			goto nomem;
		/* Set again on conflict when the update list is the default one. */
		u->stamp_updated = opts->update_columns == NULL;
	}

	out->version = CB_WRITER_VERSION;
	out->state = u;
	out->open = upsert_open;
	out->write = upsert_write;
	out->update = NULL;
	out->close = upsert_close;
	out->free = upsert_free;
	out->check = upsert_check;
	out->overlap_safe = 1;
	return 0;
nomem:
	rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", u->what);
fail:
	upsert_free(u);
	return rc;
}

int cb_pg_insert_if_absent_writer_new(cb_writer *out, const cb_pg_upsert_options *opts,
				      cb_error *err)
{
	static const char *const none[1] = { NULL };
	cb_pg_upsert_options o;

	if (!opts || opts->version < 1 || opts->version > CB_PG_UPSERT_OPTIONS_VERSION)
		return cb_pg_upsert_writer_new(out, opts, err);
	memset(&o, 0, sizeof(o));
	memcpy(&o, opts, options_size(opts->version));
	o.update_columns = none; /* listed, but none: DO NOTHING */
	o.nupdate = 0;
	o.count_duplicates = 1;
	return cb_pg_upsert_writer_new(out, &o, err);
}
