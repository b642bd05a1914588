/*
 * The PostgreSQL status writer (include/cbatch/writers.h): marks the chunk's
 * source rows with one UPDATE per chunk, the keys travelling as array
 * parameters, queued in the chunk's pipeline.
 */
#include "cbatch/writers.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pg_values.h"

struct status {
	/* options (copies) */
	char *schema;
	char *table;
	char **keys;
	size_t nkeys;
	char *set_column;
	char *set_value;     /* NULL: SQL NULL */
	char *expect_column; /* conditional transition: only rows where it equals expect_value */
	char *expect_value;
	int count_unchanged; /* rows that did not transition count as duplicate writes */
	char count[24];
	/* strict transitions (since options version 3) */
	int strict;      /* the statement raises when it changes fewer rows than keys */
	int on_conflict; /* CB_TRANSITION_REREAD or _FAIL */
	unsigned int max_rereads;
	unsigned int rereads; /* chunks rolled back in a row since the last commit */
	int sent;             /* a statement went out since the last commit or rollback */
	char label[160];      /* the table, for the conflict message (a parameter) */
	cb_bind_fn bind;
	void *bind_ctx;
	/* filtered items (since options version 2) */
	int mark_filtered;
	char *filtered_value; /* NULL: set_value */
	cb_bind_fn filtered_bind;
	void *filtered_bind_ctx;
	char what[200];
	char keys_text[200]; /* the key columns, for messages */
	/* from open */
	int opened;
	const cb_step_context *sc;
	PGconn *conn;
	char stmt[64];
	cb_values values;
	const char **params; /* [0] the value, [1..nkeys] the key arrays */
};

static void status_close(void *state)
{
	struct status *s = state;

	if (!s)
		return;
	cb__values_free(&s->values);
	free(s->params);
	s->params = NULL;
	s->opened = 0;
	cb__pg_deallocate(s->conn, s->stmt);
}

static void status_free(void *state)
{
	struct status *s = state;

	if (!s)
		return;
	status_close(s);
	free(s->schema);
	free(s->table);
	cb__strv_free(s->keys, s->nkeys);
	free(s->set_column);
	free(s->set_value);
	free(s->expect_column);
	free(s->expect_value);
	free(s->filtered_value);
	free(s);
}

/* Parameters of the statement: value, keys, [expected value], [count],
 * [conflict mode, table label]. */
static size_t nparams(const struct status *s)
{
	return s->nkeys + 1 + (s->expect_column && s->expect_value ? 1 : 0) +
	       (s->count_unchanged && !s->strict ? 1 : 0) + (s->strict ? 2 : 0);
}

/*
 * A strict transition wraps the UPDATE: its keys come back, and when fewer
 * rows changed than the chunk has distinct keys, batch_transition_conflict
 * raises inside the transaction (the pipeline's COMMIT is then refused),
 * naming up to 10 keys that did not transition.
 */
static void add_strict_check(struct status *s, cb__sql *b, char *const *q, char *const *types,
			     char *const *colls, size_t next)
{
	size_t i;

	cb__sql_add(b, " RETURNING ");
	for (i = 0; i < s->nkeys; i++)
		cb__sql_add(b, "%s%s%s", i ? ", " : "", s->nkeys == 1 ? "" : "_cb_t.", q[i]);
	cb__sql_add(b, "), _cb_in AS (SELECT DISTINCT * FROM unnest(");
	for (i = 0; i < s->nkeys; i++)
		cb__sql_add(b, "%s$%zu::%s[]%s", i ? ", " : "", i + 2, types[i],
			    colls[i] ? colls[i] : "");
	cb__sql_add(b, ") AS _cb_v(");
	for (i = 0; i < s->nkeys; i++)
		cb__sql_add(b, "%s%s", i ? ", " : "", q[i]);
	/* The distinct keys are counted only when another count than the
	 * array's came back: as many changed rows as keys means every key
	 * transitioned, and the hash of the keys is not needed (about a tenth
	 * of the statement in EXPLAIN ANALYZE at 1,000 keys; within the noise of
	 * a whole run). InitPlans run when first read, and AND reads the second
	 * count only when the first comparison holds. */
	cb__sql_add(b,
		    ")) SELECT CASE WHEN (SELECT count(*) FROM _cb_u) <> cardinality($2::%s[]) AND "
		    "(SELECT count(*) FROM _cb_u) <> "
		    "(SELECT count(*) FROM _cb_in) THEN batch_transition_conflict($%zu, $%zu, ",
		    types[0], next, next + 1);
	cb__sql_add(b, "(SELECT count(*) FROM _cb_in), (SELECT count(*) FROM _cb_u), ARRAY("
		       "SELECT ");
	if (s->nkeys == 1)
		cb__sql_add(b, "_cb_in.%s::text", q[0]);
	else
		cb__sql_add(b, "row(_cb_in.*)::text");
	cb__sql_add(b, " FROM _cb_in WHERE NOT EXISTS (SELECT 1 FROM _cb_u WHERE (");
	for (i = 0; i < s->nkeys; i++)
		cb__sql_add(b, "%s_cb_u.%s", i ? ", " : "", q[i]);
	cb__sql_add(b, ") = (");
	for (i = 0; i < s->nkeys; i++)
		cb__sql_add(b, "%s_cb_in.%s", i ? ", " : "", q[i]);
	cb__sql_add(b, ")) ORDER BY 1 LIMIT 10)) END");
}

