/* The built-in fault classifiers of chunk steps (step.h). */
#include "cbatch/step.h"

#include <string.h>

/* Is the error's SQLSTATE of class @p cls (two characters)? */
static int sqlstate_class(const cb_error *err, const char *cls)
{
	return strncmp(err->sqlstate, cls, 2) == 0;
}

cb_fault_action cb_classify_default(void *user, cb_fault fault, const cb_error *err)
{
	(void)user;
	(void)fault;
	if (err->code == CB_ERETRY || sqlstate_class(err, "08") ||
	    strcmp(err->sqlstate, "57P01") == 0)
		return CB_FAULT_RETRY;
	return CB_FAULT_FAIL;
}

cb_fault_action cb_classify_skip_invalid(void *user, cb_fault fault, const cb_error *err)
{
	cb_fault_action a = cb_classify_default(user, fault, err);

	if (a != CB_FAULT_FAIL)
		return a;
	if (fault != CB_FAULT_WRITE && err->code == CB_EINVAL)
		return CB_FAULT_SKIP;
	if (fault == CB_FAULT_WRITE && (sqlstate_class(err, "22") || sqlstate_class(err, "23")))
		return CB_FAULT_SKIP;
	return CB_FAULT_FAIL;
}
