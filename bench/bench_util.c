/* Helpers shared by the benchmarks in bench/. */
#include "bench_util.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

double bench_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double bench_self_cpu(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

double bench_proc_cpu(int pid, int children, int *ppid_out)
{
	char path[64], buf[1024], *p;
	unsigned long long v[4];
	FILE *f;
	size_t n;
	int ppid;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "r");
	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* the command name may hold blanks and parentheses: fields start after the last ')' */
	p = strrchr(buf, ')');
	if (!p)
		return -1;
	/* fields 3.. : state ppid pgrp session tty tpgid flags minflt cminflt majflt
	 * cmajflt utime stime cutime cstime */
	if (sscanf(p + 2, "%*c %d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %llu %llu", &ppid,
		   &v[0], &v[1], &v[2], &v[3]) != 5)
		return -1;
	if (ppid_out)
		*ppid_out = ppid;
	return (double)(v[0] + v[1] + (children ? v[2] + v[3] : 0)) / (double)sysconf(_SC_CLK_TCK);
}

double bench_server_cpu(int postmaster)
{
	DIR *d;
	struct dirent *e;
	double total;

	if (postmaster <= 0)
		return -1;
	total = bench_proc_cpu(postmaster, 1, NULL);
	if (total < 0)
		return -1;
	d = opendir("/proc");
	if (!d)
		return -1;
	while ((e = readdir(d)) != NULL) {
		int pid, ppid = 0;
		double c;

		if (!isdigit((unsigned char)e->d_name[0]))
			continue;
		pid = atoi(e->d_name);
		c = bench_proc_cpu(pid, 0, &ppid);
		if (c >= 0 && ppid == postmaster)
			total += c;
	}
	closedir(d);
	return total;
}

double bench_machine_busy(void)
{
	unsigned long long v[8] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return -1;
	/* cpu user nice system idle iowait irq softirq steal */
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]);
	fclose(f);
	if (n != 8)
		return -1;
	return (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
}

double bench_wal_lsn(PGconn *conn)
{
	PGresult *res = PQexec(conn, "SELECT pg_wal_lsn_diff(pg_current_wal_insert_lsn(), '0/0')");
	double v = -1;

	if (PQresultStatus(res) == PGRES_TUPLES_OK && PQntuples(res) == 1)
		v = atof(PQgetvalue(res, 0, 0));
	PQclear(res);
	return v;
}

int bench_postmaster_pid(PGconn *conn)
{
	int ppid = -1;

	if (bench_proc_cpu(PQbackendPID(conn), 0, &ppid) < 0)
		return -1;
	return ppid;
}

PGconn *bench_connect(const char *conninfo)
{
	PGconn *c;

	if (!conninfo || !*conninfo)
		conninfo = getenv("CBATCH_DB");
	c = PQconnectdb(conninfo ? conninfo : "");
	if (PQstatus(c) != CONNECTION_OK) {
		fprintf(stderr, "bench: cannot connect: %s", PQerrorMessage(c));
		PQfinish(c);
		exit(2);
	}
	return c;
}

void bench_exec(PGconn *conn, const char *sql)
{
	PGresult *res = PQexec(conn, sql);
	ExecStatusType st = PQresultStatus(res);

	if (st != PGRES_COMMAND_OK && st != PGRES_TUPLES_OK) {
		fprintf(stderr, "bench: %.120s: %s", sql, PQerrorMessage(conn));
		PQclear(res);
		exit(1);
	}
	PQclear(res);
}

void bench_value(PGconn *conn, const char *sql, char *buf, size_t size)
{
	PGresult *res = PQexec(conn, sql);

	if (PQresultStatus(res) != PGRES_TUPLES_OK || PQntuples(res) < 1) {
		fprintf(stderr, "bench: %.120s: %s", sql, PQerrorMessage(conn));
		PQclear(res);
		exit(1);
	}
	snprintf(buf, size, "%s", PQgetisnull(res, 0, 0) ? "" : PQgetvalue(res, 0, 0));
	PQclear(res);
}

void bench_print_machine(PGconn *conn)
{
	char model[256] = "?", line[512], v[256];
	FILE *f = fopen("/proc/cpuinfo", "r");
	static const char *const settings[] = {
		"fsync",          "synchronous_commit", "full_page_writes",  "wal_level",
		"shared_buffers", "max_wal_size",       "checkpoint_timeout"
	};

	while (f && fgets(line, sizeof(line), f)) {
		if (strncmp(line, "model name", 10) == 0) {
			char *p = strchr(line, ':');

			if (p) {
				p += 2;
				p[strcspn(p, "\n")] = '\0';
				snprintf(model, sizeof(model), "%s", p);
			}
			break;
		}
	}
	if (f)
		fclose(f);
	printf("machine: %ld cores (nproc), CPU \"%s\"\n", sysconf(_SC_NPROCESSORS_ONLN), model);
	bench_value(conn, "SELECT version()", v, sizeof(v));
	printf("server:  %s\n", v);
	printf("settings:");
	for (size_t i = 0; i < sizeof(settings) / sizeof(settings[0]); i++) {
		char sql[128];

		snprintf(sql, sizeof(sql), "SELECT current_setting('%s')", settings[i]);
		bench_value(conn, sql, v, sizeof(v));
		printf(" %s=%s", settings[i], v);
	}
	printf("\n");
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

double bench_median(double *v, size_t n)
{
	if (n == 0)
		return 0;
	qsort(v, n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double bench_min(const double *v, size_t n)
{
	double m = n ? v[0] : 0;

	for (size_t i = 1; i < n; i++)
		if (v[i] < m)
			m = v[i];
	return m;
}

double bench_max(const double *v, size_t n)
{
	double m = n ? v[0] : 0;

	for (size_t i = 1; i < n; i++)
		if (v[i] > m)
			m = v[i];
	return m;
}

long long bench_count(const char *opt, const char *s)
{
	char *end;
	long long n = strtoll(s, &end, 10);

	if (end != s && (*end == 'k' || *end == 'K') && end[1] == '\0')
		n *= 1000;
	else if (end != s && (*end == 'm' || *end == 'M') && end[1] == '\0')
		n *= 1000000;
	else if (end == s || *end)
		n = -1;
	if (n <= 0) {
		fprintf(stderr, "bench: %s '%s' is not a positive count\n", opt, s);
		exit(2);
	}
	return n;
}
