/*
 * One command table, five readers that never disagree: `--help` (the general
 * help and each command's), the command list of docs/running-jobs.md, the manual page
 * cbatch(1) and the bash completion that the build writes with `cbatch help
 * --format man|bash`. Each must name exactly the table's commands, their
 * options (and the global ones), and the page its exit codes; the page reads
 * without groff warnings; the completion, run in bash, completes commands,
 * options and fixed values (names and ids from a database: the integration
 * test completion). No database.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cbtest.h"
#include "cli_internal.h"

static char out[262144], errout[65536];

/* ---- sets of words, compared as their sorted, space-joined text --------- */

#define MAX_WORDS 128

struct words {
	char w[MAX_WORDS][64];
	size_t n;
};

static void add(struct words *s, const char *w, size_t n)
{
	if (n == 0 || n >= sizeof(s->w[0]) || s->n == MAX_WORDS)
		return;
	for (size_t i = 0; i < s->n; i++)
		if (strlen(s->w[i]) == n && strncmp(s->w[i], w, n) == 0)
			return;
	memcpy(s->w[s->n], w, n);
	s->w[s->n++][n] = '\0';
}

static int cmp(const void *a, const void *b)
{
	return strcmp(a, b);
}

/* The set as text, "a b c": what the assertions compare and print. */
static const char *joined(struct words *s, char *buf, size_t size)
{
	size_t len = 0;

	qsort(s->w, s->n, sizeof(s->w[0]), cmp);
	buf[0] = '\0';
	for (size_t i = 0; i < s->n && len + 1 < size; i++)
		len += (size_t)snprintf(buf + len, size - len, "%s%s", i ? " " : "", s->w[i]);
	return buf;
}

#define SAME(what, a, b)                                                                           \
	do {                                                                                       \
		char ja_[4096], jb_[4096];                                                         \
		if (strcmp(joined((a), ja_, sizeof(ja_)), joined((b), jb_, sizeof(jb_))) != 0)     \
			CBT_FAILF("%s: [%s], the table: [%s]", (what), ja_, jb_);                  \
	} while (0)

/* Every "--option" of the @p n bytes at @p text. */
static void add_options(struct words *s, const char *text, size_t n)
{
	for (const char *p = text; (p = strstr(p, "--")) != NULL && p < text + n;) {
		size_t k = 2;

		while (p + k < text + n &&
		       ((p[k] >= 'a' && p[k] <= 'z') || (p[k] == '-' && p[k + 1] != '-')))
			k++;
		if (k > 2 && (p == text || p[-1] != '-'))
			add(s, p, k);
		p += k;
	}
}

/* ---- the table ------------------------------------------------------------ */

static void table_commands(struct words *s)
{
	for (size_t i = 0; i < CB__NBUILTINS; i++)
		add(s, cb__builtin_name(cb__cli_builtins[i].id),
		    strlen(cb__builtin_name(cb__cli_builtins[i].id)));
}

/* The options of @p b: all of them (@p sub "*"), its own (NULL) or a
 * sub-command's. */
static void table_options(struct words *s, const struct cb__cli_option *o, const char *sub)
{
	for (; o && o->name; o++)
		if ((sub && strcmp(sub, "*") == 0) ||
		    (sub ? o->sub && cb__cli_word_in(o->sub, sub) : !o->sub))
			add(s, o->name, strlen(o->name));
}

static const struct cb__cli_builtin *builtin(const char *name)
{
	const struct cb__cli_builtin *b = cb__cli_builtin_find(name);

	if (!b)
		CBT_FAILF("no command '%s' in the table", name);
	return b;
}

static char *doc(const char *file)
{
	char path[4096], *text;

	snprintf(path, sizeof(path), "%s/%s", getenv("CBATCH_TEST_DOC_DIR"), file);
	text = cbt_slurp(path, NULL);
	if (!text)
		CBT_FAILF("cannot read %s (built by the target cbatch_docs)", path);
	return text;
}

/* ---- --help ---------------------------------------------------------------- */

/* The first words of the lines "  word ..." after the line @p title, up to
 * the next empty line; lines indented deeper continue the one before. */
static void section_words(struct words *s, const char *text, const char *title)
{
	const char *p = strstr(text, title);

	if (!p) {
		CBT_FAILF("no '%s' in the help", title);
		return;
	}
	for (p += strlen(title); *p && *p != '\n';) {
		size_t n = strcspn(p, "\n");

		if (strncmp(p, "  ", 2) == 0 && p[2] != ' ')
			add(s, p + 2, strcspn(p + 2, " \n"));
		p += n + (p[n] == '\n');
	}
}

