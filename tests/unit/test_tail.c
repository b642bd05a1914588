/*
 * The tail of a run's output (core/tail.h): the last bytes up to the cap,
 * whatever the sizes of the pieces appended; the bytes cut from the head
 * counted; the text made valid UTF-8 (NUL too); the last line that says
 * something.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

#include "cbtest.h"
#include "tail.h"

#define FFFD "\xEF\xBF\xBD"

static void test_keeps_the_last_bytes_in_any_pieces(void)
{
	/* Pieces of 1..7 bytes of a known stream, through a ring of 10. */
	char stream[200], want[11];
	size_t n = 0;
	cb__tail t;
	char *text;

	for (size_t i = 0; i < sizeof(stream); i++)
		stream[i] = (char)('a' + i % 26);
	cb__tail_init(&t, 10);
	for (size_t k = 1; n < 123; k = k % 7 + 1) {
		size_t piece = n + k > 123 ? 123 - n : k;

		cb__tail_append(&t, stream + n, piece);
		n += piece;
	}
	memcpy(want, stream + 113, 10);
	want[10] = '\0';
	CBT_EQ_LL(t.total, 123);
	CBT_EQ_LL(cb__tail_dropped(&t), 113);
	CBT_EQ_LL(t.dirty, 1);
	text = cb__tail_text(&t);
	CBT_EQ_STR(text, want);
	CBT_EQ_LL(t.dirty, 0);
	free(text);
	/* One piece larger than the ring: its end only. */
	cb__tail_append(&t, stream, 25);
	text = cb__tail_text(&t);
	memcpy(want, stream + 15, 10);
	CBT_EQ_STR(text, want);
	CBT_EQ_LL(cb__tail_dropped(&t), 138);
	free(text);
	cb__tail_free(&t);
}

static void test_text_is_valid_utf8(void)
{
	cb__tail t;
	char *text;

	cb__tail_init(&t, 0);
	cb__tail_append(&t, "ok \xFF\x00 caf\xC3\xA9\n", 12);
	text = cb__tail_text(&t);
	CBT_EQ_STR(text, "ok " FFFD FFFD " caf\xC3\xA9\n");
	CBT_EQ_LL(cb__tail_dropped(&t), 0);
	free(text);
	cb__tail_free(&t);
}

static void test_last_line_says_something(void)
{
	char line[64];
	cb__tail t;

	cb__tail_init(&t, 0);
	cb__tail_last_line(line, sizeof(line), &t);
	CBT_EQ_STR(line, "");
	cb__tail_append(&t, "first\nprog: job 'x' has no parameter 'bogus'\n\n  \n", 49);
	cb__tail_last_line(line, sizeof(line), &t);
	CBT_EQ_STR(line, "prog: job 'x' has no parameter 'bogus'");
	cb__tail_append(&t, "no newline", 10);
	cb__tail_last_line(line, sizeof(line), &t);
	CBT_EQ_STR(line, "no newline");
	cb__tail_free(&t);
}

static const CU_TestInfo tests[] = {
	{ "keeps the last bytes in any pieces", test_keeps_the_last_bytes_in_any_pieces },
	{ "text is valid UTF-8", test_text_is_valid_utf8 },
	{ "last line says something", test_last_line_says_something },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("tail", NULL, NULL, tests);
}
