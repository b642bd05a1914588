/**
 * @file params.h
 * Typed job parameters and the job key.
 *
 * A cb_params is an ordered set of named, typed values. Each parameter is
 * identifying (part of the job instance's identity) unless marked otherwise
 * (or its job declares it otherwise: cb_job_declare_param, cb_job_key).
 * Names are unique within a set; adding a name twice is CB_EINVAL.
 *
 * Lifecycle: cb_params_new, any number of cb_params_add_* / cb_params_parse_arg,
 * then reads; cb_params_free releases everything. Strings passed in are copied;
 * strings returned are borrowed and live as long as the cb_params.
 *
 * ## Command-line syntax (cb_params_parse_arg)
 *
 *     [-]NAME[:TYPE]=VALUE
 *
 * TYPE is `string` (the default), `long`, `double` or `date` (YYYY-MM-DD).
 * A leading `-` marks the parameter non-identifying (it is stored with the
 * execution but does not change the job key), as Spring Batch 4 did.
 * NAME is 1..100 characters of [A-Za-z0-9_.-] and starts with a letter or '_'.
 * Examples: `targetDate:date=2026-06-30`, `run.id:long=7`, `-chunk:long=500`.
 *
 * ## Job key (version 1)
 *
 * The job key is the XXH3-128 hash, as 32 lowercase hex digits (the canonical
 * big-endian byte order of XXH128_canonicalFromHash), of this byte string:
 *
 *     "cbatch-job-key:1\n" then, for each identifying parameter sorted by the
 *     bytes of its name: <name> <type> <value> where each of the three is
 *     written as <decimal byte length> ':' <bytes> ';'
 *
 * The type is its name (`string`, `long`, `double`, `date`); the value is in
 * canonical text form: strings as given, longs in plain decimal, doubles as
 * "%.17g" (with -0 written as 0, and nan/inf refused), dates as YYYY-MM-DD.
 * Because every field is length-prefixed, no choice of names or values (with
 * '=', ';', ',', quotes, newlines...) can make two different sets encode alike.
 * An empty identifying set hashes the prefix alone. The version number in the
 * prefix changes if the encoding ever does, so keys are never silently reused.
 */
#ifndef CBATCH_PARAMS_H
#define CBATCH_PARAMS_H

#include <stddef.h>
#include "error.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** Parameter types. The numeric values are stable. */
typedef enum cb_param_type {
	CB_PARAM_STRING = 0,
	CB_PARAM_LONG = 1,
	CB_PARAM_DOUBLE = 2,
	CB_PARAM_DATE = 3
} cb_param_type;

/** Length of a job key string without its terminating NUL. */
#define CB_JOB_KEY_LEN 32
/** Longest parameter name accepted. */
#define CB_PARAM_NAME_MAX 100
/** Longest parameter value (text form) accepted, in bytes. */
#define CB_PARAM_VALUE_MAX 2500

typedef struct cb_params cb_params;

/** Create an empty set. @p out receives a new object; free with cb_params_free. */
int cb_params_new(cb_params **out, cb_error *err);

/** Free the set and all its strings. NULL-safe. */
void cb_params_free(cb_params *p);

/** Deep copy. @p out receives a new object. */
int cb_params_dup(cb_params **out, const cb_params *p, cb_error *err);

/**
 * Add a parameter from its text form, validated for its type.
 * @return 0, CB_EINVAL (bad name, bad value for the type, duplicate name,
 *         value too long, or a NUL/invalid UTF-8 in a string), CB_ENOMEM
 */
int cb_params_add(cb_params *p, const char *name, cb_param_type type, const char *value,
		  int identifying, cb_error *err);

/** Add a string parameter (copied). Same codes as cb_params_add. */
int cb_params_add_string(cb_params *p, const char *name, const char *value, int identifying,
			 cb_error *err);
/** Add a long parameter. Same codes as cb_params_add. */
int cb_params_add_long(cb_params *p, const char *name, long long value, int identifying,
		       cb_error *err);
/** Add a double parameter (finite values only). Same codes as cb_params_add. */
int cb_params_add_double(cb_params *p, const char *name, double value, int identifying,
			 cb_error *err);

/**
 * Parse one command-line argument in the syntax described above and add it.
 * Error messages quote the argument and say what is wrong at which position.
 * @return 0, CB_EINVAL, CB_ENOMEM
 */
int cb_params_parse_arg(cb_params *p, const char *arg, cb_error *err);

/** Number of parameters. */
size_t cb_params_count(const cb_params *p);

/**
 * Read parameter @p i (0 <= i < count, in insertion order). Out-pointers may
 * be NULL; strings are borrowed. @return 0, or CB_ENOTFOUND for a bad index.
 */
int cb_params_at(const cb_params *p, size_t i, const char **name, cb_param_type *type,
		 const char **value, int *identifying);

/** Find by name. @return 0 and fills the outputs, or CB_ENOTFOUND. */
int cb_params_find(const cb_params *p, const char *name, cb_param_type *type, const char **value,
		   int *identifying);

/** Value of a parameter as text (canonical form), or NULL if absent. Borrowed. */
const char *cb_params_get(const cb_params *p, const char *name);

/**
 * Value of a long parameter. @return 0, CB_ENOTFOUND (absent), CB_EINVAL
 * (present but not of type long).
 */
int cb_params_get_long(const cb_params *p, const char *name, long long *out);

/** Remove a parameter by name. @return 0 or CB_ENOTFOUND. */
int cb_params_remove(cb_params *p, const char *name);

/**
 * Mark parameter @p name identifying (@p identifying non-zero) or not; its
 * name, type and value stay. @return 0 or CB_ENOTFOUND.
 */
int cb_params_set_identifying(cb_params *p, const char *name, int identifying);

/** Parse a type name ("string", "long", "double", "date"). @return 0 or CB_EINVAL. */
int cb_param_type_parse(cb_param_type *out, const char *name);

/** The type's name, as stored in batch_job_execution_params.parameter_type. */
const char *cb_param_type_name(cb_param_type type);

/**
 * Compute the job key (see above) into @p out, which must hold
 * CB_JOB_KEY_LEN + 1 bytes. @return 0 or CB_ENOMEM.
 */
int cb_params_job_key(char *out, const cb_params *p, cb_error *err);

/**
 * The canonical encoding that feeds the job key, for tests and debugging.
 * @p out receives a new malloc'd buffer (NUL-terminated, but may contain NULs
 * only if a value did — values never do) and @p len its length; free() it.
 */
int cb_params_canonical(char **out, size_t *len, const cb_params *p, cb_error *err);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
