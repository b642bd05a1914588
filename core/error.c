/* The error object: first error wins, fixed buffers, no allocation. */
#include "cbatch/error.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "text.h"

void cb_error_clear(cb_error *err)
{
	if (!err)
		return;
	err->code = 0;
	err->sqlstate[0] = '\0';
	err->message[0] = '\0';
}

/* Messages are one line: a newline from libpq or a user string would break logs. */
static void flatten(char *s)
{
	size_t n = strlen(s);

	while (n > 0 && (s[n - 1] == '\n' || s[n - 1] == '\r' || s[n - 1] == ' '))
		s[--n] = '\0';
	for (; *s; s++)
		if (*s == '\n' || *s == '\r' || *s == '\t')
			*s = ' ';
}

/*
 * The message is always valid UTF-8, cut only at a character boundary: it goes
 * to the repository (text columns refuse invalid UTF-8: 22021) and to JSON.
 * Formatted into a larger buffer first, so that vsnprintf's own cut (which may
 * split a character) lies beyond what is kept.
 */
static void store(cb_error *err, char *text)
{
	flatten(text);
	cb__utf8_sanitize(err->message, sizeof(err->message), text);
}

int cb_error_set(cb_error *err, int code, const char *fmt, ...)
{
	char text[CB_ERROR_MESSAGE_MAX * 2];
	va_list ap;

	if (!err || err->code != 0)
		return code;
	err->code = code;
	va_start(ap, fmt);
	if (vsnprintf(text, sizeof(text), fmt, ap) < 0)
		text[0] = '\0';
	va_end(ap);
	store(err, text);
	return code;
}

int cb_error_prefix(cb_error *err, const char *fmt, ...)
{
	char prefix[256];
	char old[CB_ERROR_MESSAGE_MAX];
	char text[CB_ERROR_MESSAGE_MAX * 2];
	va_list ap;

	if (!err || err->code == 0)
		return err ? err->code : 0;
	va_start(ap, fmt);
	if (vsnprintf(prefix, sizeof(prefix), fmt, ap) < 0)
		prefix[0] = '\0';
	va_end(ap);
	memcpy(old, err->message, sizeof(old));
	old[sizeof(old) - 1] = '\0';
	if (snprintf(text, sizeof(text), "%s: %s", prefix, old) < 0)
		text[0] = '\0';
	store(err, text);
	return err->code;
}

const char *cb_strcode(int code)
{
	switch (code) {
	case CB_OK:
		return "CB_OK";
	case CB_DONE:
		return "CB_DONE";
	case CB_CHUNK_END:
		return "CB_CHUNK_END";
	case CB_ERROR:
		return "CB_ERROR";
	case CB_ENOMEM:
		return "CB_ENOMEM";
	case CB_EINVAL:
		return "CB_EINVAL";
	case CB_EDB:
		return "CB_EDB";
	case CB_ERETRY:
		return "CB_ERETRY";
	case CB_EFENCED:
		return "CB_EFENCED";
	case CB_ECANCELED:
		return "CB_ECANCELED";
	case CB_ECOMPLETE:
		return "CB_ECOMPLETE";
	case CB_ERUNNING:
		return "CB_ERUNNING";
	case CB_ENOTFOUND:
		return "CB_ENOTFOUND";
	case CB_ENORESTART:
		return "CB_ENORESTART";
	case CB_ESTALE:
		return "CB_ESTALE";
	case CB_ECALLBACK:
		return "CB_ECALLBACK";
	default:
		return "CB_UNKNOWN";
	}
}
