/*
 * Text that leaves the process: the UTF-8 sanitizer (and the error object's
 * messages built on it), terminal escapes, and password redaction.
 */
#include <stdio.h>
#include <string.h>

#include <cbatch.h>

#include "cbtest.h"
#include "text.h"

static void sane(const char *in, const char *want)
{
	char out[256];

	cb__utf8_sanitize(out, sizeof(out), in);
	CBT_EQ_STR(out, want);
	CU_ASSERT(cb__utf8_valid(out));
}

#define FFFD "\xEF\xBF\xBD"

static void test_sanitizer_keeps_valid_text(void)
{
	sane("", "");
	sane("plain ascii", "plain ascii");
	sane("caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xED\x9F\xBF \xF4\x8F\xBF\xBF",
	     "caf\xC3\xA9 \xE2\x82\xAC \xF0\x9F\x98\x80 \xED\x9F\xBF \xF4\x8F\xBF\xBF");
	CU_ASSERT(cb__utf8_valid("\xEA\xB0\x80\xEB\x82\x98"));
}

static void test_sanitizer_replaces_invalid_sequences(void)
{
	/* A character cut at the end, and in the middle. */
	sane("ab\xE2\x82", "ab" FFFD);
	sane("a\xE2\x82z", "a" FFFD "z");
	sane("\xF0\x9F\x98", FFFD);
	/* Lone continuation bytes, 0xFF, 0xFE, 0xC0/0xC1 leads. */
	sane("\x80\xBF", FFFD FFFD);
	sane("x\xFF\xFEy", "x" FFFD FFFD "y");
	/* Overlongs: '/' as C0 AF and E0 80 AF, NUL as C0 80. */
	sane("\xC0\xAF", FFFD FFFD);
	sane("\xE0\x80\xAF", FFFD FFFD FFFD);
	/* Surrogates U+D800 and U+DFFF (CESU-8), above U+10FFFF. */
	sane("\xED\xA0\x80", FFFD FFFD FFFD);
	sane("\xED\xBF\xBF", FFFD FFFD FFFD);
	sane("\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD);
	sane("\xF5\x80", FFFD FFFD);
	CU_ASSERT(!cb__utf8_valid("ok\xFF"));
	CU_ASSERT(!cb__utf8_valid("\xED\xA0\x80"));
}

static void test_sanitizer_cuts_at_character_boundaries(void)
{
	char out[6];

	/* "ab€€": the second € (bytes 5..7) does not fit in 5 bytes + NUL. */
	CBT_EQ_LL(cb__utf8_sanitize(out, sizeof(out), "ab\xE2\x82\xAC\xE2\x82\xAC"), 5);
	CBT_EQ_STR(out, "ab\xE2\x82\xAC");
	CBT_EQ_LL(cb__utf8_sanitize(out, 3, "\xC3\xA9\xC3\xA9"), 2);
	CBT_EQ_LL(cb__utf8_sanitize(out, 2, "\xC3\xA9"), 0);
	CBT_EQ_STR(out, "");
}

static void test_error_messages_are_valid_utf8(void)
{
	cb_error err = CB_ERROR_INIT;
	char big[CB_ERROR_MESSAGE_MAX * 3];
	size_t i;

	/* A field cut at 40 bytes in the middle of a character, as "%.40s" does. */
	cb_error_set(&err, CB_EINVAL, "row 7: bad name '%.3s'", "ab\xC3\xA9");
	CBT_EQ_STR(err.message, "row 7: bad name 'ab" FFFD "'");
	cb_error_clear(&err);
	cb_error_set(&err, CB_EINVAL, "raw bytes %s from a file", "\xFF\xFE\x00");
	CBT_EQ_STR(err.message, "raw bytes " FFFD FFFD " from a file");
	cb_error_prefix(&err, "file '%s'", "x\xE2");
	CBT_EQ_STR(err.message, "file 'x" FFFD "': raw bytes " FFFD FFFD " from a file");

	/* Too long: cut before a character, never inside one. */
	for (i = 0; i + 2 < sizeof(big); i += 2)
		memcpy(big + i, "\xC3\xA9", 2);
	big[i] = '\0';
	cb_error_clear(&err);
	cb_error_set(&err, CB_EINVAL, "%s", big);
	CU_ASSERT(cb__utf8_valid(err.message));
	CBT_EQ_LL(strlen(err.message), CB_ERROR_MESSAGE_MAX - 2);
	cb_error_prefix(&err, "step '%s'", "load");
	CU_ASSERT(cb__utf8_valid(err.message));
	CU_ASSERT(strlen(err.message) >= CB_ERROR_MESSAGE_MAX - 2);
}

static void esc(const char *in, const char *want)
{
	char out[256];

	cb__term_escape(out, sizeof(out), in);
	CBT_EQ_STR(out, want);
}

static void test_terminal_escapes(void)
{
	esc("plain caf\xC3\xA9", "plain caf\xC3\xA9");
	esc("a\nb\rc\td", "a\\nb\\rc\\td");
	esc("\x1b[31mred\x1b[0m", "\\x1B[31mred\\x1B[0m");
	esc("\x01\x7f", "\\x01\\x7F");
	esc("c1 \xC2\x85 \xC2\x9B", "c1 \\u0085 \\u009B");
	esc("\xE2\x80\xAE rtl \xE2\x80\xA8 \xE2\x81\xA6", "\\u202E rtl \\u2028 \\u2066");
	esc("bad \xFF", "bad " FFFD);
	/* A forged row: the newline cannot start a line of its own. */
	esc("x\nmylock  root  1  60.0s  held", "x\\nmylock  root  1  60.0s  held");
	{
		char out[5];

		/* An escape is never cut in half. */
		CBT_EQ_LL(cb__term_escape(out, sizeof(out), "ab\x1b"), 2);
		CBT_EQ_STR(out, "ab");
	}
}

static void red(const char *in, const char *want)
{
	char out[512];

	cb__redact_secrets(out, sizeof(out), in);
	CBT_EQ_STR(out, want);
}

static void test_redaction(void)
{
	red("host=db password=s3cret user=u", "host=db password=*** user=u");
	red("host=db password = 's3 c\\'ret' user=u", "host=db password = *** user=u");
	red("password='a b'", "password=***");
	red("PASSWORD=x sslpassword=y", "PASSWORD=*** sslpassword=***");
	red("postgresql://alice:s3cret@db.example/app", "postgresql://alice:***@db.example/app");
	red("postgres://alice:s%40c:r@h:5432/d", "postgres://alice:***@h:5432/d");
	red("postgresql://alice@h/d?sslmode=require&password=s3cret&x=1",
	    "postgresql://alice@h/d?sslmode=require&password=***");
	red("URI: \"postgresql://u:secret@[::1/db\"", "URI: \"postgresql://u:***@[::1/db\"");
	/* No password: unchanged. */
	red("postgresql://h:5432/db", "postgresql://h:5432/db");
	red("fe_sendauth: no password supplied", "fe_sendauth: no password supplied");
	red("password authentication failed for user \"u\"",
	    "password authentication failed for user \"u\"");
	{
		char buf[64] = "x password=topsecret";

		cb__redact_secrets_inplace(buf, sizeof(buf));
		CBT_EQ_STR(buf, "x password=***");
	}
}

static void test_secret_in_message(void)
{
	/* libpq's own messages for these strings */
	CU_ASSERT(cb__conninfo_secret_in("postgresql://u:Secret%zz@h/db",
					 "invalid percent-encoded token: \"Secret%zz\""));
	CU_ASSERT(cb__conninfo_secret_in("postgresql://u:p%40ssword%zz@h/db",
					 "invalid percent-encoded token: \"p@ssword%zz\""));
	CU_ASSERT(cb__conninfo_secret_in("postgresql://u:Sec@ret@h/db",
					 "could not translate host name \"ret@h\" to address"));
	CU_ASSERT(cb__conninfo_secret_in("postgresql://u@h/db?password=Secr%zzet&x=1",
					 "invalid percent-encoded token: \"Secr%zzet\""));
	CU_ASSERT(
		cb__conninfo_secret_in("host=h password='pa ss\\'wd' port=x", "... pa ss'wd ..."));
	CU_ASSERT(cb__conninfo_secret_in("host=h password='pa ss\\'wd' port=x", "... ss\\'w ..."));
	CU_ASSERT(cb__conninfo_secret_in("PASSWORD = abc", "said abc"));
	CU_ASSERT(cb__conninfo_secret_in("sslpassword=keypass1", "bad keyp"));
	/* no password, or none of it quoted */
	CU_ASSERT(!cb__conninfo_secret_in("postgresql://u@h:xx/db",
					  "invalid integer value \"xx\" for connection option "
					  "\"port\""));
	CU_ASSERT(!cb__conninfo_secret_in("host=h password=Secret port=xx",
					  "invalid integer value \"xx\" for connection option "
					  "\"port\""));
	CU_ASSERT(!cb__conninfo_secret_in("postgresql://u:Secret@h/db?sslmode=bogus",
					  "invalid sslmode value: \"bogus\""));
	CU_ASSERT(!cb__conninfo_secret_in(NULL, "x"));
}

static const CU_TestInfo tests[] = {
	{ "sanitizer keeps valid text", test_sanitizer_keeps_valid_text },
	{ "sanitizer replaces invalid sequences", test_sanitizer_replaces_invalid_sequences },
	{ "sanitizer cuts at character boundaries", test_sanitizer_cuts_at_character_boundaries },
	{ "error messages are valid UTF-8", test_error_messages_are_valid_utf8 },
	{ "terminal escapes", test_terminal_escapes },
	{ "password redaction", test_redaction },
	{ "a password quoted by a message", test_secret_in_message },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("text", NULL, NULL, tests);
}
