/* The repository's side of partitioned steps (sql/003_partitions.sql). */
#include "repo.h"
#include "text.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int cb__repo_partitions_create(long long *manager_id, PGconn *conn, long long job_execution_id,
			       const char *manager_name, const json_t *manager_context,
			       const json_t *partitions, const char *fingerprint, cb_error *err)
{
	char exec[24], *ctx = json_dumps(manager_context, JSON_COMPACT),
		       *parts = json_dumps(partitions, JSON_COMPACT);
	const char *p[5] = { exec, manager_name, ctx, parts, fingerprint };
	PGresult *res = NULL;
	int rc = 0;

	*manager_id = 0;
	if (!ctx || !parts) {
		rc = cb_error_set(err, CB_ENOMEM, "out of memory");
		goto out;
	}
	snprintf(exec, sizeof(exec), "%lld", job_execution_id);
	res = cb__repo_exec(conn, "create partitions",
			    "SELECT job_status, manager_step_execution_id "
			    "FROM batch_partitions_create($1, $2, $3::jsonb, $4::jsonb, $5)",
			    5, p, err);
	if (!res) {
		rc = CB_EDB;
		goto out;
	}
	if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0))
		rc = cb_error_set(err, CB_ENOTFOUND, "no job execution %lld", job_execution_id);
	else if (!PQgetisnull(res, 0, 1))
		*manager_id = atoll(PQgetvalue(res, 0, 1));
	else
		rc = cb__repo_step_refused(err, PQgetvalue(res, 0, 0), job_execution_id,
					   manager_name);
out:
	PQclear(res);
	free(ctx);
	free(parts);
	return rc;
}

int cb__repo_partitions_supersede(PGconn *conn, long long job_instance_id, const char *manager_name,
				  cb_error *err)
{
	char inst[24];
	const char *p[2] = { inst, manager_name };

	snprintf(inst, sizeof(inst), "%lld", job_instance_id);
	return cb__repo_command(conn, "supersede earlier partitions",
				"SELECT batch_partitions_supersede($1, $2)", 2, p, err);
}

