/* The argument helpers that the commands share: ids, positive numbers, flags. */
#include "cli_internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "text.h"

/* A positive decimal integer, as execution ids are. @return 0 or -1. */
int cb__cli_parse_positive(long long *out, const char *s)
{
	long long v = 0;
	const char *p = s;

	if (!*p)
		return -1;
	for (; *p; p++) {
		if (*p < '0' || *p > '9')
			return -1;
		if (v > (LLONG_MAX - (*p - '0')) / 10)
			return -1;
		v = v * 10 + (*p - '0');
	}
	if (v <= 0)
		return -1;
	*out = v;
	return 0;
}

/* An argument that reaches the repository must be valid UTF-8 (text columns
 * refuse anything else): invalid input, exit 2. @return 0 or the exit code. */
int cb__cli_text_arg(struct cli *c, const char *what, const char *arg)
{
	char shown[400];

	if (!arg || cb__utf8_valid(arg))
		return 0;
	return cb__cli_usage_error(c, "%s: %s '%.100s' is not valid UTF-8", c->argv[0], what,
				   cb__cli_term(shown, sizeof(shown), arg));
}

/* Parse an execution id argument; a usage error names it. */
int cb__cli_parse_id(struct cli *c, long long *out, const char *arg)
{
	if (cb__cli_parse_positive(out, arg) == 0)
		return 0;
	return cb__cli_usage_error(
		c, "%s: invalid execution id '%.100s' (expected a positive integer)", c->argv[0],
		arg);
}

/*
 * Split the command's arguments into positionals (into @p pos, which holds
 * c->argc entries) and the options in @p flags (NULL-terminated names such as
 * "--next"; a name ending in '=' takes a value: "--limit=" accepts both
 * "--limit N" and "--limit=N"). Values go to @p values[i] (flags get "1").
 * `--` ends the options. @return 0, or the exit code of a reported usage error.
 */
int cb__cli_split_args(struct cli *c, const char **pos, size_t *npos, const char *const *flags,
		       const char **values)
{
	int i, done = 0;

	*npos = 0;
	for (i = 1; i < c->argc; i++) {
		const char *a = c->argv[i];
		size_t f;
		int matched = 0;

		if (done || strncmp(a, "--", 2) != 0) {
			/* Includes "-name=value": a non-identifying parameter. */
			pos[(*npos)++] = a;
			continue;
		}
		if (a[2] == '\0') {
			done = 1;
			continue;
		}
		for (f = 0; flags && flags[f] && !matched; f++) {
			const char *fl = flags[f];
			size_t fn = strlen(fl);

			if (fl[fn - 1] != '=') {
				if (strcmp(a, fl) == 0) {
					values[f] = "1";
					matched = 1;
				}
			} else if (strncmp(a, fl, fn - 1) == 0 && a[fn - 1] == '\0') {
				if (i + 1 >= c->argc)
					return cb__cli_usage_error(
						c, "%s: option '%s' needs a value", c->argv[0], a);
				values[f] = c->argv[++i];
				matched = 1;
			} else if (strncmp(a, fl, fn) == 0) {
				values[f] = a + fn;
				matched = 1;
			}
		}
		if (!matched)
			return cb__cli_usage_error(
				c, "%s: unknown option '%.100s' (see '%s %s --help')", c->argv[0],
				a, c->prog, c->argv[0]);
	}
	return 0;
}

/* Exactly one execution id argument, and the options in @p flags. */
int cb__cli_one_id_with(struct cli *c, long long *id, const char *const *flags, const char **values)
{
	const char **pos;
	size_t npos;
	int rc;

	pos = calloc((size_t)c->argc, sizeof(*pos));
	if (!pos)
		return cb__cli_out_of_memory(c);
	rc = cb__cli_split_args(c, pos, &npos, flags, values);
	if (rc == 0 && npos != 1)
		rc = cb__cli_usage_error(c, "%s: %s (usage: %s %s EXECUTION_ID)", c->argv[0],
					 npos ? "expected one EXECUTION_ID" :
						"missing EXECUTION_ID",
					 c->prog, c->argv[0]);
	else if (rc == 0)
		rc = cb__cli_parse_id(c, id, pos[0]);
	free(pos);
	return rc;
}

int cb__cli_one_id(struct cli *c, long long *id)
{
	return cb__cli_one_id_with(c, id, NULL, NULL);
}

/* No arguments after the command name. */
int cb__cli_no_args(struct cli *c)
{
	if (c->argc > 1)
		return cb__cli_usage_error(c, "%s: unexpected argument '%.100s'", c->argv[0],
					   c->argv[1]);
	return 0;
}

/* Whether @p word is one of the space-separated words of @p list. */
int cb__cli_word_in(const char *list, const char *word)
{
	size_t n = strlen(word);

	for (const char *p = list; p && *p;) {
		size_t k = strcspn(p, " ");

		if (k == n && strncmp(p, word, n) == 0)
			return 1;
		p += k;
		while (*p == ' ')
			p++;
	}
	return 0;
}
