/*
 * Text that leaves the process (internal): valid UTF-8 for the repository and
 * JSON, control characters escaped for a terminal, passwords redacted from
 * anything that can hold a connection string.
 */
#ifndef CB_FRAMEWORK_TEXT_H
#define CB_FRAMEWORK_TEXT_H

#include <stddef.h>

/*
 * Length of the well-formed UTF-8 sequence at @p s (RFC 3629: no overlongs,
 * no surrogates, nothing above U+10FFFF) as a positive number; or, if it is
 * not one, minus the length of its maximal invalid subpart (at least 1), the
 * unit that one U+FFFD replaces. @p s is NUL-terminated; "" gives 0.
 */
int cb__utf8_next(const char *s);

/* Non-zero if @p s is entirely valid UTF-8. */
int cb__utf8_valid(const char *s);

/*
 * Copy @p in into @p out (@p size > 0 bytes) as valid UTF-8: each invalid
 * subpart becomes U+FFFD; the copy is cut only at a character boundary to fit.
 * @p out and @p in must not overlap. @return the length written.
 */
size_t cb__utf8_sanitize(char *out, size_t size, const char *in);

/*
 * As cb__utf8_sanitize, and control characters (C0, DEL, C1) are escaped for
 * a terminal: \n \r \t as such, others as \xHH (C0, DEL) or \u00HH (C1), so
 * that a value can neither break a line nor move the cursor. An escape is
 * never cut in half. @return the length written.
 */
size_t cb__term_escape(char *out, size_t size, const char *in);

/*
 * Copy @p in into @p out with passwords replaced by "***": the value of
 * every `password=` (key/value conninfo, quoted or not, or a URI's query
 * parameter; spaces around '=' allowed) and the password of a
 * postgres[ql]:// URI's user info. Errs on the side of hiding too much.
 * Cut to fit @p size. @return the length written.
 */
size_t cb__redact_secrets(char *out, size_t size, const char *in);

/* In place: redact @p s (a buffer of @p size bytes holding a string). */
void cb__redact_secrets_inplace(char *s, size_t size);

/*
 * Does @p msg quote any part of a password that the connection string
 * @p conninfo carries? libpq's messages quote fragments that no pattern
 * can recognise ("invalid percent-encoded token: \"Secret%zz\"", a host
 * name made of a password's tail after a raw '@'), so the question is asked
 * of the message: every password of @p conninfo (a URI's user info, raw and
 * percent-decoded; each `password=` value, quoted with escapes or not, also
 * a URI's query parameter) is looked for whole when shorter than 4 bytes,
 * else as each run of 4 bytes, also each piece between '@'s. Errs on the
 * side of yes.
 */
int cb__conninfo_secret_in(const char *conninfo, const char *msg);

#endif
