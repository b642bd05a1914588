/* Links against the installed library and checks one pure function. */
#include <stdio.h>
#include <string.h>

#include <cbatch.h>
#include <cbatch/sys/conn.h>
#include <cbatch/sys/tx.h>

int main(void)
{
	cb_params *p = NULL;
	cb_error err = CB_ERROR_INIT;
	char key[CB_JOB_KEY_LEN + 1];

	if (cb_params_new(&p, &err) < 0 || cb_params_job_key(key, p, &err) < 0)
		return 1;
	cb_params_free(p);
	/* The job key of the empty parameter set (params.h, version 1). */
	if (strcmp(key, "3f4be0e2cfd34c39b7cd25c92f4ad646") != 0) {
		fprintf(stderr, "unexpected key %s\n", key);
		return 1;
	}
#ifdef CONSUMER_PACKAGE_VERSION
	/* One version everywhere: the package (CMake or pkg-config), the
	 * installed version.h and the library. */
	if (strcmp(CONSUMER_PACKAGE_VERSION, CB_VERSION_STRING) != 0 ||
	    strcmp(cb_version(), CB_VERSION_STRING) != 0) {
		fprintf(stderr, "version mismatch: package %s, header %s, library %s\n",
			CONSUMER_PACKAGE_VERSION, CB_VERSION_STRING, cb_version());
		return 1;
	}
#endif
	/* The plug-in author's surface is installed and exported too. */
	{
		PGconn *(*volatile like)(PGconn *, const char *) = cb_pg_connect_like;
		int (*volatile dups)(cb_tx *, long long, cb_error *) = cb_tx_count_duplicates;

		if (!like || !dups)
			return 1;
	}
	puts("consumer: linked against the installed cbatch");
	return 0;
}
