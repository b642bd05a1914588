/* Probes, metrics and what the server is: /healthz, /readyz, /metrics, /api/v1/info. */
#include "console.h"
#include "clock.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cbatch/metrics.h"
#include "cbatch/repository.h"
#include "cbatch/version.h"
#include "views.h"

/* Up: the process answers. Nothing else is asked (a liveness probe must not
 * fail because the database does). */
void cb__api_healthz(cb__request *r)
{
	if (cb__query_only(r, NULL) == 0)
		cb__reply_bytes(r, MHD_HTTP_OK, "text/plain; charset=utf-8", "ok", 2);
}

/* Ready: a pooled connection answers and the schema is the one we need. */
void cb__api_readyz(cb__request *r)
{
	cb_error err = CB_ERROR_INIT;
	PGconn *conn;
	int rc;

	if (cb__query_only(r, NULL) < 0)
		return;
	if ((rc = cb__pool_get(r->console->pool, &conn, &err)) < 0) {
		cb__reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready: %s", err.message);
		return;
	}
	rc = cb_repo_schema_check(conn, &err);
	cb__pool_put(r->console->pool, conn);
	if (rc < 0)
		cb__reply_error(r, MHD_HTTP_SERVICE_UNAVAILABLE, "not ready: %s", err.message);
	else
		cb__reply_bytes(r, MHD_HTTP_OK, "text/plain; charset=utf-8", "ok", 2);
}

int cb__metrics_compute(char **text, size_t *len, PGconn *conn, void *ctx, cb_error *err)
{
	int rc = cb_metrics_text(text, conn, err);

	(void)ctx;
	*len = rc == 0 && *text ? strlen(*text) : 0;
	return rc;
}

/* What `metrics` prints, for a Prometheus scrape, from the metrics snapshot
 * (snapshot.c): however many scrapers ask, the database computes it at most
 * once per interval. Its age and cost follow, so that an alert can tell a
 * stale snapshot from a quiet system. */
void cb__api_metrics(cb__request *r)
{
	static const char tail_fmt[] =
		"# HELP cbatch_metrics_snapshot_age_seconds Seconds since this scrape's metrics "
		"were computed (serve reuses them for --snapshot-interval).\n"
		"# TYPE cbatch_metrics_snapshot_age_seconds gauge\n"
		"cbatch_metrics_snapshot_age_seconds %.3f\n"
		"# HELP cbatch_metrics_snapshot_duration_seconds Seconds the database took to "
		"compute this scrape's metrics.\n"
		"# TYPE cbatch_metrics_snapshot_duration_seconds gauge\n"
		"cbatch_metrics_snapshot_duration_seconds %.3f\n"
		"# HELP cbatch_metrics_snapshot_computations_total Times this serve process "
		"computed its metrics from the database.\n"
		"# TYPE cbatch_metrics_snapshot_computations_total counter\n"
		"cbatch_metrics_snapshot_computations_total %lu\n";
	cb_error err = CB_ERROR_INIT;
	cb__snapshot_view v;
	char *text;
	int rc, n;

	if (cb__query_only(r, NULL) < 0)
		return;
	if ((rc = cb__snapshot_get(r->console->metrics, &v, &err)) < 0) {
		cb__reply_repo_error(r, rc, &err);
		return;
	}
	n = snprintf(NULL, 0, tail_fmt, v.age, v.took, v.computed);
	text = n > 0 ? realloc(v.text, v.len + (size_t)n + 1) : NULL;
	if (!text) {
		free(v.text);
		cb__reply_error(r, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory");
		return;
	}
	snprintf(text + v.len, (size_t)n + 1, tail_fmt, v.age, v.took, v.computed);
	cb__reply_take(r, MHD_HTTP_OK, "text/plain; version=0.0.4", text, v.len + (size_t)n);
}

/* The version, the schema, whether actions are allowed, the clocks, and the
 * statuses' names (and which are live). The database's part is null (with
 * why) when it cannot be reached: this is what an operator looks at first
 * when something is wrong. */
void cb__api_info(cb__request *r)
{
	cb_error err = CB_ERROR_INIT;
	char now[40], dbnow[48] = "";
	double wall;
	time_t secs;
	struct tm tm;
	PGconn *conn;
	int version = -1, rc;
	json_t *doc;

	if (cb__query_only(r, NULL) < 0)
		return;
	wall = cb__clock_wall();
	secs = (time_t)wall;
	gmtime_r(&secs, &tm);
	strftime(now, sizeof(now), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(now + strlen(now), sizeof(now) - strlen(now), ".%03dZ",
		 (int)((wall - (double)secs) * 1000.0) % 1000);
	rc = cb__pool_get(r->console->pool, &conn, &err);
	if (rc == 0) {
		rc = cb__repo_schema_version(&version, dbnow, sizeof(dbnow), conn, &err);
		cb__pool_put(r->console->pool, conn);
	}
	doc = json_pack("{s:s,s:i,s:b,s:s}", "version", cb_version(), "schema_expected",
			cb_repo_schema_target(), "read_only", r->console->token == NULL,
			"server_time", now);
	if (!doc) {
		r->result = MHD_NO;
		r->replied = 1;
		return;
	}
	json_object_set_new(doc, "schema_version",
			    version >= 0 ? json_integer(version) : json_null());
	json_object_set_new(doc, "database_time", dbnow[0] ? json_string(dbnow) : json_null());
	json_object_set_new(doc, "database_error",
			    rc < 0 ? cb__json_text(err.message) : json_null());
	/* The status vocabulary, for the dashboard: never from the database,
	 * so that it is there when the database is not. */
	if (cb__statuses_describe(doc) < 0) {
		json_decref(doc);
		doc = NULL;
	}
	cb__reply_json(r, MHD_HTTP_OK, doc);
}
