/* cbatch-examples: the cbatch CLI with the example jobs registered. */
#include <stdio.h>

#include "examples.h"

int main(int argc, char **argv)
{
	cb_error err = CB_ERROR_INIT;
	cb_registry *reg = NULL;
	int rc;

	if (cb_registry_new(&reg, &err) < 0 || ledger_register(reg, &err) < 0 ||
	    settlement_register(reg, &err) < 0 || csv_import_register(reg, &err) < 0 ||
	    ledger_export_register(reg, &err) < 0 || ledger_partitioned_register(reg, &err) < 0 ||
	    outbox_register(reg, &err) < 0 || tick_register(reg, &err) < 0 ||
	    sales_totals_register(reg, &err) < 0 ||
	    cb_registry_add_command(reg, "example-setup",
				    "create an example's tables and demo data: example-setup "
				    "ledger|settlement|sales_totals [--rows N] [--reset] ...",
				    examples_setup_command, NULL, &err) < 0) {
		fprintf(stderr, "cbatch-examples: %s\n", err.message);
		cb_registry_free(reg);
		return CB_EXIT_FAILED;
	}
	rc = cb_cli_main(reg, argc, argv);
	cb_registry_free(reg);
	return rc;
}