static int run_cli(const char *a, const char *b, const char *c)
{
	const char *argv[] = { cbt_cli_bin(), a, b, c, NULL };

	return cbt_run(argv, out, sizeof(out), errout, sizeof(errout));
}

static void test_help_names_the_table(void)
{
	struct words got = { 0 }, want = { 0 };

	CBT_EQ_LL(run_cli("--help", NULL, NULL), 0);
	section_words(&got, out, "\nCommands:\n");
	table_commands(&want);
	SAME("--help's commands", &got, &want);
	memset(&got, 0, sizeof(got));
	memset(&want, 0, sizeof(want));
	section_words(&got, out, "\nGlobal options (before or after the command):\n");
	table_options(&want, cb__cli_global_options, NULL);
	SAME("--help's global options", &got, &want);
	for (size_t i = 0; i < CB__NBUILTINS; i++) {
		const struct cb__cli_builtin *b = &cb__cli_builtins[i];
		const char *name = cb__builtin_name(b->id);
		char what[128];

		memset(&got, 0, sizeof(got));
		memset(&want, 0, sizeof(want));
		CBT_EQ_LL(run_cli(name, "--help", NULL), 0);
		if (strstr(out, "\nOptions:\n"))
			section_words(&got, out, "\nOptions:\n");
		table_options(&want, b->options, "*");
		snprintf(what, sizeof(what), "%s --help's options", name);
		SAME(what, &got, &want);
	}
}

/* ---- the command list (docs/running-jobs.md) ------------------------------------------------------------ */

static void test_readme_names_the_table(void)
{
	char path[4096], *text, *a, *b;
	struct words cmds = { 0 }, want = { 0 }, globals = { 0 };
	struct words opts[CB__NBUILTINS];
	int cur = -1;

	memset(opts, 0, sizeof(opts));
	snprintf(path, sizeof(path), "%s/docs/running-jobs.md", cbt_source_dir());
	text = cbt_slurp(path, NULL);
	a = text ? strstr(text, "# Running jobs\n") : NULL;
	a = a ? strstr(a, "\n```\n") : NULL;
	b = a ? strstr(a + 5, "\n```\n") : NULL;
	if (!a || !b) {
		CBT_FAILF("docs/running-jobs.md: no code block under '# Running jobs'");
		free(text);
		return;
	}
	*b = '\0';
	a += 5;
	/* The first line: the program and its global options. */
	add_options(&globals, a, strcspn(a, "\n"));
	for (const char *l = a + strcspn(a, "\n"); *l;) {
		size_t n;

		l += *l == '\n';
		n = strcspn(l, "\n");
		if (strncmp(l, "  ", 2) == 0 && l[2] >= 'a' && l[2] <= 'z') {
			size_t k = strcspn(l + 2, " \n");
			char word[64];

			snprintf(word, sizeof(word), "%.*s", (int)k, l + 2);
			/* Another program's own command (example-setup) is not the table's. */
			cur = cb__builtin_find(word);
			if (cur >= 0)
				add(&cmds, word, k);
		}
		if (cur >= 0 && strncmp(l, "  ", 2) == 0)
			add_options(&opts[cur], l, n);
		l += n;
	}
	/* A command's line may mention a global option (metrics: --json). */
	for (size_t i = 0; i < CB__NBUILTINS; i++) {
		struct words own = { 0 };

		for (size_t k = 0; k < opts[i].n; k++) {
			size_t g = 0;

			while (cb__cli_global_options[g].name &&
			       strcmp(cb__cli_global_options[g].name, opts[i].w[k]) != 0)
				g++;
			if (!cb__cli_global_options[g].name)
				add(&own, opts[i].w[k], strlen(opts[i].w[k]));
		}
		opts[i] = own;
	}
	table_commands(&want);
	SAME("docs/running-jobs.md's commands", &cmds, &want);
	memset(&want, 0, sizeof(want));
	table_options(&want, cb__cli_global_options, NULL);
	SAME("docs/running-jobs.md's global options", &globals, &want);
	for (size_t i = 0; i < CB__NBUILTINS; i++) {
		const struct cb__cli_builtin *bi = builtin(cb__builtin_name((int)i));
		char what[128];

		memset(&want, 0, sizeof(want));
		table_options(&want, bi->options, "*");
		snprintf(what, sizeof(what), "docs/running-jobs.md's options of %s",
			 cb__builtin_name((int)i));
		SAME(what, &opts[i], &want);
	}
	free(text);
}

