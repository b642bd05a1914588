/* The build's bash completion run by bash, as a shell would (cbtest.h). */
#include <stdio.h>
#include <stdlib.h>

#include "cbtest.h"

int cbt_bash_complete(const char *const *words, char *out, size_t outsz, char *errout, size_t errsz)
{
	static const char script[] =
		"source \"$1\"; shift; COMP_WORDS=(\"$@\"); "
		"COMP_CWORD=$((${#COMP_WORDS[@]} - 1)); _cbatch; "
		"((${#COMPREPLY[@]})) && printf '%s\\n' \"${COMPREPLY[@]}\" | LC_ALL=C sort; true";
	const char *argv[32] = { "bash", "-c", script, "bash" };
	char path[4096];
	size_t n = 4;

	snprintf(path, sizeof(path), "%s/cbatch.bash", getenv("CBATCH_TEST_DOC_DIR"));
	argv[n++] = path;
	while (*words && n < 31)
		argv[n++] = *words++;
	argv[n] = NULL;
	return cbt_run(argv, out, outsz, errout, errsz);
}
