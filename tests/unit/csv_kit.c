/*
 * What the CSV tests share (test_csv.c, test_csv_writer.c): a scratch
 * directory per program, files in it, a step context on the stack, and a
 * reader opened by hand.
 */
#include "csv_kit.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

char dir[4096];

const char *path_of(const char *name)
{
	static char buf[4][4200];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", dir, name);
	return buf[i];
}

void write_file(const char *path, const char *data, size_t len)
{
	FILE *f = fopen(path, "wb");

	if (!f) {
		CBT_FAILF("cannot create %s: %s", path, strerror(errno));
		return;
	}
	if (len && fwrite(data, 1, len, f) != len)
		CBT_FAILF("cannot write %s", path);
	fclose(f);
}

void write_str(const char *path, const char *s)
{
	write_file(path, s, strlen(s));
}

long long file_size(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (long long)st.st_size : -1;
}

struct cb_step_context step(size_t chunk_size)
{
	struct cb_step_context sc;

	memset(&sc, 0, sizeof(sc));
	sc.job_name = "test";
	sc.step_name = "csv";
	sc.chunk_size = chunk_size;
	return sc;
}

/* Open a reader over @p path; fatal on failure. */
void open_reader(cb_reader *r, cb_csv_options *o, const json_t *saved)
{
	struct cb_step_context sc = step(3);
	cb_error err = CB_ERROR_INIT;

	CBT_PASS_FATAL(cb_csv_reader_new(r, o, &err), &err);
	CBT_PASS_FATAL(r->open(r->state, &sc, saved, &err), &err);
}

void close_reader(cb_reader *r)
{
	r->close(r->state);
	r->free(r->state);
}

/* Remove the scratch directory (flat: the tests make no subdirectories). */
static void remove_dir(const char *path)
{
	char file[4400];
	struct dirent *de;
	DIR *d = opendir(path);

	if (!d)
		return;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		snprintf(file, sizeof(file), "%s/%s", path, de->d_name);
		unlink(file);
	}
	closedir(d);
	rmdir(path);
}

int init(void)
{
	snprintf(dir, sizeof(dir), "%s/csv_XXXXXX", cbt_tmpdir());
	if (!mkdtemp(dir)) {
		fprintf(stderr, "cannot create a directory under %s: %s\n", cbt_tmpdir(),
			strerror(errno));
		return -1;
	}
	return 0;
}

int clean(void)
{
	if (dir[0])
		remove_dir(dir);
	return 0;
}
