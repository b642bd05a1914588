/* The library's version (include/cbatch/version.h, generated from the CMake project). */
#include "cbatch/version.h"

const char *cb_version(void)
{
	return CB_VERSION_STRING;
}