/* types[0..nkeys-1]: the keys' types, types[nkeys]: the set column's,
 * types[nkeys + 1]: the expected column's (conditional transitions).
 * colls[0..nkeys-1]: the keys' collation clauses (cb__pg_column_types): the
 * key arrays compare as the key columns do, so that the distinct keys that
 * a strict transition counts are the rows the UPDATE can find. */
static int build_sql(struct status *s, char **out, const char *qualified, char *const *types,
		     char *const *colls, cb_error *err)
{
	cb__sql b;
	char **q;
	char *qset = NULL, *qexp = NULL;
	size_t i, next = s->nkeys + 2;
	int rc;

	*out = NULL;
	q = calloc(s->nkeys, sizeof(*q));
	if (!q)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", s->what);
	for (i = 0; i < s->nkeys; i++) {
		rc = cb_pg_quote_ident(&q[i], s->conn, s->keys[i], err);
		if (rc)
			goto done;
	}
	rc = cb_pg_quote_ident(&qset, s->conn, s->set_column, err);
	if (rc == 0 && s->expect_column)
		rc = cb_pg_quote_ident(&qexp, s->conn, s->expect_column, err);
	if (rc)
		goto done;
	rc = cb__sql_open(&b, err);
	if (rc)
		goto done;
	if (s->count_unchanged || s->strict)
		cb__sql_add(&b, "WITH _cb_u AS (");
	if (s->nkeys == 1) {
		cb__sql_add(&b, "UPDATE %s SET %s = $1::%s WHERE %s = ANY($2::%s[]%s)", qualified,
			    qset, types[s->nkeys], q[0], types[0], colls[0] ? colls[0] : "");
	} else {
		cb__sql_add(&b, "UPDATE %s AS _cb_t SET %s = $1::%s FROM unnest(", qualified, qset,
			    types[s->nkeys]);
		for (i = 0; i < s->nkeys; i++)
			cb__sql_add(&b, "%s$%zu::%s[]%s", i ? ", " : "", i + 2, types[i],
				    colls[i] ? colls[i] : "");
		cb__sql_add(&b, ") AS _cb_v(");
		for (i = 0; i < s->nkeys; i++)
			cb__sql_add(&b, "%s%s", i ? ", " : "", q[i]);
		cb__sql_add(&b, ") WHERE (");
		for (i = 0; i < s->nkeys; i++)
			cb__sql_add(&b, "%s_cb_t.%s", i ? ", " : "", q[i]);
		cb__sql_add(&b, ") = (");
		for (i = 0; i < s->nkeys; i++)
			cb__sql_add(&b, "%s_cb_v.%s", i ? ", " : "", q[i]);
		cb__sql_add(&b, ")");
	}
	if (s->expect_column) {
		/* Only rows still in the expected state transition: idempotent. */
		if (s->expect_value)
			cb__sql_add(&b, " AND %s%s = $%zu::%s", s->nkeys == 1 ? "" : "_cb_t.", qexp,
				    next++, types[s->nkeys + 1]);
		else
			cb__sql_add(&b, " AND %s%s IS NULL", s->nkeys == 1 ? "" : "_cb_t.", qexp);
	} else if (s->strict) {
		/* Only rows not in the target state yet: a second run changes none. */
		cb__sql_add(&b, " AND %s%s IS DISTINCT FROM $1::%s", s->nkeys == 1 ? "" : "_cb_t.",
			    qset, types[s->nkeys]);
	}
	if (s->strict)
		add_strict_check(s, &b, q, types, colls, next);
	else if (s->count_unchanged)
		cb__sql_add(&b,
			    " RETURNING 1) SELECT " CB_TX_DUPLICATES_ADD(
				    "$%zu::bigint - (SELECT count(*) FROM _cb_u)"),
			    next);
	rc = cb__sql_done(&b, out, err);
done:
	for (i = 0; i < s->nkeys; i++)
		free(q[i]);
	free(q);
	free(qset);
	free(qexp);
	return rc;
}