/* ---- the manual page ------------------------------------------------------- */

/* "\fB\-\-lease\fR ..." → "--lease" into @p s. */
static void add_roff_option(struct words *s, const char *line)
{
	char w[64];
	size_t n = 0;

	if (strncmp(line, "\\fB\\-\\-", 7) != 0)
		return;
	for (const char *p = line + 3; *p && strncmp(p, "\\fR", 3) != 0 && n + 1 < sizeof(w); p++)
		if (*p != '\\')
			w[n++] = *p;
	add(s, w, n);
}

static void test_man_page_names_the_table(void)
{
	char *page = doc("cbatch.1");
	struct words cmds = { 0 }, globals = { 0 }, codes = { 0 }, want = { 0 };
	struct words opts[CB__NBUILTINS];
	const char *section = "";
	int cur = -1, after_tp = 0;
	const char *argv[] = { "groff", "-man", "-ww", "-z", NULL, NULL };
	char path[4096];

	if (!page)
		return;
	memset(opts, 0, sizeof(opts));
	for (char *l = strtok(page, "\n"); l; l = strtok(NULL, "\n")) {
		if (strncmp(l, ".SH ", 4) == 0) {
			section = l + 4;
			cur = -1;
		} else if (strcmp(section, "COMMANDS") == 0 && strncmp(l, ".SS \"", 5) == 0) {
			add(&cmds, l + 5, strcspn(l + 5, "\""));
			l[5 + strcspn(l + 5, "\"")] = '\0';
			cur = cb__builtin_find(l + 5);
		} else if (after_tp && cur >= 0) {
			add_roff_option(&opts[cur], l);
		} else if (after_tp && strcmp(section, "\"GLOBAL OPTIONS\"") == 0) {
			add_roff_option(&globals, l);
		} else if (after_tp && strcmp(section, "\"EXIT STATUS\"") == 0 &&
			   strncmp(l, ".B ", 3) == 0) {
			add(&codes, l + 3, strlen(l + 3));
		}
		after_tp = strcmp(l, ".TP") == 0;
	}
	free(page);
	table_commands(&want);
	SAME("the manual page's commands", &cmds, &want);
	memset(&want, 0, sizeof(want));
	table_options(&want, cb__cli_global_options, NULL);
	SAME("the manual page's global options", &globals, &want);
	for (size_t i = 0; i < CB__NBUILTINS; i++) {
		char what[128];

		memset(&want, 0, sizeof(want));
		table_options(&want, builtin(cb__builtin_name((int)i))->options, "*");
		snprintf(what, sizeof(what), "the manual page's options of %s",
			 cb__builtin_name((int)i));
		SAME(what, &opts[i], &want);
	}
	memset(&want, 0, sizeof(want));
	for (size_t i = 0; cb__cli_exit_codes[i].meaning; i++) {
		char n[16];

		add(&want, n, (size_t)snprintf(n, sizeof(n), "%d", cb__cli_exit_codes[i].code));
	}
	SAME("the manual page's exit codes", &codes, &want);
	/* It reads without a warning (groff-base is a test dependency). */
	snprintf(path, sizeof(path), "%s/cbatch.1", getenv("CBATCH_TEST_DOC_DIR"));
	argv[4] = path;
	CBT_EQ_LL(cbt_run(argv, out, sizeof(out), errout, sizeof(errout)), 0);
	CBT_EQ_STR(errout, "");
	snprintf(path, sizeof(path), "%s/docs/man/cbatch-job.7", cbt_source_dir());
	CBT_EQ_LL(cbt_run(argv, out, sizeof(out), errout, sizeof(errout)), 0);
	CBT_EQ_STR(errout, "");
}

/* ---- the completion ---------------------------------------------------------- */

/* The words of the shell variable @p var ("_cbatch_commands='a b'"). */
static void variable_words(struct words *s, const char *script, const char *var)
{
	char key[64];
	const char *p;

	snprintf(key, sizeof(key), "\n%s='", var);
	p = strstr(script, key);
	if (!p) {
		CBT_FAILF("no %s in the completion", var);
		return;
	}
	for (p += strlen(key); *p && *p != '\'';) {
		size_t n = strcspn(p, " '");

		add(s, p, n);
		p += n + (p[n] == ' ');
	}
}

