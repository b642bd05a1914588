/* Helpers shared by the benchmarks in bench/ (not part of the library). */
#ifndef CB_BENCH_UTIL_H
#define CB_BENCH_UTIL_H

#include <stddef.h>
#include <libpq-fe.h>

/* Monotonic wall clock, seconds. */
double bench_now(void);

/* CPU (user + system) of this process, all threads, seconds. */
double bench_self_cpu(void);

/*
 * CPU (utime + stime) of process @p pid from /proc/<pid>/stat, seconds; with
 * @p children, cutime + cstime (reaped children) are added. -1 if unreadable.
 * @p ppid_out (may be NULL) receives the parent pid.
 */
double bench_proc_cpu(int pid, int children, int *ppid_out);

/*
 * CPU of the whole server: the postmaster (with its reaped children) plus
 * every live child of it (backends, walwriter, checkpointer, autovacuum...).
 * @p postmaster: the pid of the postmaster (the parent of any backend).
 */
double bench_server_cpu(int postmaster);

/* Busy CPU time of the whole machine (all processes, /proc/stat), seconds. */
double bench_machine_busy(void);

/* The server's WAL insert position in bytes (pg_current_wal_insert_lsn), or -1. */
double bench_wal_lsn(PGconn *conn);

/* The postmaster's pid for a connection (the backend's parent), or -1. */
int bench_postmaster_pid(PGconn *conn);

/* Connect (NULL or "" conninfo: libpq's PG* variables, else CBATCH_DB) or exit(2). */
PGconn *bench_connect(const char *conninfo);

/* Run SQL (any number of statements, simple protocol) or exit(1). */
void bench_exec(PGconn *conn, const char *sql);

/* Run a one-value query and return its text in @p buf or exit(1). */
void bench_value(PGconn *conn, const char *sql, char *buf, size_t size);

/* Print the machine and server description (CPU, cores, PostgreSQL settings). */
void bench_print_machine(PGconn *conn);

/* Median, min and max of @p n values (the array is sorted in place). */
double bench_median(double *v, size_t n);
double bench_min(const double *v, size_t n);
double bench_max(const double *v, size_t n);

/* Parse a positive count ("500000", "500k", "5M") or exit(2). */
long long bench_count(const char *opt, const char *s);

#endif
