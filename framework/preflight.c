/*
 * The preflight: a job's configuration checked against the catalog before a
 * launch records anything (DESIGN.md, guarantee 8), as Spring Batch checks
 * its beans at start-up.
 *
 * Each chunk step's parts are built the way its run builds them, with a
 * check's step context (no ids, no partition, an empty job context), and
 * their `check` hooks run on the launch's connection inside a READ ONLY
 * transaction that is rolled back: a check that tried to write would fail,
 * and what it looked at leaves no trace. The parts are freed unopened.
 *
 * What cannot be checked here is said, not guessed: a tasklet's work is its
 * own code; a build that needs what only a run has (an earlier step's job
 * context, a partition) may fail in a check, and then that step is left to
 * its run, which fails as it always did.
 */
#include "engine.h"
#include "reserved.h"
#include "step_context.h"
#include "pgkit.h"

#include <stdio.h>
#include <string.h>

struct preflight {
	PGconn *conn;
	const cb_job *job;
	const cb_params *params;
	cb_check_report_fn report; /* NULL: stop at the first problem */
	void *ctx;
	cb_error *err; /* the first problem */
	int problems;
};

/* The first error wins, as cb_error_set keeps it. */
static void keep(cb_error *dst, const cb_error *src)
{
	if (dst && !dst->code)
		*dst = *src;
}

static void note(struct preflight *pf, const char *step, int problem, const char *message)
{
	if (pf->report)
		pf->report(pf->ctx, step, problem, message);
}

/* Run @p sql; a failure is the database's (not the job's). */
static int exec(PGconn *conn, const char *sql, cb_error *err)
{
	PGresult *res = PQexec(conn, sql);
	int rc = 0;

	if (PQresultStatus(res) != PGRES_COMMAND_OK)
		rc = cb_pg_error(err, conn, res, "preflight");
	PQclear(res);
	return rc;
}

/*
 * One part's check, under a savepoint so that a check whose query failed
 * (the transaction is then aborted) leaves the next part a usable one.
 * @return 0 checked (a problem is counted and reported), or a negative code
 * that ends the preflight (the database, or the first problem without a
 * report callback).
 */
static int check_part(struct preflight *pf, const cb_step_def *def, cb_step_context *sc,
		      int (*check)(void *, const cb_step_context *, cb_error *), void *state,
		      const char *part)
{
	cb_error perr = CB_ERROR_INIT;
	int rc;

	if (!check)
		return 0;
	if ((rc = exec(pf->conn, "SAVEPOINT cb_preflight", pf->err)) < 0)
		return rc;
	rc = check(state, sc, &perr);
	if (rc >= 0)
		return exec(pf->conn, "RELEASE SAVEPOINT cb_preflight", pf->err);
	if (!perr.code)
		cb_error_set(&perr, rc, "%s check returned %s without a message", part,
			     cb_strcode(rc));
	cb_error_prefix(&perr, "job '%s', step '%s'", pf->job->name, def->name);
	if (cb__pg_lost(&perr, pf->conn) || PQstatus(pf->conn) != CONNECTION_OK) {
		keep(pf->err, &perr);
		return perr.code;
	}
	pf->problems++;
	if (pf->problems == 1)
		keep(pf->err, &perr);
	note(pf, def->name, 1, perr.message);
	if ((rc = exec(pf->conn, "ROLLBACK TO SAVEPOINT cb_preflight", pf->err)) < 0)
		return rc;
	return pf->report ? 0 : perr.code;
}

/* Two connections need parts that can run on either (overlap_safe). */
static int check_connections(struct preflight *pf, const cb_step_def *def,
			     const cb_chunk_parts *parts)
{
	cb_error perr = CB_ERROR_INIT;
	int n, rc = cb__step_connections(&n, def, pf->params, &perr);

	if (rc == 0 && (n < 2 || (rc = cb__parts_overlap_check(parts, &perr)) == 0))
		return 0;
	cb_error_prefix(&perr, "job '%s', step '%s'", pf->job->name, def->name);
	pf->problems++;
	if (pf->problems == 1)
		keep(pf->err, &perr);
	note(pf, def->name, 1, perr.message);
	return pf->report ? 0 : perr.code;
}

