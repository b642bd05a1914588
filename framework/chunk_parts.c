/* Filling a chunk step's parts: writers appended without hand-kept counts. */
#include "engine.h"

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
	/* Version 1 ended before the outcome hooks, version 2 before check. */
	return version >= 3 ? sizeof(cb_writer) :
	       version == 2 ? offsetof(cb_writer, check) :
			      offsetof(cb_writer, rollback);
}

size_t cb__reader_size(unsigned int version)
{
	/* Version 1 ended before check. */
	return version >= 2 ? sizeof(cb_reader) : offsetof(cb_reader, check);
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
