/*
 * What the ledger example's end-to-end tests share (test_ledger.c,
 * test_overlap.c, ledger_kit.c): the checks of its outcome and the wait for
 * its progress.
 */
#ifndef LEDGER_KIT_H
#define LEDGER_KIT_H

#include <libpq-fe.h>

/* Every account is in the ledger exactly once with its amount, and processed. */
void ledger_assert_exactly_once(PGconn *conn, long long rows);

/* Wait (30 s at most, else a failure) until the ledger holds @p rows rows. */
void ledger_wait_for_rows(PGconn *conn, long long rows);

#endif
