/* The ledger example's shared checks (ledger_kit.h). */
#include "ledger_kit.h"

#include "cbtest.h"

void ledger_assert_exactly_once(PGconn *conn, long long rows)
{
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM ledger"), rows);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account WHERE NOT processed"), 0);
	CBT_EQ_LL(cbt_query_ll(conn, "SELECT count(*) FROM account a JOIN ledger l "
				     "ON l.account_id = a.id AND l.amount = a.amount "
				     "AND l.seller_id = a.seller_id"),
		  rows);
}

void ledger_wait_for_rows(PGconn *conn, long long rows)
{
	if (!cbt_wait_untilp(conn, 30000, "SELECT (count(*) >= $1)::int FROM ledger", "lld", rows))
		CBT_FAILF("the job never wrote %lld rows", rows);
}
