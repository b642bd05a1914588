/* `metrics`: repository metrics in Prometheus text format (or --json). */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cbatch/cli.h"
#include "cbatch/params.h"
#include "cbatch/lock.h"
#include "cbatch/metrics.h"
#include "cbatch/repository.h"
#include "cli_internal.h"
#include "text.h"

int cb__cli_cmd_metrics(struct cli *c)
{
	PGconn *conn = NULL;
	char *text = NULL;
	int rc;

	if ((rc = cb__cli_no_args(c)) != 0 || (rc = cb__cli_open_db(c, &conn, 1)) != 0)
		return rc;
	if (c->json) {
		json_t *doc = NULL;

		if ((rc = cb_metrics_json(&doc, conn, &c->err)) < 0)
			rc = cb__cli_fail(c, CB_EXIT_FAILED);
		else
			cb__cli_json_print(stdout, doc);
		json_decref(doc);
		PQfinish(conn);
		return rc < 0 ? CB_EXIT_FAILED : rc;
	}
	if ((rc = cb_metrics_text(&text, conn, &c->err)) < 0)
		rc = cb__cli_fail(c, CB_EXIT_FAILED);
	else
		fputs(text, stdout);
	free(text);
	PQfinish(conn);
	return rc < 0 ? CB_EXIT_FAILED : rc;
}
