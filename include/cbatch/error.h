/**
 * @file error.h
 * Return codes and the caller-owned error object.
 *
 * Every cbatch function that can fail returns an int: 0 for success, a positive
 * value for a non-error status (CB_DONE), or one of the negative CB_E* codes.
 * Details go into a cb_error that the caller owns. The first error recorded wins:
 * later cb_error_set calls on an object that already holds an error do not
 * overwrite it, so the root cause survives the unwinding. No allocation happens.
 */
#ifndef CBATCH_ERROR_H
#define CBATCH_ERROR_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Declared here, exported from libcbatch (built with hidden visibility). */
#pragma GCC visibility push(default)

/** Return codes. One sign convention: <0 error, 0 ok, >0 non-error status. */
enum {
	CB_OK = 0,
	CB_DONE = 1,         /**< end of input, or a tasklet that has finished */
	CB_CHUNK_END = 2,    /**< a reader ends this chunk early; input goes on */
	CB_ERROR = -1,       /**< generic failure, details in the cb_error */
	CB_ENOMEM = -2,      /**< out of memory */
	CB_EINVAL = -3,      /**< invalid argument, parameter or input */
	CB_EDB = -4,         /**< database error (SQLSTATE in the cb_error) */
	CB_ERETRY = -5,      /**< transient database error (40001, 40P01, 55P03): retry */
	CB_EFENCED = -6,     /**< this execution lost its lock (fencing token) */
	CB_ECANCELED = -7,   /**< stopped on request */
	CB_ECOMPLETE = -8,   /**< job instance already completed */
	CB_ERUNNING = -9,    /**< job instance has a live execution / lock held */
	CB_ENOTFOUND = -10,  /**< no such job, execution or object */
	CB_ENORESTART = -11, /**< instance cannot be restarted (abandoned, not restartable) */
	CB_ESTALE = -12,     /**< optimistic version check failed */
	CB_ECALLBACK = -13   /**< a user callback failed */
};

#define CB_ERROR_MESSAGE_MAX 512

/**
 * Error details. Embed it anywhere (stack, struct); initialise with
 * CB_ERROR_INIT or cb_error_clear. Not thread-safe: use one per thread.
 */
typedef struct cb_error {
	int code;                           /**< the CB_E* code, 0 if none */
	char sqlstate[6];                   /**< SQLSTATE for CB_EDB / CB_ERETRY, else "" */
	char message[CB_ERROR_MESSAGE_MAX]; /**< one line, names the input */
} cb_error;

#define CB_ERROR_INIT                                                                              \
	{                                                                                          \
		0, "", ""                                                                          \
	}

/** Reset @p err to "no error". NULL-safe. */
void cb_error_clear(cb_error *err);

/**
 * Record an error unless @p err already holds one (first error wins).
 * @param err  may be NULL (the code is still returned)
 * @param code a negative CB_E* code
 * @param fmt  printf format of a one-line message; newlines are replaced by spaces.
 *             The stored message is always valid UTF-8: invalid bytes (raw input,
 *             a field cut in the middle of a character) become U+FFFD, and a
 *             message too long for the buffer is cut at a character boundary.
 * @return @p code, so that `return cb_error_set(err, CB_EINVAL, ...)` reads well
 */
int cb_error_set(cb_error *err, int code, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;

/**
 * Add context in front of an existing message ("step 'load': <message>").
 * Does nothing if @p err holds no error. Returns the error's code. The result
 * is valid UTF-8, as with cb_error_set.
 */
int cb_error_prefix(cb_error *err, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 2, 3)))
#endif
	;

/** A static, human-readable name for a return code ("CB_EINVAL"). */
const char *cb_strcode(int code);

#pragma GCC visibility pop

#ifdef __cplusplus
}
#endif
#endif