int cb__repo_partitions_unfinished(json_t **out, long long *total, PGconn *conn,
				   long long job_instance_id, const char *manager_name,
				   long long count, cb_error *err)
{
	char inst[24];
	const char *p[2] = { inst, manager_name };
	PGresult *res;
	json_t *arr;
	long long seen = 0;

	*out = NULL;
	*total = 0;
	snprintf(inst, sizeof(inst), "%lld", job_instance_id);
	/* The newest execution of each partition index over the instance: a
	 * partition completed two executions ago stays done. */
	res = cb__repo_exec(
		conn, "read earlier partitions",
		"SELECT DISTINCT ON (x.partition_index) x.partition_index, x.status, "
		" coalesce(c.serialized_context, '{}') "
		"FROM batch_step_execution x "
		"JOIN batch_step_execution m ON m.step_execution_id = x.manager_step_execution_id "
		"JOIN batch_job_execution e ON e.job_execution_id = x.job_execution_id "
		"LEFT JOIN batch_step_execution_context c ON c.step_execution_id = x.step_execution_id "
		"WHERE e.job_instance_id = $1 AND m.step_name = $2 "
		"ORDER BY x.partition_index, x.step_execution_id DESC",
		2, p, err);
	if (!res)
		return CB_EDB;
	arr = json_array();
	if (!arr) {
		PQclear(res);
		return cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	for (int i = 0; i < PQntuples(res); i++) {
		long long idx = atoll(PQgetvalue(res, i, 0));
		json_error_t jerr;
		json_t *ctx, *item;

		if (idx < 0 || idx >= count)
			continue;
		seen++;
		if (strcmp(PQgetvalue(res, i, 1), "COMPLETED") == 0)
			continue;
		ctx = json_loads(PQgetvalue(res, i, 2), 0, &jerr);
		if (!ctx || !json_is_object(ctx)) {
			json_decref(ctx);
			json_decref(arr);
			PQclear(res);
			return cb_error_set(err, CB_EINVAL,
					    "partition %lld of step '%s': unreadable context", idx,
					    manager_name);
		}
		item = json_pack("{sI so}", "index", (json_int_t)idx, "context", ctx);
		if (!item || json_array_append_new(arr, item) < 0) {
			json_decref(arr);
			PQclear(res);
			return cb_error_set(err, CB_ENOMEM, "out of memory");
		}
	}
	PQclear(res);
	if (seen != count) {
		json_decref(arr);
		return cb_error_set(err, CB_EINVAL,
				    "step '%s': the repository holds %lld of its %lld partitions",
				    manager_name, seen, count);
	}
	*out = arr;
	*total = count;
	return 0;
}

/* A PostgreSQL text[] literal of @p names ("{\"a\",\"b\"}"), or NULL for none. */
static char *array_literal(const char *const *names, size_t n, cb_error *err)
{
	size_t size = 3;
	char *s, *w;

	if (!names || n == 0)
		return NULL;
	for (size_t i = 0; i < n; i++)
		size += 2 * strlen(names[i]) + 3;
	s = w = malloc(size);
	if (!s) {
		cb_error_set(err, CB_ENOMEM, "out of memory");
		return NULL;
	}
	*w++ = '{';
	for (size_t i = 0; i < n; i++) {
		if (i)
			*w++ = ',';
		*w++ = '"';
		for (const char *c = names[i]; *c; c++) {
			if (*c == '"' || *c == '\\')
				*w++ = '\\';
			*w++ = *c;
		}
		*w++ = '"';
	}
	*w++ = '}';
	*w = '\0';
	return s;
}

/*
 * The processes of this host that the claim must know are gone, as array
 * literals (NULL: none): claimants whose partitions are taken over at once
 * (@p holders), and managers whose partitions are left for the restart that
 * buries them (@p managers). One round trip for both.
 */
static int dead_here(char **holders, char **managers, PGconn *conn, cb_error *err)
{
	char host[96] = "unknown";
	const char *p[1] = { host };
	const char **dead = NULL;
	size_t ndead[2] = { 0, 0 };
	char **out[2] = { holders, managers };
	PGresult *res;
	int rc = 0, n;

	*holders = *managers = NULL;
	gethostname(host, sizeof(host) - 1);
	host[sizeof(host) - 1] = '\0';
	res = cb__repo_exec(conn, "look for dead claimants",
			    "SELECT h, 0 FROM batch_partition_holders($1) AS h "
			    "UNION ALL SELECT m, 1 FROM batch_partition_managers($1) AS m",
			    1, p, err);
	if (!res)
		return CB_EDB;
	n = PQntuples(res);
	if (n > 0) {
		dead = calloc((size_t)n * 2, sizeof(*dead));
		if (!dead)
			rc = cb_error_set(err, CB_ENOMEM, "out of memory");
	}
	for (int i = 0; dead && i < n; i++) {
		int k = atoi(PQgetvalue(res, i, 1)) ? 1 : 0;

		if (cb__owner_gone(PQgetvalue(res, i, 0)))
			dead[(size_t)k * (size_t)n + ndead[k]++] = PQgetvalue(res, i, 0);
	}
	for (int k = 0; rc == 0 && k < 2; k++)
		if (ndead[k]) {
			*out[k] = array_literal(dead + (size_t)k * (size_t)n, ndead[k], err);
			if (!*out[k])
				rc = err->code ? err->code : CB_ENOMEM;
		}
	if (rc < 0) {
		free(*holders);
		free(*managers);
		*holders = *managers = NULL;
	}
	free(dead);
	PQclear(res);
	return rc;
}

int cb__repo_partition_claim(cb__claim *out, PGconn *conn, const char *owner_id, const char *worker,
			     double lease_seconds, const char *const *job_names, size_t njobs,
			     long long job_execution_id, const char *runnable, cb_error *err)
{
	char lease[32], exec[24], *names = NULL, *dead = NULL, *dead_managers = NULL;
	const char *p[8] = { owner_id, worker, lease, NULL, NULL, NULL, runnable, NULL };
	PGresult *res;
	int rc;

	memset(out, 0, sizeof(*out));
	if (njobs) {
		names = array_literal(job_names, njobs, err);
		if (!names)
			return err->code ? err->code : CB_ENOMEM;
		p[3] = names;
	}
	/* A claimant of this host whose process is gone (a crashed worker that
	 * systemd just restarted) loses its partitions now, not after the lease;
	 * a manager of this host that is gone gets no more of its partitions
	 * run: its execution is dead, only its lease has not run out yet. */
	rc = dead_here(&dead, &dead_managers, conn, err);
	if (rc < 0) {
		free(names);
		return rc;
	}
	p[5] = dead;
	p[7] = dead_managers;
	snprintf(lease, sizeof(lease), "%.3f", lease_seconds);
	if (job_execution_id > 0) {
		snprintf(exec, sizeof(exec), "%lld", job_execution_id);
		p[4] = exec;
	}
	res = cb__repo_exec(
		conn, "claim a partition",
		"SELECT step_execution_id, job_execution_id, job_instance_id, job_name, "
		" step_name, manager_step_name, partition_index, lock_name, "
		" fencing_token, version, outcome, coalesce(previous_owner, '') "
		"FROM batch_partition_claim(p_owner_id => $1, p_worker => $2, "
		" p_lease_seconds => $3::float8, p_job_names => $4::varchar[], "
		" p_job_execution_id => $5::bigint, p_dead_owners => $6::varchar[], "
		" p_runnable => $7::jsonb, p_dead_managers => $8::varchar[])",
		8, p, err);
	free(names);
	free(dead);
	free(dead_managers);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) == 1) {
		out->found = 1;
		out->step_execution_id = atoll(PQgetvalue(res, 0, 0));
		out->job_execution_id = atoll(PQgetvalue(res, 0, 1));
		out->job_instance_id = atoll(PQgetvalue(res, 0, 2));
		snprintf(out->job_name, sizeof(out->job_name), "%s", PQgetvalue(res, 0, 3));
		snprintf(out->step_name, sizeof(out->step_name), "%s", PQgetvalue(res, 0, 4));
		snprintf(out->manager_name, sizeof(out->manager_name), "%s", PQgetvalue(res, 0, 5));
		out->partition_index = atoi(PQgetvalue(res, 0, 6));
		snprintf(out->lock_name, sizeof(out->lock_name), "%s", PQgetvalue(res, 0, 7));
		out->fencing_token = atoll(PQgetvalue(res, 0, 8));
		out->version = atoll(PQgetvalue(res, 0, 9));
		out->takeover = strcmp(PQgetvalue(res, 0, 10), "ACQUIRED") != 0;
		snprintf(out->previous_owner, sizeof(out->previous_owner), "%s",
			 PQgetvalue(res, 0, 11));
	}
	PQclear(res);
	return 0;
}