/* Build one chunk step's parts as its run would, and check them. */
static int check_step(struct preflight *pf, const cb_step_def *def)
{
	cb_step_context sc;
	cb_chunk_parts parts;
	cb_error berr = CB_ERROR_INIT;
	char msg[CB_ERROR_MESSAGE_MAX + 64];
	long long n = 0;
	size_t i;
	int rc;

	memset(&sc, 0, sizeof(sc));
	memset(&parts, 0, sizeof(parts));
	sc.job_name = pf->job->name;
	sc.step_name = def->name;
	sc.params = pf->params;
	sc.conn = pf->conn;
	sc.checking = 1;
	if (cb__reserved_long(&n, pf->params, "chunk.size",
			      def->chunk_size ? (long long)def->chunk_size : CB_DEFAULT_CHUNK_SIZE,
			      pf->err) < 0)
		return pf->err->code;
	sc.chunk_size = (size_t)n;
	sc.job_context = json_object();
	sc.sources = json_object();
	if (!sc.job_context || !sc.sources) {
		rc = cb_error_set(pf->err, CB_ENOMEM, "preflight: out of memory");
		goto done;
	}
	rc = def->build(def->user, &sc, &parts, &berr);
	if (rc < 0 || !parts.reader.read ||
	    cb__version_check(parts.reader.version, CB_READER_VERSION, "reader", &berr) < 0 ||
	    parts.nwriters > CB_MAX_WRITERS) {
		/* Its run says what is wrong, as before: a build may need what
		 * only a run has. */
		if (snprintf(msg, sizeof(msg), "not checked: its build failed in a check (%s)",
			     berr.code ? berr.message : "no reader or too many writers") < 0)
			msg[0] = '\0';
		note(pf, def->name, 0, msg);
		rc = 0;
		goto done;
	}
	memset((char *)&parts.reader + cb__reader_size(parts.reader.version), 0,
	       sizeof(parts.reader) - cb__reader_size(parts.reader.version));
	rc = check_part(pf, def, &sc, parts.reader.check, parts.reader.state, "reader");
	for (i = 0; rc == 0 && i < parts.nwriters; i++) {
		cb_writer *w = &parts.writers[i];
		char what[32];

		if (cb__version_check(w->version, CB_WRITER_VERSION, "writer", &berr) < 0)
			continue; /* its run refuses it, naming it */
		memset((char *)w + cb__writer_size(w->version), 0,
		       sizeof(*w) - cb__writer_size(w->version));
		snprintf(what, sizeof(what), "writer %zu", i);
		rc = check_part(pf, def, &sc, w->check, w->state, what);
	}
	if (rc == 0)
		rc = check_connections(pf, def, &parts);
done:
	for (i = 0; i < parts.nwriters && i < CB_MAX_WRITERS; i++)
		if (parts.writers[i].free)
			parts.writers[i].free(parts.writers[i].state);
	if (parts.processor.free)
		parts.processor.free(parts.processor.state);
	if (parts.reader.free)
		parts.reader.free(parts.reader.state);
	json_decref(sc.job_context);
	json_decref(sc.sources);
	return rc;
}

static int preflight_run(struct preflight *pf)
{
	cb_error ignored = CB_ERROR_INIT;
	int rc;

	if ((rc = exec(pf->conn, "BEGIN READ ONLY", pf->err)) < 0)
		return rc;
	for (size_t i = 0; i < pf->job->nsteps && rc == 0; i++) {
		const cb_step_def *def = &pf->job->steps[i];

		if (def->kind == CB_STEP_TASKLET)
			note(pf, def->name, 0, "not checked: a tasklet's work is its own code");
		else
			rc = check_step(pf, def);
	}
	/* Whatever a check looked at (or tried) leaves nothing behind. */
	exec(pf->conn, "ROLLBACK", &ignored);
	if (rc < 0)
		return rc;
	return pf->problems ? pf->err->code : 0;
}

int cb__job_preflight(PGconn *conn, const cb_job *job, const cb_params *params, cb_error *err)
{
	struct preflight pf = { conn, job, params, NULL, NULL, err, 0 };

	return preflight_run(&pf);
}

int cb_job_check(PGconn *conn, const cb_job *job, const cb_params *params,
		 cb_check_report_fn report, void *ctx, cb_error *err)
{
	struct preflight pf = { conn, job, params, report, ctx, err, 0 };
	cb_params *empty = NULL;
	int rc;

	if (!conn || !job)
		return cb_error_set(err, CB_EINVAL, "cb_job_check: %s is NULL",
				    !conn ? "connection" : "job");
	if (!params) {
		if ((rc = cb_params_new(&empty, err)) < 0)
			return rc;
		pf.params = params = empty;
	}
	rc = cb_job_validate_params(job, params, err);
	if (rc == 0 && job->validator) {
		rc = job->validator(job->validator_ctx, conn, params, err);
		if (rc > 0)
			rc = 0;
		else if (rc < 0 && !err->code)
			cb_error_set(err, rc,
				     "job '%s': parameter validator returned %s without a message",
				     job->name, cb_strcode(rc));
	}
	if (rc < 0)
		note(&pf, NULL, 1, err->message);
	else
		rc = preflight_run(&pf);
	cb_params_free(empty);
	return rc;
}
