/*
 * Connecting as every cbatch program does (the CLI, the scheduler, the
 * console's pool): @p conninfo, else CBATCH_DB, else libpq's own PG*
 * variables; a failure's message never shows a password.
 */
#include "pgkit.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* Show server warnings (not the NOTICE chatter of IF NOT EXISTS), as one
 * formatted line: never libpq's raw "WARNING:  ..." on stderr. */
void cb__pg_notice_receiver(void *arg, const PGresult *res)
{
	const char *sev = PQresultErrorField(res, PG_DIAG_SEVERITY_NONLOCALIZED);
	const char *msg = PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY);

	(void)arg;
	if (sev && msg && strcmp(sev, "WARNING") == 0)
		fprintf(stderr, "cbatch: server warning: %s\n", msg);
}

/*
 * libpq's message for a failed connection to @p conninfo, safe to show: a
 * quoted connection string has its passwords redacted, and a message that
 * quotes any other part of a password (a bad percent-encoding is quoted
 * alone; a raw '@' makes the rest of the password a host name) is not shown.
 * Then the same string with its passwords replaced is parsed again: if
 * that fails, its message points at the error elsewhere; if not, the
 * password itself is malformed.
 */
static void connect_error(char *out, size_t size, const char *conninfo, const char *libpq)
{
	char safe[4096];
	char *perr = NULL;
	PQconninfoOption *opts;

	if (!cb__conninfo_secret_in(conninfo, libpq)) {
		cb__redact_secrets(out, size, libpq);
		return;
	}
	cb__redact_secrets(safe, sizeof(safe), conninfo);
	opts = PQconninfoParse(safe, &perr);
	PQconninfoFree(opts);
	if (perr && !cb__conninfo_secret_in(conninfo, perr)) {
		char red[CB_ERROR_MESSAGE_MAX];

		cb__redact_secrets(red, sizeof(red), perr);
		red[strcspn(red, "\n")] = '\0';
		if (snprintf(out, size,
			     "%s (libpq's own message is not shown: it quotes the password)",
			     red) < 0)
			out[0] = '\0';
	} else {
		snprintf(out, size,
			 "libpq's message is not shown because it quotes part of the password; "
			 "check how the password is written (in a URI, '%%', '@', ':', '/', '?' "
			 "and '#' must be percent-encoded: %%25, %%40, %%3A, %%2F, %%3F, %%23)");
	}
	PQfreemem(perr);
}

/* The options (libpq's "options": -c settings at connection start) that
 * @p conninfo, else PGOPTIONS, gives; "" for none. Written into @p out. */
static void options_given(char *out, size_t size, const char *conninfo)
{
	PQconninfoOption *opts = conninfo && *conninfo ? PQconninfoParse(conninfo, NULL) : NULL;
	const char *v = NULL;

	for (PQconninfoOption *o = opts; o && o->keyword; o++)
		if (strcmp(o->keyword, "options") == 0 && o->val && *o->val)
			v = o->val;
	if (!v)
		v = getenv("PGOPTIONS");
	snprintf(out, size, "%s", v ? v : "");
	PQconninfoFree(opts);
}

/* A port list libpq refuses before it tries a host: "x", 99999999. */
static int bad_ports(const char *ports)
{
	for (const char *p = ports; p && *p;) {
		size_t n = strcspn(p, ",");
		long v = 0;

		for (size_t i = 0; i < n; i++) {
			if (p[i] < '0' || p[i] > '9' || v > 65535)
				return 1;
			v = v * 10 + (p[i] - '0');
		}
		if (n > 0 && (v < 1 || v > 65535))
			return 1;
		p += n + (p[n] == ',');
	}
	return 0;
}

/* A connection string (key=value or URI) that libpq refuses before trying
 * any server: it does not parse, or its ports are no ports. */
static int unparsable(const char *conninfo)
{
	char *msg = NULL;
	PQconninfoOption *o;
	int bad = 0;

	if (!conninfo || !*conninfo)
		return 0;
	o = PQconninfoParse(conninfo, &msg);
	PQfreemem(msg);
	if (!o)
		return strchr(conninfo, '=') || strstr(conninfo, "://"); /* else a bare name */
	for (PQconninfoOption *x = o; x->keyword; x++)
		if (strcmp(x->keyword, "port") == 0 && x->val)
			bad = bad_ports(x->val);
	PQconninfoFree(o);
	return bad;
}

int cb__pg_connect_as(PGconn **out, const char *conninfo, const char *application_name,
		      const char *options, cb_error *err)
{
	const char *keys[5] = { "dbname", "fallback_application_name", NULL, NULL, NULL };
	const char *vals[5] = { NULL, "cbatch", NULL, NULL, NULL };
	char both[2048], key[4096];
	PGconn *conn;
	int n = 2, kl;

	if (!out)
		return cb_error_set(err, CB_EINVAL, "cb_cli_connect: out is NULL");
	*out = NULL;
	if (!conninfo)
		conninfo = getenv("CBATCH_DB");
	/* Empty values are ignored by libpq, leaving its PG* variables and defaults;
	 * expand_dbname lets conninfo be a "key=value" string, a URI or a bare name.
	 * The keywords after dbname win over the ones it expands to. */
	vals[0] = conninfo ? conninfo : "";
	if (application_name) {
		keys[n] = "application_name";
		vals[n++] = application_name;
	}
	if (options && *options) {
		/* Ours after the ones given (the later -c of a name wins). */
		options_given(both, sizeof(both), vals[0]);
		if (strlen(both) + strlen(options) + 2 > sizeof(both))
			return cb_error_set(err, CB_EINVAL,
					    "the connection's options are too long (%zu bytes)",
					    strlen(both));
		if (both[0])
			strcat(both, " ");
		strcat(both, options);
		keys[n] = "options";
		vals[n++] = both;
	}
	/* The same parameters, the same connection: a kept one if there is. */
	kl = snprintf(key, sizeof(key), "as\x1f%s\x1f%s\x1f%s", vals[0],
		      application_name ? application_name : "", options && *options ? both : "");
	if (kl < 0 || (size_t)kl >= sizeof(key))
		key[0] = '\0'; /* cut short: never kept */
	if (key[0] && (conn = cb__pg_keep_take(key)) != NULL) {
		*out = conn;
		return 0;
	}
	conn = PQconnectdbParams(keys, vals, 1);
	if (!conn)
		return cb_error_set(err, CB_ENOMEM, "out of memory connecting to the database");
	if (PQstatus(conn) != CONNECTION_OK) {
		char msg[CB_ERROR_MESSAGE_MAX];

		connect_error(msg, sizeof(msg), vals[0], PQerrorMessage(conn));
		cb_error_set(err, CB_EDB, "cannot connect to the database: %s", msg);
		/* class 08: the CLI's exit code 6, "database unreachable"; a
		 * conninfo that does not parse is the caller's input, not that */
		if (!unparsable(vals[0]))
			snprintf(err->sqlstate, sizeof(err->sqlstate), "08001");
		PQfinish(conn);
		return CB_EDB;
	}
	PQsetNoticeReceiver(conn, cb__pg_notice_receiver, NULL);
	if (key[0])
		cb__pg_keep_mark(conn, key);
	*out = conn;
	return 0;
}

int cb__pg_connect(PGconn **out, const char *conninfo, cb_error *err)
{
	return cb__pg_connect_as(out, conninfo, NULL, NULL, err);
}
