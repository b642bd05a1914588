/* cbatch: the administration CLI. It registers no jobs: schema, executions,
 * show, stop and abandon work for any job; run and restart need the program
 * that registers the job (see cli.h). */
#include <stdio.h>

#include "cbatch/cli.h"

int main(int argc, char **argv)
{
	cb_registry *reg;
	cb_error err = CB_ERROR_INIT;
	int rc;

	if (cb_registry_new(&reg, &err) < 0) {
		fprintf(stderr, "cbatch: %s\n", err.message);
		return CB_EXIT_FAILED;
	}
	rc = cb_cli_main(reg, argc, argv);
	cb_registry_free(reg);
	return rc;
}
