/* `example-setup NAME`: create an example's tables and load demo data. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "examples.h"

/* --json (the CLI passes the global option as argv[1]): one JSON document. */
static int json_out;

/* Report an error: a line on stderr, and with --json an {"error": ...} document.
 * @return @p exitcode. */
static int failure(int exitcode, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

static int failure(int exitcode, const char *fmt, ...)
{
	char msg[1024];
	size_t n;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	n = strlen(msg);
	while (n > 0 && (msg[n - 1] == '\n' || msg[n - 1] == ' '))
		msg[--n] = '\0';
	fprintf(stderr, "cbatch: example-setup: %s\n", msg);
	if (json_out) {
		json_t *doc = json_pack("{s:{s:s,s:s%,s:i}}", "error", "code",
					exitcode == CB_EXIT_USAGE ? "CB_EINVAL" : "CB_EDB",
					"message", msg, n, "exit_code", exitcode);

		if (!doc) /* not UTF-8 (an argument): the message without it */
			doc = json_pack("{s:{s:s,s:s,s:i}}", "error", "code", "CB_EINVAL",
					"message", "invalid argument (not UTF-8)", "exit_code",
					exitcode);
		if (doc && json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS) == 0)
			fputc('\n', stdout);
		json_decref(doc);
	}
	return exitcode;
}

/* The outcome: a line, or with --json {"example", "rows_added", "status"}. */
static int ready(const char *example, const char *what, long long rows, const char *around)
{
	if (json_out) {
		json_t *doc = json_pack("{s:s,s:I,s:s}", "example", example, "rows_added",
					(json_int_t)rows, "status", "ready");

		int ok;

		if (around)
			json_object_set_new(doc, "date", json_string(around));
		ok = doc && json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_SORT_KEYS) == 0;
		json_decref(doc);
		if (!ok)
			return CB_EXIT_FAILED;
		fputc('\n', stdout);
	} else if (around) {
		printf("example %s: tables ready, %lld %s added around %s\n", example, rows, what,
		       around);
	} else {
		printf("example %s: tables ready, %lld %s added\n", example, rows, what);
	}
	return CB_EXIT_COMPLETED;
}

static const char *find_schema(const char *example)
{
	size_t n = strlen(example);

	for (size_t i = 0; i < cb_example_schemas_count; i++)
		if (strncmp(cb_example_schemas[i].name, example, n) == 0 &&
		    cb_example_schemas[i].name[n] == '/')
			return cb_example_schemas[i].sql;
	return NULL;
}

static int exec_sql(PGconn *conn, const char *what, const char *sql, int nparams,
		    const char *const *values)
{
	/* Schema files hold several statements: only the simple protocol takes those. */
	PGresult *res = nparams ? PQexecParams(conn, sql, nparams, NULL, values, NULL, NULL, 0) :
				  PQexec(conn, sql);
	int ok = PQresultStatus(res) == PGRES_COMMAND_OK || PQresultStatus(res) == PGRES_TUPLES_OK;

	if (!ok)
		failure(CB_EXIT_FAILED, "%s: %s", what, PQerrorMessage(conn));
	PQclear(res);
	return ok ? 0 : -1;
}

static int parse_count(const char *s, long long *out)
{
	char *end;

	*out = strtoll(s, &end, 10);
	return *end || end == s || *out < 0;
}

static void usage(void)
{
	printf("usage: example-setup ledger [--rows N] [--negative-at ID] [--reset]\n"
	       "       example-setup settlement [--rows N] [--date YYYY-MM-DD] [--reset]\n"
	       "       example-setup outbox [--rows N] [--reset]\n"
	       "       example-setup tick [--reset]\n"
	       "       example-setup sales_totals [--rows N] [--reset]\n"
	       "  Creates the example's tables (examples/NAME/schema.sql) and demo data.\n"
	       "  ledger:     N accounts (default 10000), amounts 0.01..999.99, 50 sellers;\n"
	       "              --negative-at ID makes account ID's amount negative (bad input)\n"
	       "  settlement: N orders (default 10000) over 200 sellers, spread over the day\n"
	       "              before, the day of and the day after --date (default 2026-06-30)\n"
	       "  outbox:     N READY messages (default 10000) over 7 topics\n"
	       "  tick:       the tick_log table of the tick job (no demo data)\n"
	       "  sales_totals: N invoices more (default 10000) over 500 customers\n"
	       "  --reset     removes the example's rows first\n");
}

static int setup_settlement(PGconn *conn, long long rows, const char *date, int reset)
{
	char nrows[24];
	const char *p[2] = { nrows, date };

	if (reset && exec_sql(conn, "reset", "TRUNCATE orders, settlement_daily", 0, NULL) < 0)
		return CB_EXIT_FAILED;
	snprintf(nrows, sizeof(nrows), "%lld", rows);
	/* Deterministic, so that tests can recompute the expected settlement. */
	if (exec_sql(conn, "demo data",
		     "WITH base AS (SELECT coalesce(max(order_id), 0) AS b FROM orders) "
		     "INSERT INTO orders (order_id, seller_id, amount, ordered_at) "
		     "SELECT b + g, 1 + (b + g) % 200, (1 + ((b + g) * 7919) % 99999) / 100.0, "
		     " $2::date - 1 + ((b + g) % 3) * interval '1 day' "
		     "   + ((b + g) * 37 % 86400) * interval '1 second' "
		     "FROM base, generate_series(1, $1::bigint) g",
		     2, p) < 0)
		return CB_EXIT_FAILED;
	return ready("settlement", "orders", rows, date);
}

