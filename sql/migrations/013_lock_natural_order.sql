-- cbatch job repository: locks listed in natural order.
--
-- An operator reads lock names the way people write them: "ledger:2" before
-- "ledger:10". batch_natural_key (sql/functions/) maps a name to a key whose
-- byte order is that natural order; this index serves the whole listing.
-- needs: batch_natural_key

-- The whole listing (`locks --all`, /api/v1/locks?all=1) walks this index
-- page by page instead of sorting every row the history left.
CREATE INDEX batch_lock_natural_ix ON batch_lock ((batch_natural_key(lock_name)) COLLATE "C");
