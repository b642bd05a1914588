/*
 * The built-in partitions: making them (key ranges from a sample of the
 * keys, hash buckets, identical copies) and the WHERE condition that gives a
 * PostgreSQL reader its partition's share of the input. Both halves of the
 * format live here, so that they cannot drift apart.
 */
#define _GNU_SOURCE /* asprintf */
#include "partition_filter.h"
#include "pg_sql.h"

#include "cbatch/partition.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the format ---- */

/* {"keys": [..]} of a partition object, checked; *n = 0 when absent. */
static int partition_keys(const json_t **keys, size_t *n, const json_t *part, const char *what,
			  cb_error *err)
{
	*keys = json_object_get(part, "keys");
	*n = 0;
	if (!*keys)
		return 0;
	if (!json_is_array(*keys) || json_array_size(*keys) == 0 || json_array_size(*keys) > 100)
		return cb_error_set(err, CB_EINVAL,
				    "%s: partition \"keys\" is not an array of 1..100 column names",
				    what);
	for (size_t i = 0; i < json_array_size(*keys); i++) {
		const char *k = json_string_value(json_array_get(*keys, i));

		if (!k || !k[0])
			return cb_error_set(err, CB_EINVAL,
					    "%s: partition key %zu is not a column name", what,
					    i + 1);
	}
	*n = json_array_size(*keys);
	return 0;
}

/* A bound: null, or an array of @p n strings (NUL-free). */
static int bound_ok(const json_t *b, size_t n)
{
	if (!b || json_is_null(b))
		return 1;
	if (!json_is_array(b) || json_array_size(b) != n)
		return 0;
	for (size_t i = 0; i < n; i++) {
		const json_t *v = json_array_get(b, i);

		if (!json_is_string(v) || strlen(json_string_value(v)) != json_string_length(v))
			return 0;
	}
	return 1;
}