static int status_open(void *state, const cb_step_context *sc, const json_t *saved, cb_error *err)
{
	struct status *s = state;
	char *qualified = NULL, *sql = NULL;
	const char **names = NULL;
	char **types = NULL, **colls = NULL;
	char *delims = NULL;
	size_t i, n = s->nkeys + 1 + (s->expect_column ? 1 : 0);
	int rc;

	(void)saved;
	status_close(s);
	if (!sc || !cb_step_context_conn(sc))
		return cb_error_set(err, CB_EINVAL, "%s: no step context or connection", s->what);
	s->sc = sc;
	s->conn = cb_step_context_conn(sc);
	names = calloc(n, sizeof(*names));
	types = calloc(n, sizeof(*types));
	colls = calloc(n, sizeof(*colls));
	delims = malloc(n);
	s->params = calloc(nparams(s), sizeof(*s->params));
	if (!names || !types || !colls || !delims || !s->params) {
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", s->what);
		goto done;
	}
	for (i = 0; i < s->nkeys; i++)
		names[i] = s->keys[i];
	names[s->nkeys] = s->set_column;
	if (s->expect_column)
		names[s->nkeys + 1] = s->expect_column;
	rc = cb__pg_qualified_name(&qualified, s->conn, s->schema, s->table, err);
	if (rc)
		goto done;
	rc = cb__pg_column_types(types, delims, colls, s->conn, qualified, names, n, s->what,
				 s->table, err);
	if (rc)
		goto done;
	rc = build_sql(s, &sql, qualified, types, colls, err);
	if (rc)
		goto done;
	rc = cb_pg_prepare(s->conn, s->stmt, "sts", sql, (int)nparams(s), err);
	if (rc) {
		cb_error_prefix(err, "%s: preparing the update", s->what);
		goto done;
	}
	rc = cb__values_init(&s->values, s->nkeys, (const char *const *)s->keys, delims, err);
	if (rc)
		goto done;
	s->opened = 1;
done:
	for (i = 0; types && i < n; i++)
		free(types[i]);
	for (i = 0; colls && i < n; i++)
		free(colls[i]);
	free(types);
	free(colls);
	free(names);
	free(delims);
	free(qualified);
	free(sql);
	if (rc)
		status_close(s);
	return rc;
}

static int status_result(void *ctx, const PGresult *res, cb_error *err)
{
	struct status *s = ctx;

	return cb__pg_result_check(res, s->conn, "status update", s->what, err);
}

/* The column of parameter $n, for messages: $1 the set value, then the
 * keys, then the expected value. */
static const char *param_column(void *ctx, int n)
{
	struct status *s = ctx;

	if (n == 1)
		return s->set_column;
	if (n >= 2 && (size_t)n < s->nkeys + 2)
		return s->keys[n - 2];
	if ((size_t)n == s->nkeys + 2 && s->expect_column && s->expect_value)
		return s->expect_column;
	return NULL;
}

/* The statement failed: name the table, key and column, not the statement. */
static int status_error(void *ctx, PGconn *conn, const PGresult *res, cb_error *err)
{
	struct status *s = ctx;

	return cb__writer_error(err, conn, res, s->what, s->keys_text, param_column, s, NULL, NULL);
}

