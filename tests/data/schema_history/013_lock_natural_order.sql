-- cbatch job repository: locks listed in natural order.
--
-- An operator reads lock names the way people write them: "ledger:2" before
-- "ledger:10", "cbatch.partition:99" before "cbatch.partition:100". Text
-- order puts them the other way round. batch_natural_key maps a name to a
-- key whose byte order (COLLATE "C") is that natural order: every run of
-- digits is prefixed by its length on three digits, so a shorter number
-- sorts first and equal lengths compare digit by digit. The mapping is
-- injective (the digits stay as they are), so the key orders distinct names
-- strictly and a page of the listing can start after a name's key (keyset
-- paging). It needs no ICU collation: any PostgreSQL server has it.
CREATE FUNCTION batch_natural_key(p_name text)
RETURNS text LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
    SELECT coalesce(string_agg(CASE WHEN t.part[1] ~ '^[0-9]'
                                    THEN lpad(length(t.part[1])::text, 3, '0') || t.part[1]
                                    ELSE t.part[1] END, '' ORDER BY t.n), '')
      FROM regexp_matches(p_name, '[0-9]+|[^0-9]+', 'g') WITH ORDINALITY AS t(part, n)
$$;

-- The whole listing (`locks --all`, /api/v1/locks?all=1) walks this index
-- page by page instead of sorting every row the history left.
CREATE INDEX batch_lock_natural_ix ON batch_lock ((batch_natural_key(lock_name)) COLLATE "C");
