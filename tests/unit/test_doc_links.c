/*
 * The documentation's links hold (issue 29, item 7): every relative Markdown
 * link in README.md and in the .md pages of docs/ names a file that exists, and every
 * #anchor a heading of that file, by GitHub's rule for heading anchors. The
 * README was split into pages by reader, so a section that moves breaks the
 * links into it; this test names each one, file:line. A probe tree of known
 * good and broken links checks that the checker finds exactly the broken.
 * No database.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cbtest.h"

#define MAX_HEADINGS 512
#define SLUG_MAX     160

/*
 * GitHub's anchor for a heading's text: lower case, each space a '-', and
 * punctuation dropped (letters, digits, '-' and '_' stay). Of the non-ASCII
 * characters, U+2000..U+2FFF (dashes, quotes, arrows, symbols) are dropped,
 * others (letters) kept.
 */
static void slug(const char *h, size_t n, char *out, size_t size)
{
	size_t k = 0;

	for (size_t i = 0; i < n && k + 4 < size; i++) {
		unsigned char c = (unsigned char)h[i];

		if (c == 0xE2 && i + 2 < n) {
			i += 2;
		} else if (c >= 0x80 || (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') ||
			   c == '-' || c == '_') {
			out[k++] = (char)c;
		} else if (c >= 'A' && c <= 'Z') {
			out[k++] = (char)(c - 'A' + 'a');
		} else if (c == ' ') {
			out[k++] = '-';
		}
	}
	out[k] = '\0';
}

/* Whether @p line opens or closes a fenced code block. */
static int is_fence(const char *line)
{
	while (*line == ' ')
		line++;
	return strncmp(line, "```", 3) == 0 || strncmp(line, "~~~", 3) == 0;
}

/*
 * Whether the Markdown text @p text has a heading whose anchor is @p anchor.
 * A repeated heading's anchor gets -1, -2, ... as on GitHub.
 */
static int has_anchor(const char *text, const char *anchor)
{
	static char seen[MAX_HEADINGS][SLUG_MAX];
	size_t nseen = 0;
	int fence = 0;

	for (const char *l = text; *l;) {
		size_t n = strcspn(l, "\n"), h = 0;

		if (is_fence(l))
			fence = !fence;
		while (h < n && l[h] == '#')
			h++;
		if (!fence && h >= 1 && h <= 6 && h < n && l[h] == ' ') {
			char s[SLUG_MAX], id[SLUG_MAX + 24];
			size_t dup = 0;

			slug(l + h + 1, n - h - 1, s, sizeof(s));
			for (size_t i = 0; i < nseen; i++)
				dup += strcmp(seen[i], s) == 0;
			if (dup)
				snprintf(id, sizeof(id), "%s-%zu", s, dup);
			else
				snprintf(id, sizeof(id), "%s", s);
			if (strcmp(id, anchor) == 0)
				return 1;
			if (nseen < MAX_HEADINGS)
				snprintf(seen[nseen++], SLUG_MAX, "%s", s);
		}
		l += n + (l[n] == '\n');
	}
	return 0;
}

/*
 * Checks the links of @p root/@p rel (a path relative to @p root), appending
 * one line per broken link to @p report. Links inside fenced code and inline
 * code spans are text, not links; a link with a scheme (https:, mailto:) is
 * not this test's to follow.
 * @return the number of broken links, or -1 if the file cannot be read;
 *         @p checked counts the links followed.
 */
static int check_file(const char *root, const char *rel, char *report, size_t size, int *checked)
{
	char path[4096], dir[4096], *text, *slash;
	int fence = 0, bad = 0, lineno = 0;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (!(text = cbt_slurp(path, NULL)))
		return -1;
	snprintf(dir, sizeof(dir), "%s", path);
	slash = strrchr(dir, '/');
	*slash = '\0';
	for (const char *l = text; *l;) {
		size_t n = strcspn(l, "\n");
		int code = 0;

		lineno++;
		if (is_fence(l))
			fence = !fence;
		for (size_t i = 0; !fence && i + 1 < n; i++) {
			char target[1024], file[sizeof(dir) + sizeof(target) + 2], *hash, *other;
			size_t t;
			struct stat st;
			const char *why = NULL;

			if (l[i] == '`')
				code = !code;
			if (code || l[i] != ']' || l[i + 1] != '(')
				continue;
			t = strcspn(l + i + 2, ") \n");
			snprintf(target, sizeof(target), "%.*s", (int)t, l + i + 2);
			if (strcspn(target, ":") < strcspn(target, "/#"))
				continue;
			(*checked)++;
			hash = strchr(target, '#');
			if (hash)
				*hash++ = '\0';
			if (*target)
				snprintf(file, sizeof(file), "%s/%s", dir, target);
			else
				snprintf(file, sizeof(file), "%s", path);
			if (stat(file, &st) != 0) {
				why = "no such file";
			} else if (hash) {
				other = S_ISREG(st.st_mode) ? cbt_slurp(file, NULL) : NULL;
				if (!other || !has_anchor(other, hash))
					why = "no such heading";
				free(other);
			}
			if (why) {
				size_t used = strlen(report);

				snprintf(report + used, size - used, "%s:%d: (%s%s%s): %s\n", rel,
					 lineno, target, hash ? "#" : "", hash ? hash : "", why);
				bad++;
			}
		}
		l += n + (l[n] == '\n');
	}
	free(text);
	return bad;
}

static char report[65536];

static void test_every_link_resolves(void)
{
	const char *root = cbt_source_dir();
	char docs[4096];
	int checked = 0, bad;
	struct dirent *e;
	DIR *d;

	report[0] = '\0';
	bad = check_file(root, "README.md", report, sizeof(report), &checked);
	if (bad < 0)
		CBT_FAILF("cannot read %s/README.md", root);
	snprintf(docs, sizeof(docs), "%s/docs", root);
	if (!(d = opendir(docs))) {
		CBT_FAILF("cannot open %s", docs);
		return;
	}
	while ((e = readdir(d))) {
		size_t n = strlen(e->d_name);
		char rel[512];
		int b;

		if (n < 4 || strcmp(e->d_name + n - 3, ".md") != 0)
			continue;
		snprintf(rel, sizeof(rel), "docs/%s", e->d_name);
		b = check_file(root, rel, report, sizeof(report), &checked);
		if (b < 0)
			CBT_FAILF("cannot read %s/%s", root, rel);
		else
			bad += b;
	}
	closedir(d);
	if (bad)
		CBT_FAILF("%d broken link(s):\n%s", bad, report);
	/* The README links to every page: a checker that finds no links checks nothing. */
	if (checked < 10)
		CBT_FAILF("only %d links found in README.md and docs/*.md", checked);
}

/* The checker finds exactly the broken links of a tree made for it. */
static void test_a_broken_link_is_found(void)
{
	char root[4096], sub[sizeof(root) + 8], file[sizeof(root) + 16];
	int checked = 0, bad;

	snprintf(root, sizeof(root), "%s/doc_links_probe.%d", cbt_tmpdir(), (int)getpid());
	snprintf(sub, sizeof(sub), "%s/docs", root);
	mkdir(root, 0700);
	mkdir(sub, 0700);
	snprintf(file, sizeof(file), "%s/README.md", root);
	cbt_write_str(file,
		      "# Top\n"
		      "\n"
		      "[ok](docs/a.md) [ok](docs/a.md#running-jobs) [ok](#top)\n"
		      "[ok](docs/a.md#scaling-out-partitions-and-workers)\n"
		      "[ok](docs/a.md#deploying--systemd-units--roles) [ok](docs/a.md#tests-1)\n"
		      "[ok](https://example.org/none.md) `[code](none.md)`\n"
		      "```\n"
		      "[fenced](none.md)\n"
		      "```\n"
		      "[broken](docs/b.md)\n"
		      "[broken](docs/a.md#locks)\n");
	snprintf(file, sizeof(file), "%s/docs/a.md", root);
	cbt_write_str(file, "# Running jobs\n"
			    "\n"
			    "```sh\n"
			    "# Locks\n"
			    "```\n"
			    "## Scaling out: partitions and workers\n"
			    "## Deploying — systemd units & roles\n"
			    "## Tests\n"
			    "## Tests\n"
			    "[broken](../README.md#no-such)\n");
	report[0] = '\0';
	bad = check_file(root, "README.md", report, sizeof(report), &checked);
	bad += check_file(root, "docs/a.md", report, sizeof(report), &checked);
	CBT_EQ_STR(report, "README.md:10: (docs/b.md): no such file\n"
			   "README.md:11: (docs/a.md#locks): no such heading\n"
			   "docs/a.md:10: (../README.md#no-such): no such heading\n");
	CBT_EQ_LL(bad, 3);
	CBT_EQ_LL(checked, 9);
}

static const CU_TestInfo tests[] = {
	{ "every link resolves", test_every_link_resolves },
	{ "a broken link is found", test_a_broken_link_is_found },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("doc_links", NULL, NULL, tests);
}