/* One UPDATE for @p n items, their keys bound by @p bind, set to @p value. */
static int send_update(struct status *s, cb_tx *tx, void *const *items, size_t n, cb_bind_fn bind,
		       void *bind_ctx, const char *value, cb_error *err)
{
	size_t i;
	int rc;

	if (!s->opened)
		return cb_error_set(err, CB_EINVAL, "%s: write before open", s->what);
	if (n == 0)
		return 0;
	rc = cb__values_bind_chunk(&s->values, bind, bind_ctx, s->sc, items, n, s->what, err);
	if (rc)
		return rc;
	s->params[0] = value;
	rc = cb__values_finish(&s->values, s->params + 1, err);
	if (rc)
		return rc;
	i = s->nkeys + 1;
	if (s->expect_column && s->expect_value)
		s->params[i++] = s->expect_value;
	if (s->count_unchanged && !s->strict) {
		snprintf(s->count, sizeof(s->count), "%zu", n);
		s->params[i++] = s->count;
	}
	if (s->strict) {
		/* After max_rereads rollbacks in a row a conflict fails: no livelock. */
		if (s->on_conflict == CB_TRANSITION_FAIL)
			s->params[i++] = "fail";
		else
			s->params[i++] = s->rereads < s->max_rereads ? "reread" : "exhausted";
		s->params[i++] = s->label;
	}
	s->sent = 1;
	/* libpq copies the parameters at once: the buffers may be reused */
	return cb__tx_send_described(tx, s->stmt, s->what, (int)nparams(s), s->params,
				     status_result, status_error, s, err);
}

/* The engine calls write (or write_filtered) again only after the previous
 * chunk committed or rolled back (rollback hook): a statement sent and not
 * rolled back is a commit. */
static void settle(struct status *s)
{
	if (s->sent)
		s->rereads = 0;
	s->sent = 0;
}

static void status_rollback(void *state)
{
	struct status *s = state;

	if (s->sent && s->rereads < (unsigned int)-1)
		s->rereads++;
	s->sent = 0;
}

static int status_write(void *state, cb_tx *tx, void *const *items, size_t n, cb_error *err)
{
	struct status *s = state;

	settle(s);
	return send_update(s, tx, items, n, s->bind, s->bind_ctx, s->set_value, err);
}

/* The chunk's filtered items (the reader's items): marked too (mark_filtered). */
static int status_write_filtered(void *state, cb_tx *tx, void *const *items, size_t n,
				 cb_error *err)
{
	struct status *s = state;
	int rc;

	if (!s->sent)
		settle(s); /* no output items in this chunk: write was not called */
	rc = send_update(s, tx, items, n, s->filtered_bind, s->filtered_bind_ctx,
			 s->filtered_value ? s->filtered_value : s->set_value, err);

	if (rc < 0)
		cb_error_prefix(err, "filtered items");
	return rc;
}

/*
 * Does column @p col (of type @p type) take the text @p value, as the
 * statement's $n::type will? Runs the type's input function only (a SELECT
 * in the preflight's read-only transaction). A refusal names the column.
 */
static int check_value(struct status *s, const char *label, const char *col, const char *type,
		       const char *value, cb_error *err)
{
	char sql[300];
	const char *params[1] = { value };
	PGresult *res;
	int rc = 0;

	if (!value)
		return 0; /* SQL NULL: a NOT NULL column refuses it at chunk time */
	snprintf(sql, sizeof(sql), "SELECT $1::%s", type);
	res = PQexecParams(s->conn, sql, 1, NULL, params, NULL, NULL, 0);
	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);
		const char *state = PQresultErrorField(res, PG_DIAG_SQLSTATE);

		/* class 22, a data exception: the value does not fit the type */
		if (state && strncmp(state, "22", 2) == 0)
			rc = cb_error_set(err, CB_EINVAL,
					  "%s: %s \"%s\" (%s) does not take the value \"%s\": %s",
					  s->what, label, col, type, value, msg ? msg : "refused");
		else
			rc = cb_pg_error(err, s->conn, res, "checking a value");
	}
	PQclear(res);
	return rc;
}