int cb__rd_partition_filter(cb__rd_filter *out, PGconn *conn, const json_t *part,
			    size_t first_param, const char *what, cb_error *err)
{
	const json_t *keys, *lo, *hi, *hwm, *bucket, *buckets;
	char **qk = NULL, *text = NULL;
	size_t n, len;
	FILE *f = NULL;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!part)
		return 0;
	if (!json_is_object(part))
		return cb_error_set(err, CB_EINVAL, "%s: the partition is not a JSON object", what);
	rc = partition_keys(&keys, &n, part, what, err);
	if (rc < 0 || n == 0)
		return rc; /* no keys: an identical copy (a work queue), the whole input */
	lo = json_object_get(part, "lo");
	hi = json_object_get(part, "hi");
	hwm = json_object_get(part, "hwm");
	bucket = json_object_get(part, "bucket");
	buckets = json_object_get(part, "buckets");
	if (bucket || buckets) {
		if (!json_is_integer(bucket) || !json_is_integer(buckets) ||
		    json_integer_value(buckets) < 1 ||
		    json_integer_value(buckets) > CB_MAX_PARTITIONS ||
		    json_integer_value(bucket) < 0 ||
		    json_integer_value(bucket) >= json_integer_value(buckets))
			return cb_error_set(err, CB_EINVAL,
					    "%s: partition \"bucket\"/\"buckets\" must be integers "
					    "with 0 <= bucket < buckets <= %d",
					    what, CB_MAX_PARTITIONS);
	} else if (!bound_ok(lo, n) || !bound_ok(hi, n) || !bound_ok(hwm, n)) {
		return cb_error_set(err, CB_EINVAL,
				    "%s: partition \"lo\"/\"hi\"/\"hwm\" must be null or arrays of "
				    "%zu strings",
				    what, n);
	}
	qk = calloc(n, sizeof(*qk));
	out->values = calloc(3 * n + 2, sizeof(*out->values));
	if (!qk || !out->values) {
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = cb__rd_quote(&qk[i], conn, what, json_string_value(json_array_get(keys, i)),
				  err);
	if (rc)
		goto done;
	f = open_memstream(&text, &len);
	if (!f) {
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
		goto done;
	}
	if (bucket) {
		/* hashtext over the row's text form: the same bucket on every server
		 * of one major version, whatever the key types. */
		cb__rd_add(f, "mod(abs(hashtext(ROW(");
		for (size_t i = 0; i < n; i++)
			cb__rd_add(f, "%s%s", i ? ", " : "", qk[i]);
		cb__rd_add(f, ")::text)::bigint), $%zu::bigint) = $%zu::bigint", first_param,
			   first_param + 1);
		{
			char b[24];

			snprintf(b, sizeof(b), "%lld", (long long)json_integer_value(buckets));
			out->values[out->nvalues++] = cb__rd_strdup(b);
			snprintf(b, sizeof(b), "%lld", (long long)json_integer_value(bucket));
			out->values[out->nvalues++] = cb__rd_strdup(b);
		}
	} else {
		/* lo inclusive, hi exclusive; the last range closed at the
		 * high-water mark, inclusive (null: nothing matched at the start) */
		const json_t *bounds[3] = { lo, hi, hwm };
		const char *ops[3] = { ">=", "<", "<=" };
		int any = 0;

		for (int b = 0; b < 3; b++) {
			if (b == 2 && hwm && json_is_null(hwm)) {
				cb__rd_add(f, "%sfalse", any++ ? " AND " : "");
				continue;
			}
			if (!bounds[b] || json_is_null(bounds[b]))
				continue;
			cb__rd_add(f, "%s(", any++ ? " AND " : "");
			for (size_t i = 0; i < n; i++)
				cb__rd_add(f, "%s%s", i ? ", " : "", qk[i]);
			cb__rd_add(f, ") %s (", ops[b]);
			for (size_t i = 0; i < n; i++) {
				cb__rd_add(f, "%s$%zu", i ? ", " : "", first_param + out->nvalues);
				out->values[out->nvalues++] = cb__rd_strdup(
					json_string_value(json_array_get(bounds[b], i)));
			}
			cb__rd_add(f, ")");
		}
		if (!any)
			cb__rd_add(f, "true"); /* one partition: everything */
	}
	if (ferror(f))
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	if (fclose(f) != 0 && !rc)
		rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	for (size_t i = 0; i < out->nvalues && !rc; i++)
		if (!out->values[i])
			rc = cb_error_set(err, CB_ENOMEM, "%s: out of memory", what);
	out->sql = text;
	text = NULL;
done:
	if (qk)
		cb__rd_strv_free(qk, n);
	free(text);
	if (rc)
		cb__rd_filter_free(out);
	return rc;
}

void cb__rd_filter_free(cb__rd_filter *f)
{
	if (f->values)
		cb__rd_strv_free(f->values, f->nvalues);
	free(f->sql);
	memset(f, 0, sizeof(*f));
}

/* ---- making partitions ---- */

/* Estimated rows above which the sample is drawn by pages, not rows. */
#define HUGE_TABLE_ROWS 50000000.0

/* Append a copy-free partition object to @p out. */
static int append(json_t *out, json_t *p, cb_error *err)
{
	if (!p || json_array_append_new(out, p) < 0)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	return 0;
}

static json_t *key_array(const char *const *keys, size_t n)
{
	json_t *a = json_array();

	for (size_t i = 0; a && i < n; i++)
		if (json_array_append_new(a, json_string(keys[i])) < 0) {
			json_decref(a);
			return NULL;
		}
	return a;
}

static size_t count_keys(const char *const *keys, size_t n)
{
	if (n == 0 && keys)
		while (keys[n])
			n++;
	return n;
}

