/* The running program's name (program.h). */
#define _GNU_SOURCE /* program_invocation_short_name */
#include "program.h"

#include <errno.h>

const char *cb__program_name(void)
{
	/* Set by glibc from argv[0] before main; empty when argv[0] was. */
	return program_invocation_short_name && program_invocation_short_name[0] ?
		       program_invocation_short_name :
		       "cbatch";
}