/* Prepare the UPDATE unnamed: whatever else the server refuses in it. */
static int check_statement(struct status *s, const char *qualified, const char **names, size_t n,
			   cb_error *err)
{
	char **types = calloc(n, sizeof(*types));
	char **colls = calloc(n, sizeof(*colls));
	char *delims = malloc(n);
	char *sql = NULL;
	PGresult *res = NULL;
	size_t i;
	int rc;

	if (!types || !colls || !delims) {
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", s->what);
		goto done;
	}
	rc = cb__pg_column_types(types, delims, colls, s->conn, qualified, names, n, s->what,
				 s->table, err);
	if (rc == 0)
		rc = build_sql(s, &sql, qualified, types, colls, err);
	if (rc)
		goto done;
	res = PQprepare(s->conn, "", sql, (int)nparams(s), NULL);
	if (PQresultStatus(res) != PGRES_COMMAND_OK) {
		rc = cb_pg_error(err, s->conn, res, "the update statement");
		cb_error_prefix(err, "%s", s->what);
		if (strncmp(err->sqlstate, "42", 2) == 0)
			err->code = rc = CB_EINVAL;
	}
done:
	for (i = 0; types && i < n; i++)
		free(types[i]);
	for (i = 0; colls && i < n; i++)
		free(colls[i]);
	PQclear(res);
	free(types);
	free(colls);
	free(delims);
	free(sql);
	return rc;
}

/*
 * The preflight (item.h `check`): the table, the key, status and expected
 * columns, and the values written and expected against the catalog, before
 * a launch records anything. Nothing is prepared by name.
 */
static int status_check(void *state, const cb_step_context *sc, cb_error *err)
{
	struct status *s = state;
	const char *names[1002];
	cb__pg_rel r;
	char *qualified = NULL;
	size_t i, n = 0;
	int rc, col, setcol = -1, expcol = -1;

	if (!sc || !cb_step_context_conn(sc))
		return cb_error_set(err, CB_EINVAL, "%s: no step context or connection", s->what);
	s->conn = cb_step_context_conn(sc);
	rc = cb__pg_rel_load(&r, s->conn, s->schema, s->table, s->what, err);
	if (rc)
		return rc;
	for (i = 0; i < s->nkeys && rc == 0; i++) {
		if ((col = cb__pg_rel_need(&r, s->keys[i], s->what, "key column", err)) < 0)
			rc = col;
		names[n++] = s->keys[i];
	}
	if (rc == 0 &&
	    (setcol = cb__pg_rel_need(&r, s->set_column, s->what, "status column", err)) < 0)
		rc = setcol;
	names[n++] = s->set_column;
	if (rc == 0 && s->expect_column) {
		if ((expcol = cb__pg_rel_need(&r, s->expect_column, s->what, "expected column",
					      err)) < 0)
			rc = expcol;
		names[n++] = s->expect_column;
	}
	/* The values last: a refused one aborts the (preflight's) transaction. */
	if (rc == 0)
		rc = check_value(s, "status column", s->set_column, cb__pg_rel_type(&r, setcol),
				 s->set_value, err);
	if (rc == 0 && s->mark_filtered)
		rc = check_value(s, "status column", s->set_column, cb__pg_rel_type(&r, setcol),
				 s->filtered_value, err);
	if (rc == 0 && s->expect_column)
		rc = check_value(s, "expected column", s->expect_column,
				 cb__pg_rel_type(&r, expcol), s->expect_value, err);
	if (rc == 0)
		rc = cb__pg_qualified_name(&qualified, s->conn, s->schema, s->table, err);
	if (rc == 0)
		rc = check_statement(s, qualified, names, n, err);
	free(qualified);
	cb__pg_rel_free(&r);
	return rc;
}