int cb__repo_partition_worker_gone(PGconn *conn, const char *owner_id, cb_error *err)
{
	const char *p[1] = { owner_id };

	return cb__repo_command(conn, "forget the worker",
				"DELETE FROM batch_partition_worker WHERE owner_id = $1", 1, p,
				err);
}

int cb__repo_partition_finish(int *ours, PGconn *conn, const cb__claim *c, const char *owner_id,
			      const char *status, const char *exit_code, const char *exit_message,
			      long long rollbacks, cb_error *err)
{
	char id[24], token[24], rb[24], msg[CB_ERROR_MESSAGE_MAX], code[64];
	const char *p[7] = { id, token, owner_id, status, code, msg, rb };
	PGresult *res;

	*ours = 0;
	cb__utf8_sanitize(msg, sizeof(msg), exit_message ? exit_message : "");
	cb__utf8_sanitize(code, sizeof(code), exit_code ? exit_code : status);
	snprintf(id, sizeof(id), "%lld", c->step_execution_id);
	snprintf(token, sizeof(token), "%lld", c->fencing_token);
	snprintf(rb, sizeof(rb), "%lld", rollbacks);
	res = cb__repo_exec(conn, "finish partition",
			    "SELECT batch_partition_finish(p_step_execution_id => $1, "
			    "p_fencing_token => $2, p_owner_id => $3, p_status => $4, "
			    "p_exit_code => $5, p_exit_message => $6, p_rollbacks => $7)",
			    7, p, err);
	if (!res)
		return CB_EDB;
	*ours = PQntuples(res) == 1 && strcmp(PQgetvalue(res, 0, 0), "t") == 0;
	PQclear(res);
	return 0;
}

