/* Filling a chunk step's parts: writers appended without hand-kept counts. */
#include "engine.h"
#include "reserved.h"

#include <stddef.h>
#include <string.h>

size_t cb_list_count(const char *const *list, size_t n)
{
	if (n || !list)
		return n;
	while (list[n])
		n++;
	return n;
}

size_t cb__writer_size(unsigned int version)
{
	/* Version 1 ended before the outcome hooks, 2 before check, 3 before overlap_safe. */
	return version >= 4 ? sizeof(cb_writer) :
	       version == 3 ? offsetof(cb_writer, overlap_safe) :
	       version == 2 ? offsetof(cb_writer, check) :
			      offsetof(cb_writer, rollback);
}

size_t cb__reader_size(unsigned int version)
{
	/* Version 1 ended before check, 2 before overlap_safe. */
	return version >= 3 ? sizeof(cb_reader) :
	       version == 2 ? offsetof(cb_reader, overlap_safe) :
			      offsetof(cb_reader, check);
}

size_t cb__processor_size(unsigned int version)
{
	/* Version 1 ended before open and close. */
	return version >= 2 ? sizeof(cb_processor) : offsetof(cb_processor, open);
}

int cb_chunk_parts_add_writer(cb_chunk_parts *parts, const cb_writer *writer, cb_error *err)
{
	cb_writer *w;
	int rc;

	if (!parts || !writer)
		return cb_error_set(err, CB_EINVAL, "cb_chunk_parts_add_writer: %s is NULL",
				    !parts ? "parts" : "writer");
	rc = cb__version_check(writer->version, CB_WRITER_VERSION, "writer", err);
	if (rc == 0 && !writer->write)
		rc = cb_error_set(err, CB_EINVAL, "writer has no write function");
	if (rc == 0 && parts->nwriters >= CB_MAX_WRITERS)
		rc = cb_error_set(err, CB_EINVAL, "more than %d writers", CB_MAX_WRITERS);
	if (rc < 0) {
		/* The parts steal the writer, also on failure. */
		if (writer->free)
			writer->free(writer->state);
		return cb_error_prefix(err, "writer %zu", parts->nwriters);
	}
	w = &parts->writers[parts->nwriters];
	memset(w, 0, sizeof(*w));
	memcpy(w, writer, cb__writer_size(writer->version));
	parts->nwriters++;
	return 0;
}

int cb__step_connections(int *out, const cb_step_def *def, const cb_params *params, cb_error *err)
{
	long long n = 1;
	int rc = cb__reserved_long(&n, params, "chunk.connections",
				   def->connections ? (long long)def->connections : 1, err);

	/* Each partition runs on its own connection already. */
	*out = rc < 0 || cb__step_partitioned(def) ? 1 : (int)n;
	return rc < 0 ? rc : 0;
}

int cb__parts_overlap_check(const cb_chunk_parts *parts, cb_error *err)
{
	const char *why =
		"chunk.connections=2 needs every part to run on either connection "
		"(overlap_safe: the PostgreSQL keyset reader, upsert and status writers are); use 1";

	if (!parts->reader.overlap_safe)
		return cb_error_set(err, CB_EINVAL, "the reader is not overlap-safe: %s", why);
	for (size_t i = 0; i < parts->nwriters; i++)
		if (!parts->writers[i].overlap_safe)
			return cb_error_set(err, CB_EINVAL, "writer %zu is not overlap-safe: %s", i,
					    why);
	return 0;
}