static int check_partitioning(json_t *out, const char *const *keys, size_t nkeys, size_t count,
			      const char *what, cb_error *err)
{
	if (!json_is_array(out))
		return cb_error_set(err, CB_EINVAL, "%s: out is not a JSON array", what);
	if (count == 0 || count > CB_MAX_PARTITIONS)
		return cb_error_set(err, CB_EINVAL, "%s: %zu partitions (1..%d allowed)", what,
				    count, CB_MAX_PARTITIONS);
	if (keys && (nkeys == 0 || nkeys > 100))
		return cb_error_set(err, CB_EINVAL, "%s: 1..100 key columns needed", what);
	for (size_t i = 0; keys && i < nkeys; i++)
		if (!keys[i] || !keys[i][0])
			return cb_error_set(err, CB_EINVAL, "%s: key column %zu is empty", what,
					    i + 1);
	return 0;
}

int cb_partition_copies(json_t *out, size_t count, cb_error *err)
{
	int rc = check_partitioning(out, NULL, 0, count, "identical partitions", err);

	for (size_t i = 0; i < count && rc == 0; i++)
		rc = append(out, json_object(), err);
	return rc;
}

int cb_partition_hash(json_t *out, const char *const *key_columns, size_t nkeys, size_t count,
		      cb_error *err)
{
	size_t n = count_keys(key_columns, nkeys);
	int rc = check_partitioning(out, key_columns ? key_columns : (const char *const[]){ NULL },
				    n, count, "hash partitions", err);

	for (size_t i = 0; i < count && rc == 0; i++)
		rc = append(out,
			    json_pack("{so sI sI}", "keys", key_array(key_columns, n), "bucket",
				      (json_int_t)i, "buckets", (json_int_t)count),
			    err);
	return rc;
}

/* "(k1, k2) <= ($1, $2)": the condition of the high-water mark, its values
 * the first parameters of the partitioner's queries. */