static void test_completion_names_the_table(void)
{
	char *script = doc("cbatch.bash");
	struct words got = { 0 }, want = { 0 }, keys = { 0 }, wantkeys = { 0 };
	const char *fn, *end;

	if (!script)
		return;
	variable_words(&got, script, "_cbatch_commands");
	table_commands(&want);
	SAME("the completion's commands", &got, &want);
	memset(&got, 0, sizeof(got));
	memset(&want, 0, sizeof(want));
	variable_words(&got, script, "_cbatch_global");
	table_options(&want, cb__cli_global_options, NULL);
	SAME("the completion's global options", &got, &want);
	/* _cbatch_options: "'run') echo '--next --lease' ;;", one per command and
	 * per sub-command. */
	fn = strstr(script, "\n_cbatch_options()\n");
	end = fn ? strstr(fn, "\n}\n") : NULL;
	if (!end) {
		CBT_FAILF("no _cbatch_options in the completion");
		free(script);
		return;
	}
	for (const char *l = fn; (l = strstr(l, "\n\t'")) != NULL && l < end;) {
		char key[64], cmd[64];
		const char *q = strstr(l, "') echo '"), *sub;
		const struct cb__cli_builtin *b;

		l += 3;
		if (!q || q - l >= (long)sizeof(key))
			break;
		snprintf(key, sizeof(key), "%.*s", (int)(q - l), l);
		add(&keys, key, strlen(key));
		snprintf(cmd, sizeof(cmd), "%.*s", (int)strcspn(key, " "), key);
		sub = strchr(key, ' ') ? strchr(key, ' ') + 1 : NULL;
		memset(&got, 0, sizeof(got));
		memset(&want, 0, sizeof(want));
		add_options(&got, q, strcspn(q, "\n"));
		if ((b = builtin(cmd)) == NULL)
			continue;
		table_options(&want, b->options, sub);
		{
			char what[128];

			snprintf(what, sizeof(what), "the completion's options of '%s'", key);
			SAME(what, &got, &want);
		}
	}
	for (size_t i = 0; i < CB__NBUILTINS; i++) {
		const char *name = cb__builtin_name(cb__cli_builtins[i].id);
		const char *p = cb__cli_builtins[i].subs;

		add(&wantkeys, name, strlen(name));
		while (p && *p) {
			char key[64];
			size_t n = strcspn(p, " ");

			snprintf(key, sizeof(key), "%s %.*s", name, (int)n, p);
			add(&wantkeys, key, strlen(key));
			p += n + (p[n] == ' ');
		}
	}
	SAME("the completion's commands and sub-commands", &keys, &wantkeys);
	free(script);
}

/* The completion of the line @p words (the last is the word being completed)
 * by the script the build wrote, sorted, one a line; stderr must stay empty. */
static const char *complete(const char *const *words)
{
	CBT_EQ_LL(cbt_bash_complete(words, out, sizeof(out), errout, sizeof(errout)), 0);
	CBT_EQ_STR(errout, "");
	return out;
}

#define COMPLETE(...) complete((const char *const[]){ cbt_cli_bin(), __VA_ARGS__, NULL })

static void test_completion_completes_commands_and_options(void)
{
	CBT_EQ_STR(COMPLETE("sch"), "schedule\nscheduler\nschema\n");
	CBT_EQ_STR(COMPLETE("--utc", "cl"), "cleanup\n");
	CBT_EQ_STR(COMPLETE("run", "ledger", "--"),
		   "--db\n--help\n--json\n--lease\n--log-format\n--next\n--utc\n--version\n");
	CBT_EQ_STR(COMPLETE("schedule", "add", "n", "--ov"), "--overlap\n");
	CBT_EQ_STR(COMPLETE("schedule", "add", "n", "--overlap", ""), "allow\nqueue\nskip\n");
	CBT_EQ_STR(COMPLETE("schedule", "h"), "history\n");
	CBT_EQ_STR(COMPLETE("help", "--format", ""), "bash\nman\n");
	CBT_EQ_STR(COMPLETE("help", "wo"), "worker\n");
	/* A value of the user's own completes to nothing, not to a command. */
	CBT_EQ_STR(COMPLETE("run", "--lease", ""), "");
}

static const CU_TestInfo tests[] = {
	{ "help names the table", test_help_names_the_table },
	{ "README names the table", test_readme_names_the_table },
	{ "man page names the table", test_man_page_names_the_table },
	{ "completion names the table", test_completion_names_the_table },
	{ "completion completes commands and options",
	  test_completion_completes_commands_and_options },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("docs", NULL, NULL, tests);
}