int cb__repo_partitions_poll(cb__partition_poll *out, PGconn *conn, long long manager_id,
			     cb_error *err)
{
	char id[24];
	const char *p[1] = { id };
	long long *f[] = { &out->read,          &out->written,    &out->filtered,
			   &out->commits,       &out->read_skips, &out->write_skips,
			   &out->process_skips, &out->rollbacks,  &out->duplicates };
	PGresult *res;

	memset(out, 0, sizeof(*out));
	snprintf(id, sizeof(id), "%lld", manager_id);
	res = cb__repo_exec(
		conn, "poll partitions",
		"SELECT job_status, total, completed, failed, stopped, running, open, "
		" read_count, write_count, filter_count, commit_count, read_skip_count, "
		" write_skip_count, process_skip_count, rollback_count, "
		" duplicate_target_write_count, coalesce(first_failure, '') "
		"FROM batch_partitions_poll($1)",
		1, p, err);
	if (!res)
		return CB_EDB;
	if (PQntuples(res) != 1 || PQgetisnull(res, 0, 0)) {
		PQclear(res);
		return cb_error_set(err, CB_ENOTFOUND, "no manager step execution %lld",
				    manager_id);
	}
	out->job_status = cb_status_parse(PQgetvalue(res, 0, 0));
	out->total = atoll(PQgetvalue(res, 0, 1));
	out->completed = atoll(PQgetvalue(res, 0, 2));
	out->failed = atoll(PQgetvalue(res, 0, 3));
	out->stopped = atoll(PQgetvalue(res, 0, 4));
	out->running = atoll(PQgetvalue(res, 0, 5));
	out->open = atoll(PQgetvalue(res, 0, 6));
	for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++)
		*f[i] = atoll(PQgetvalue(res, 0, (int)(7 + i)));
	snprintf(out->first_failure, sizeof(out->first_failure), "%s", PQgetvalue(res, 0, 16));
	PQclear(res);
	return 0;
}

int cb__repo_partitions_end(PGconn *conn, long long manager_id, cb_status status,
			    const char *exit_code, const char *exit_message, cb_error *err)
{
	char id[24], msg[CB_ERROR_MESSAGE_MAX], code[64];
	const char *p[4] = { id, cb_status_name(status), code, msg };

	cb__utf8_sanitize(msg, sizeof(msg), exit_message ? exit_message : "");
	cb__utf8_sanitize(code, sizeof(code), exit_code ? exit_code : cb_status_name(status));
	snprintf(id, sizeof(id), "%lld", manager_id);
	return cb__repo_command(conn, "end partitioned step",
				"SELECT batch_partitions_end($1, $2, $3, $4)", 4, p, err);
}

int cb__repo_partition_fate(char *out, size_t size, PGconn *conn, const cb__claim *c, cb_error *err)
{
	char id[24], token[24];
	const char *p[2] = { id, token };
	PGresult *res;

	snprintf(id, sizeof(id), "%lld", c->step_execution_id);
	snprintf(token, sizeof(token), "%lld", c->fencing_token);
	/* Claimed again since (its token moved on): another worker has it, or
	 * had it and ended it. Else its execution ended (a burial ends the
	 * partitions with it), or something else ended the partition. */
	res = cb__repo_exec(
		conn, "why a partition is no longer ours",
		"SELECT CASE WHEN x.fencing_token IS DISTINCT FROM $2::bigint THEN "
		" format('taken over by %s (this worker''s lease had run out); it is %s now', "
		"  coalesce(x.worker, x.owner_id, 'another worker'), x.status) "
		" WHEN NOT batch_status_is_live(e.status) THEN format('its execution %s ended %s%s', "
		"  e.job_execution_id, e.status, coalesce(': ' || nullif(left(e.exit_message, "
		"  300), ''), '')) "
		" ELSE format('it ended %s by another process%s', x.status, "
		"  coalesce(': ' || nullif(left(x.exit_message, 300), ''), '')) END "
		"FROM batch_step_execution x JOIN batch_job_execution e USING (job_execution_id) "
		"WHERE x.step_execution_id = $1",
		2, p, err);
	if (!res)
		return CB_EDB;
	snprintf(out, size, "%s",
		 PQntuples(res) == 1 ? PQgetvalue(res, 0, 0) : "its step execution is gone");
	PQclear(res);
	return 0;
}