static int setup_outbox(PGconn *conn, long long rows, int reset)
{
	char nrows[24];
	const char *p[1] = { nrows };

	if (reset && exec_sql(conn, "reset", "TRUNCATE outbox, outbox_delivery RESTART IDENTITY", 0,
			      NULL) < 0)
		return CB_EXIT_FAILED;
	snprintf(nrows, sizeof(nrows), "%lld", rows);
	if (exec_sql(conn, "demo data",
		     "INSERT INTO outbox (topic, payload) "
		     "SELECT 'topic-' || (g % 7), jsonb_build_object('n', g, 'to', "
		     " 'user' || (g * 7919 % 1000) || '@example.org') "
		     "FROM generate_series(1, $1::bigint) g",
		     1, p) < 0)
		return CB_EXIT_FAILED;
	return ready("outbox", "messages", rows, NULL);
}

static int setup_sales_totals(PGconn *conn, long long rows, int reset)
{
	char nrows[24];
	const char *p[1] = { nrows };

	if (reset && exec_sql(conn, "reset", "TRUNCATE invoice, customer_total", 0, NULL) < 0)
		return CB_EXIT_FAILED;
	snprintf(nrows, sizeof(nrows), "%lld", rows);
	/* Deterministic, after the invoices already there: tests add more while
	 * a run goes on, and recompute the totals with one statement. */
	if (exec_sql(conn, "demo data",
		     "WITH base AS (SELECT coalesce(max(id), 0) AS b FROM invoice) "
		     "INSERT INTO invoice (id, customer_id, amount, issued_at) "
		     "SELECT b + g, 1 + ((b + g) * 7919) % 500, (1 + ((b + g) * 104729) % 99999) "
		     " / 100.0, timestamptz '2026-01-01' + (b + g) * interval '1 minute' "
		     "FROM base, generate_series(1, $1::bigint) g",
		     1, p) < 0)
		return CB_EXIT_FAILED;
	return ready("sales_totals", "invoices", rows, NULL);
}

int examples_setup_command(void *ctx, PGconn *conn, int argc, char **argv)
{
	long long rows = 10000, negative = 0;
	int reset = 0;
	const char *example = NULL, *sql, *date = "2026-06-30";
	char nrows[24], neg[24];

	(void)ctx;
	json_out = 0;
	for (int i = 1; i < argc; i++) {
		if (strcmp(argv[i], "--json") == 0) {
			json_out = 1;
		} else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
			usage();
			return CB_EXIT_COMPLETED;
		} else if (strcmp(argv[i], "--rows") == 0 && i + 1 < argc) {
			if (parse_count(argv[++i], &rows))
				return failure(CB_EXIT_USAGE,
					       "--rows '%s' is not a non-negative "
					       "integer",
					       argv[i]);
		} else if (strcmp(argv[i], "--negative-at") == 0 && i + 1 < argc) {
			if (parse_count(argv[++i], &negative))
				return failure(CB_EXIT_USAGE,
					       "--negative-at '%s' is not a "
					       "non-negative integer",
					       argv[i]);
		} else if (strcmp(argv[i], "--date") == 0 && i + 1 < argc) {
			date = argv[++i];
		} else if (strcmp(argv[i], "--reset") == 0) {
			reset = 1;
		} else if (!example && argv[i][0] != '-') {
			example = argv[i];
		} else {
			return failure(CB_EXIT_USAGE, "unexpected argument '%s'", argv[i]);
		}
	}
	if (!example || (strcmp(example, "ledger") != 0 && strcmp(example, "settlement") != 0 &&
			 strcmp(example, "outbox") != 0 && strcmp(example, "tick") != 0 &&
			 strcmp(example, "sales_totals") != 0))
		return failure(CB_EXIT_USAGE, "name an example (known: ledger, outbox, "
					      "sales_totals, settlement, tick)");
	sql = find_schema(example);
	if (!sql)
		return failure(CB_EXIT_FAILED, "no schema embedded for '%s'", example);
	if (exec_sql(conn, "schema", sql, 0, NULL) < 0)
		return CB_EXIT_FAILED;
	if (strcmp(example, "settlement") == 0)
		return setup_settlement(conn, rows, date, reset);
	if (strcmp(example, "outbox") == 0)
		return setup_outbox(conn, rows, reset);
	if (strcmp(example, "sales_totals") == 0)
		return setup_sales_totals(conn, rows, reset);
	if (strcmp(example, "tick") == 0) {
		if (reset && exec_sql(conn, "reset", "TRUNCATE tick_log", 0, NULL) < 0)
			return CB_EXIT_FAILED;
		return ready("tick", "rows", 0, NULL);
	}
	if (reset &&
	    exec_sql(conn, "reset", "TRUNCATE account, ledger RESTART IDENTITY", 0, NULL) < 0)
		return CB_EXIT_FAILED;
	snprintf(nrows, sizeof(nrows), "%lld", rows);
	snprintf(neg, sizeof(neg), "%lld", negative);
	{
		const char *p[2] = { nrows, neg };

		/* Deterministic amounts so that tests can recompute the expected ledger. */
		if (exec_sql(conn, "demo data",
			     "WITH base AS (SELECT coalesce(max(id), 0) AS b FROM account) "
			     "INSERT INTO account (id, seller_id, amount) "
			     "SELECT b + g, 1 + (b + g) % 50, "
			     " CASE WHEN b + g = $2::bigint THEN -1 ELSE 1 END * "
			     " (1 + ((b + g) * 7919) % 99999) / 100.0 "
			     "FROM base, generate_series(1, $1::bigint) g",
			     2, p) < 0)
			return CB_EXIT_FAILED;
		if (exec_sql(conn, "sequence",
			     "SELECT setval(pg_get_serial_sequence('account', 'id'), "
			     "greatest((SELECT max(id) FROM account), 1))",
			     0, NULL) < 0)
			return CB_EXIT_FAILED;
	}
	return ready("ledger", "accounts", rows, NULL);
}