int cb_pg_status_writer_new(cb_writer *out, const cb_pg_status_options *opts, cb_error *err)
{
	struct status *s;
	const char *what = "pg status writer";
	cb_pg_status_options o;
	int rc;

	if (out)
		memset(out, 0, sizeof(*out));
	if (!out || !opts)
		return cb_error_set(err, CB_EINVAL, "%s: no options", what);
	if (opts->version < 1 || opts->version > CB_PG_STATUS_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL, "%s: unsupported options version %u", what,
				    opts->version);
	/* Copy only what the caller's version has (a version-1 struct ends
	 * before mark_filtered, a version-2 one before on_conflict); then count
	 * a NULL-terminated key list (CB_COUNT). */
	memset(&o, 0, sizeof(o));
	memcpy(&o, opts,
	       opts->version >= 3 ? sizeof(o) :
	       opts->version == 2 ? offsetof(cb_pg_status_options, on_conflict) :
				    offsetof(cb_pg_status_options, mark_filtered));
	/* Versions 1 and 2 keep their behaviour: no check. */
	if (o.version < 3)
		o.on_conflict = CB_TRANSITION_LENIENT;
	o.nkeys = cb_list_count(o.key_columns, o.nkeys);
	opts = &o;
	if (!opts->table || !opts->table[0])
		return cb_error_set(err, CB_EINVAL, "%s: no table", what);
	if (opts->schema && !opts->schema[0])
		return cb_error_set(err, CB_EINVAL, "%s: empty schema name", what);
	if (!opts->key_columns || opts->nkeys == 0 || opts->nkeys > 1000)
		return cb_error_set(err, CB_EINVAL, "%s on \"%s\": no key columns (or too many)",
				    what, opts->table);
	if (!opts->set_column || !opts->set_column[0])
		return cb_error_set(err, CB_EINVAL, "%s on \"%s\": no set_column", what,
				    opts->table);
	if (opts->on_conflict < CB_TRANSITION_REREAD || opts->on_conflict > CB_TRANSITION_LENIENT)
		return cb_error_set(err, CB_EINVAL,
				    "%s on \"%s\": on_conflict %d is not a "
				    "cb_transition_conflict",
				    what, opts->table, opts->on_conflict);
	if ((rc = cb__pg_check_names(opts->key_columns, opts->nkeys, what, opts->table,
				     "key column", err)) < 0)
		return rc;

	s = calloc(1, sizeof(*s));
	if (!s)
		return cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	snprintf(s->what, sizeof(s->what), "%s on \"%s%s%s\"", what,
		 opts->schema ? opts->schema : "", opts->schema ? "." : "", opts->table);
	s->schema = opts->schema ? strdup(opts->schema) : NULL;
	s->table = strdup(opts->table);
	s->set_column = strdup(opts->set_column);
	s->set_value = opts->set_value ? strdup(opts->set_value) : NULL;
	if ((opts->schema && !s->schema) || !s->table || !s->set_column ||
	    (opts->set_value && !s->set_value) ||
	    cb__strv_dup(&s->keys, opts->key_columns, opts->nkeys) < 0) {
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", s->what);
		status_free(s);
		return rc;
	}
	s->nkeys = opts->nkeys;
	for (size_t i = 0, k = 0; i < s->nkeys && k < sizeof(s->keys_text); i++)
		k += (size_t)snprintf(s->keys_text + k, sizeof(s->keys_text) - k, "%s%s",
				      i ? ", " : "", s->keys[i]);
	s->bind = opts->bind;
	s->bind_ctx = opts->bind_ctx;
	s->count_unchanged = opts->count_unchanged;
	s->strict = opts->on_conflict != CB_TRANSITION_LENIENT;
	s->on_conflict = opts->on_conflict;
	s->max_rereads = opts->max_rereads ? opts->max_rereads : 5;
	snprintf(s->label, sizeof(s->label), "%s%s%s.%s", opts->schema ? opts->schema : "",
		 opts->schema ? "." : "", opts->table, opts->set_column);
	if (opts->expect_column) {
		s->expect_column = strdup(opts->expect_column);
		s->expect_value = opts->expect_value ? strdup(opts->expect_value) : NULL;
		if (!s->expect_column || (opts->expect_value && !s->expect_value)) {
			rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", s->what);
			status_free(s);
			return rc;
		}
	}

	if (opts->version >= 2 && opts->mark_filtered) {
		s->mark_filtered = 1;
		s->filtered_bind = opts->filtered_bind;
		s->filtered_bind_ctx = opts->filtered_bind_ctx;
		if (opts->filtered_value && !(s->filtered_value = strdup(opts->filtered_value))) {
			rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", s->what);
			status_free(s);
			return rc;
		}
	}

	out->version = CB_WRITER_VERSION;
	out->state = s;
	out->open = status_open;
	out->write = status_write;
	out->update = NULL;
	out->close = status_close;
	out->free = status_free;
	out->write_filtered = s->mark_filtered ? status_write_filtered : NULL;
	out->rollback = status_rollback;
	out->check = status_check;
	out->overlap_safe = 1;
	return 0;
}
