/**
 * @file metrics.h
 * Repository metrics: the lock's outcomes (from batch_lock_audit), the step
 * executions' counts and chunk latency, for Prometheus or as JSON.
 *
 * Every number comes from the repository, so every process (and every host)
 * that asks sees the same values; nothing is kept in memory.
 */
#ifndef CBATCH_METRICS_H
#define CBATCH_METRICS_H

#include <jansson.h>
#include <libpq-fe.h>
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/**
 * Repository metrics in Prometheus text exposition format, named by
 * Prometheus's conventions (docs/metrics.md): every name starts with
 * cbatch_, counters end in _total, the job label is batch_job. Lock outcomes
 * (cbatch_lock_acquire_success_total, cbatch_lock_acquire_failed_total,
 * cbatch_lock_lease_expired_total, cbatch_heartbeat_failure_total,
 * cbatch_manual_rerun_lock_bypass_total, cbatch_fenced_chunk_total),
 * cbatch_duplicate_target_write_total, items and chunks per job; per job the
 * last success and failure (…_timestamp_seconds), the last status
 * (cbatch_job_last_status{batch_job,status}, one series per status of a
 * fixed set), the running executions and the oldest one's age; per schedule
 * its firings' counters, next fire time, paused or not and its newest
 * firing (instant, status, exit code); of partitioned steps the items per job
 * and worker host (counted when a partition ends) and the partitions of
 * running executions per status (cbatch_running_partitions, a gauge). Label
 * values are escaped as the exposition format says. Ownership: @p out
 * receives a new string (free() it); @p conn and @p err are borrowed.
 * @return 0, CB_EDB, CB_ENOMEM.
 */
int cb_metrics_text(char **out, PGconn *conn, cb_error *err);

/**
 * The same metrics as one JSON document: {"metrics": [{"name", "help",
 * "type": "counter" or "gauge", "labels": {"batch_job": ..., and "host",
 * "status" or "schedule" as the text has them} (empty for none), "value"},
 * ...]}, the same names and order as the text, one element per series. Ownership: @p out receives
 * a new reference (json_decref it); @p conn and @p err are borrowed.
 * @return 0, CB_EDB, CB_ENOMEM.
 */
int cb_metrics_json(json_t **out, PGconn *conn, cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
