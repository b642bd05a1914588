/*
 * libFuzzer target: the CSV reader (FUZZ_CSV) or the JSON lines reader
 * (FUZZ_JSONL) over arbitrary file contents, read to the end through the
 * reader interface as the step engine drives it: reads, an update every few
 * records, a rollback now and then, skipping malformed records.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cbatch.h>

#include "step_context.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];

static int make_reader(cb_reader *r, cb_error *err)
{
#ifdef FUZZ_CSV
	cb_csv_options o = CB_CSV_OPTIONS_INIT;

	o.path = path;
	o.header = 1;
	o.max_field = 4096;
	return cb_csv_reader_new(r, &o, err);
#else
	cb_jsonl_options o = CB_JSONL_OPTIONS_INIT;

	o.path = path;
	o.any_value = 1;
	o.max_line = 4096;
	return cb_jsonl_reader_new(r, &o, err);
#endif
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct cb_step_context sc;
	cb_reader r;
	cb_error err = CB_ERROR_INIT;
	FILE *f;
	int steps = 0;

	if (!path[0])
		snprintf(path, sizeof(path), "/tmp/cbatch-fuzz-%d", (int)getpid());
	f = fopen(path, "wb");
	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	memset(&sc, 0, sizeof(sc));
	sc.chunk_size = 4;
	if (make_reader(&r, &err) < 0)
		return 0;
	if (r.open(r.state, &sc, NULL, &err) == 0) {
		for (int i = 0; i < 100000; i++) {
			void *item = NULL;
			int rc;

			cb_error_clear(&err);
			rc = r.read(r.state, NULL, &item, &err);
			if (rc == CB_DONE)
				break;
			if (rc < 0 && rc != CB_EINVAL)
				break;
			if (++steps % 4 == 0) {
				json_t *o = json_object();

				r.update(r.state, o, &err);
				json_decref(o);
			}
			if (steps % 11 == 0 && r.rollback)
				r.rollback(r.state);
		}
	}
	if (r.close)
		r.close(r.state);
	if (r.free)
		r.free(r.state);
	return 0;
}
