/*
 * One version, from the CMake project: the generated header, cb_version()
 * and `cbatch --version` agree with CMakeLists.txt's project(... VERSION).
 * (The package files are checked by package.consumer.)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cbatch.h>

#include "cbtest.h"

/* The VERSION of project() in the top-level CMakeLists.txt. */
static void project_version(char *out, size_t size)
{
	char path[4096], line[512];
	FILE *f;

	out[0] = '\0';
	snprintf(path, sizeof(path), "%s/CMakeLists.txt", cbt_source_dir());
	f = fopen(path, "r");
	CU_ASSERT_PTR_NOT_NULL_FATAL(f);
	while (fgets(line, sizeof(line), f)) {
		const char *v = strstr(line, "project(cbatch VERSION ");

		if (v == line) {
			v += strlen("project(cbatch VERSION ");
			snprintf(out, size, "%.*s", (int)strcspn(v, " )\n"), v);
			break;
		}
	}
	fclose(f);
}

static void test_header_and_library_carry_the_project_version(void)
{
	char want[64], num[64];

	project_version(want, sizeof(want));
	CU_ASSERT_FATAL(want[0] != '\0');
	CBT_EQ_STR(CB_VERSION_STRING, want);
	CBT_EQ_STR(cb_version(), want);
	snprintf(num, sizeof(num), "%d.%d.%d", CB_VERSION_MAJOR, CB_VERSION_MINOR,
		 CB_VERSION_PATCH);
	CBT_EQ_STR(num, want);
	CBT_EQ_LL(CB_VERSION_NUMBER,
		  CB_VERSION_MAJOR * 10000 + CB_VERSION_MINOR * 100 + CB_VERSION_PATCH);
}

static void test_cli_version_prints_it(void)
{
	char want[64], out[4096], errout[4096], line[160];
	const char *admin[] = { cbt_cli_bin(), "--version", NULL };
	const char *job[] = { cbt_examples_bin(), "--version", NULL };

	project_version(want, sizeof(want));
	CBT_EQ_LL(cbt_run(admin, out, sizeof(out), errout, sizeof(errout)), 0);
	snprintf(line, sizeof(line), "cbatch %s (repository schema ", want);
	CBT_CONTAINS(out, line);
	CBT_EQ_LL(cbt_run(job, out, sizeof(out), errout, sizeof(errout)), 0);
	snprintf(line, sizeof(line), "(cbatch %s, repository schema ", want);
	CBT_CONTAINS(out, line);
}

static const CU_TestInfo tests[] = {
	{ "header and library carry the project version",
	  test_header_and_library_carry_the_project_version },
	{ "cli --version prints it", test_cli_version_prints_it },
	CU_TEST_INFO_NULL,
};

int main(void)
{
	return cbt_main("version", NULL, NULL, tests);
}