static char *bound_sql(char *const *qk, size_t n)
{
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	cb__rd_add(f, "(");
	for (size_t i = 0; i < n; i++)
		cb__rd_add(f, "%s%s", i ? ", " : "", qk[i]);
	cb__rd_add(f, ") <= (");
	for (size_t i = 0; i < n; i++)
		cb__rd_add(f, "%s$%zu", i ? ", " : "", i + 1);
	cb__rd_add(f, ")");
	if (ferror(f)) {
		fclose(f);
		free(text);
		return NULL;
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The boundary query: the keys (as text) at the quantiles of the rows of
 * @p from (the table, or a sample of it) that match the filter and the
 * bound, each with the number of rows it ranked. The count is parameter
 * $<p>, the sample's percentage $<p + 1>. */
static char *boundary_sql(const char *from, char *const *qk, size_t n, const char *where,
			  const char *bound, size_t p)
{
	char *text = NULL;
	size_t len;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		return NULL;
	cb__rd_add(f, "WITH s AS (SELECT ");
	for (size_t i = 0; i < n; i++)
		cb__rd_add(f, "%s::text AS c%zu, ", qk[i], i);
	cb__rd_add(f, "row_number() OVER (ORDER BY ");
	for (size_t i = 0; i < n; i++)
		cb__rd_add(f, "%s%s", i ? ", " : "", qk[i]);
	cb__rd_add(f, ") AS rn, count(*) OVER () AS n FROM %s", from);
	if (where)
		cb__rd_add(f, " WHERE (\n%s\n)", where);
	if (bound)
		cb__rd_add(f, "%s%s", where ? " AND " : " WHERE ", bound);
	cb__rd_add(f, ") SELECT ");
	for (size_t i = 0; i < n; i++)
		cb__rd_add(f, "c%zu, ", i);
	/* rank n*j/count + 1 starts range j (j = 1..count-1): rows split evenly */
	cb__rd_add(f,
		   "s.n FROM s WHERE s.rn > 1 AND s.rn IN (SELECT (s.n * j / $%zu::bigint) + 1 "
		   "FROM generate_series(1, $%zu::bigint - 1) AS j) ORDER BY s.rn",
		   p, p);
	if (ferror(f)) {
		fclose(f);
		free(text);
		return NULL;
	}
	if (fclose(f) != 0) {
		free(text);
		return NULL;
	}
	return text;
}

/* The estimated row count of @p qualified (a quoted name); -1 when unknown. */
static int estimate_rows(double *out, PGconn *conn, const char *qualified, cb_error *err)
{
	const char *p[1] = { qualified };
	PGresult *res = PQexecParams(conn,
				     "SELECT coalesce((SELECT reltuples FROM pg_class "
				     "WHERE oid = to_regclass($1)), -1)::float8",
				     1, NULL, p, NULL, NULL, 0);

	if (PQresultStatus(res) != PGRES_TUPLES_OK) {
		cb_pg_error(err, conn, res, "key ranges: estimating the table's rows");
		PQclear(res);
		return CB_EDB;
	}
	*out = atof(PQgetvalue(res, 0, 0));
	PQclear(res);
	return 0;
}

/* Run @p sql with @p np text parameters; a result of tuples, or CB_EDB. */
static int query(PGresult **out, PGconn *conn, const char *sql, int np, const char *const *p,
		 const char *doing, cb_error *err)
{
	*out = PQexecParams(conn, sql, np, NULL, p, NULL, NULL, 0);
	if (PQresultStatus(*out) != PGRES_TUPLES_OK) {
		cb_pg_error(err, conn, *out, doing);
		PQclear(*out);
		*out = NULL;
		return CB_EDB;
	}
	return 0;
}

/*
 * The high-water mark: the last key, in key order, of the rows that match
 * @p where now, as a JSON array of its text values, or JSON null when no
 * row matches.
 */
static int take_hwm(json_t **out, PGconn *conn, const char *from, char *const *qk, size_t n,
		    const char *where, const char *what, cb_error *err)
{
	char *sql = NULL;
	size_t len;
	FILE *f = open_memstream(&sql, &len);
	PGresult *res = NULL;
	int rc = 0;

	*out = NULL;
	if (!f)
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	/* aliased: ORDER BY "id" would otherwise sort the text output column */
	cb__rd_add(f, "SELECT ");
	for (size_t i = 0; i < n; i++)
		cb__rd_add(f, "%s%s::text AS c%zu", i ? ", " : "", qk[i], i);
	cb__rd_add(f, " FROM %s", from);
	if (where)
		cb__rd_add(f, " WHERE (\n%s\n)", where);
	cb__rd_add(f, " ORDER BY ");
	for (size_t i = 0; i < n; i++)
		cb__rd_add(f, "%s%s DESC", i ? ", " : "", qk[i]);
	cb__rd_add(f, " LIMIT 1");
	if (ferror(f) | (fclose(f) != 0)) {
		free(sql);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	rc = query(&res, conn, sql, 0, NULL, "key ranges: taking the high-water mark", err);
	if (rc)
		goto done;
	if (PQntuples(res) == 0) {
		*out = json_null();
		goto done;
	}
	*out = json_array();
	for (size_t i = 0; *out && i < n; i++) {
		if (PQgetisnull(res, 0, (int)i)) {
			json_decref(*out);
			*out = NULL;
			rc = cb_error_set(
				err, CB_EINVAL,
				"%s: key column %s is NULL in a row; keys must be NOT NULL", what,
				qk[i]);
			goto done;
		}
		if (json_array_append_new(*out, json_string(PQgetvalue(res, 0, (int)i))) < 0) {
			json_decref(*out);
			*out = NULL;
		}
	}
	if (!*out)
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
done:
	PQclear(res);
	free(sql);
	return rc;
}

int cb_partition_key_ranges(json_t *out, PGconn *conn, const cb_key_range_options *opts,
			    size_t count, cb_error *err)
{
	const char *what = "key ranges";
	cb_key_range_options o;
	char **qk = NULL, *qtable = NULL, *qschema = NULL, *from = NULL, *sql = NULL;
	char *bound = NULL;
	char cnt[24], pct[32];
	const char **p = NULL;
	json_t *prev = json_null(), *keys = NULL, *hwm = NULL;
	PGresult *res = NULL;
	double est = -1, target, sample_pct = 100, matching;
	size_t n, nb = 0;
	int rc, sampled = 0;

	if (!opts || !conn)
		return cb_error_set(err, CB_EINVAL, "%s: NULL argument", what);
	if (opts->version < 1 || opts->version > CB_KEY_RANGE_OPTIONS_VERSION)
		return cb_error_set(err, CB_EINVAL, "%s: unsupported options version %u", what,
				    opts->version);
	/* Only the members of the caller's version (the rest stay zero: bounded). */
	memset(&o, 0, sizeof(o));
	memcpy(&o, opts,
	       opts->version == 1 ? offsetof(cb_key_range_options, unbounded) : sizeof(o));
	opts = &o;
	n = count_keys(opts->key_columns, opts->nkeys);
	if (!opts->table || !opts->table[0])
		return cb_error_set(err, CB_EINVAL, "%s: no table", what);
	if (opts->schema && !opts->schema[0])
		return cb_error_set(err, CB_EINVAL, "%s: empty schema name", what);
	rc = check_partitioning(
		out, opts->key_columns ? opts->key_columns : (const char *const[]){ NULL }, n,
		count, what, err);
	if (rc < 0)
		return rc;
	qk = calloc(n, sizeof(*qk));
	p = calloc(n + 2, sizeof(*p));
	keys = key_array(opts->key_columns, n);
	if (!qk || !p || !keys) {
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		goto done;
	}
	for (size_t i = 0; i < n && !rc; i++)
		rc = cb__rd_quote(&qk[i], conn, what, opts->key_columns[i], err);
	if (!rc)
		rc = cb__rd_quote(&qtable, conn, what, opts->table, err);
	if (!rc && opts->schema)
		rc = cb__rd_quote(&qschema, conn, what, opts->schema, err);
	if (rc)
		goto done;
	if (asprintf(&from, "%s%s%s", qschema ? qschema : "", qschema ? "." : "", qtable) < 0) {
		from = NULL;
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		goto done;
	}
	if (!opts->unbounded) {
		/* The run's input: what matches now. The ranges split it, and the
		 * last one ends at its last key (inclusive), so a partition run or
		 * restarted later reads no row that arrived after this. */
		rc = take_hwm(&hwm, conn, from, qk, n, opts->where, what, err);
		if (rc)
			goto done;
		if (json_is_null(hwm)) {
			/* nothing matches: one range of nothing */
			rc = append(out,
				    json_pack("{sO sO sO sO}", "keys", keys, "lo", prev, "hi",
					      json_null(), "hwm", hwm),
				    err);
			goto done;
		}
		bound = bound_sql(qk, n);
		if (!bound) {
			rc = cb_error_set(err, CB_ENOMEM, "out of memory");
			goto done;
		}
		for (size_t i = 0; i < n; i++)
			p[nb++] = json_string_value(json_array_get(hwm, i));
	}
	p[nb] = cnt;
	p[nb + 1] = pct;
	snprintf(cnt, sizeof(cnt), "%zu", count);
	if (count == 1)
		goto ranges; /* one range: no boundary to find */
	target = opts->sample_rows ? (double)opts->sample_rows :
				     (count * 100.0 > 10000.0 ? count * 100.0 : 10000.0);
	/* How many rows match, up to twice the sample: the table's statistics
	 * count every row, and a sample of a table drawn for the rows that
	 * match a selective filter (a few new rows among many processed ones)
	 * would hold one or two of them, or none. */
	{
		char *csql = NULL;

		if (asprintf(&csql,
			     "SELECT count(*)::float8 FROM (SELECT 1 FROM %s%s%s%s%s%s%s "
			     "LIMIT %.0f) AS m",
			     from, opts->where ? " WHERE (\n" : "", opts->where ? opts->where : "",
			     opts->where ? "\n)" : "",
			     bound ? (opts->where ? " AND " : " WHERE ") : "", bound ? bound : "",
			     "", 2 * target + 1) < 0) {
			rc = cb_error_set(err, CB_ENOMEM, "out of memory");
			goto done;
		}
		rc = query(&res, conn, csql, (int)nb, p, "key ranges: counting the rows", err);
		free(csql);
		if (rc)
			goto done;
		matching = atof(PQgetvalue(res, 0, 0));
		PQclear(res);
		res = NULL;
	}
	if (matching > 2 * target) {
		rc = estimate_rows(&est, conn, from, err);
		if (rc)
			goto done;
		/* A table never analysed is read whole. */
		if (est > 0) {
			sampled = 1;
			sample_pct = 100.0 * target / (est > matching ? est : matching);
		}
	}
	/* Up to three tries: a sample; a larger one when the filter kept too
	 * few of the sampled rows; the whole table. Exact count - 1 boundaries
	 * come out of every try but a sample's. */
	for (int attempt = 0; attempt < 3; attempt++) {
		char *sampled_from = NULL;
		double got;

		if (sampled) {
			/* BERNOULLI draws rows: one pass over the table, exact
			 * quantiles up to the sample's error however the keys lie
			 * on the pages. SYSTEM draws whole pages, which is cheaper
			 * on a huge table but sees keys clustered by page (ids in
			 * insertion order) as a few lumps: only worth it where a
			 * pass costs more than the job. */
			snprintf(pct, sizeof(pct), "%.6f", sample_pct);
			if (asprintf(&sampled_from, "%s TABLESAMPLE %s ($%zu::float4)", from,
				     est > HUGE_TABLE_ROWS ? "SYSTEM" : "BERNOULLI", nb + 2) < 0) {
				rc = cb_error_set(err, CB_ENOMEM, "out of memory");
				goto done;
			}
		}
		free(sql);
		sql = boundary_sql(sampled_from ? sampled_from : from, qk, n, opts->where, bound,
				   nb + 1);
		free(sampled_from);
		if (!sql) {
			rc = cb_error_set(err, CB_ENOMEM, "out of memory");
			goto done;
		}
		PQclear(res);
		rc = query(&res, conn, sql, (int)nb + (sampled ? 2 : 1), p,
			   "key ranges: sampling the keys", err);
		if (rc)
			goto done;
		if (!sampled)
			break;
		got = PQntuples(res) > 0 ? atof(PQgetvalue(res, 0, (int)n)) : 0;
		if ((size_t)PQntuples(res) == count - 1 && got >= target / 2)
			break;
		/* too few sampled rows matched: draw more, or read them all */
		sample_pct = got > 0 ? sample_pct * target / got : 100;
		if (sample_pct >= 50 || attempt >= 1)
			sampled = 0;
	}
ranges:
	for (int r = 0; r <= (res ? PQntuples(res) : 0) && !rc; r++) {
		json_t *hi = json_null();
		int last = !res || r == PQntuples(res);

		if (!last) {
			hi = json_array();
			for (size_t i = 0; hi && i < n; i++)
				if (json_array_append_new(
					    hi, json_string(PQgetvalue(res, r, (int)i))) < 0) {
					json_decref(hi);
					hi = NULL;
				}
		}
		if (!hi) {
			rc = cb_error_set(err, CB_ENOMEM, "out of memory");
			break;
		}
		if (last && hwm)
			rc = append(out,
				    json_pack("{sO sO sO sO}", "keys", keys, "lo", prev, "hi", hi,
					      "hwm", hwm),
				    err);
		else
			rc = append(out,
				    json_pack("{sO sO sO}", "keys", keys, "lo", prev, "hi", hi),
				    err);
		json_decref(prev);
		prev = hi;
	}
done:
	json_decref(prev);
	json_decref(keys);
	json_decref(hwm);
	PQclear(res);
	free(sql);
	free(bound);
	free(from);
	free(qtable);
	free(qschema);
	free(p);
	if (qk)
		cb__rd_strv_free(qk, n);
	return rc;
}
