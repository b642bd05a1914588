/*
 * What the CSV tests share (csv_kit.c): the scratch directory (suite init and
 * cleanup), files in it, a step context, a reader opened by hand.
 */
#ifndef CSV_KIT_H
#define CSV_KIT_H

#include <stddef.h>

#include "cbatch/readers.h"
#include "cbatch/writers.h"

#include "cbtest.h"
#include "step_context.h"

/* The scratch directory of the program (init makes it, clean removes it). */
extern char dir[4096];
int init(void);
int clean(void);

/* dir/@p name (one of four rotating buffers). */
const char *path_of(const char *name);
void write_file(const char *path, const char *data, size_t len);
void write_str(const char *path, const char *s);
/* The size of @p path, or -1 if it is missing. */
long long file_size(const char *path);
/* A step context for driving readers and writers by hand. */
struct cb_step_context step(size_t chunk_size);

/* Open a reader over @p o's path; fatal on failure. */
void open_reader(cb_reader *r, cb_csv_options *o, const json_t *saved);
void close_reader(cb_reader *r);

#endif
