-- The ledger's write shapes run inside the server, to compare their server CPU per row
-- with no client, no round trip and no commit (bench/RESULTS.md, "performance 2 (issue
-- 30)"). Rebuilds account (100,000 rows) and ledger in the bench database, then runs one
-- shape in one DO block (one transaction) and prints the backend's CPU ticks (10 ms)
-- before and after, from /proc: psql must run on the server's host.
--   MODE   set     the set-based pair (INSERT ... SELECT ... ON CONFLICT; UPDATE)
--          si      its INSERT alone
--          chunk   keyset pages of CHUNK into arrays, then the writers' statements:
--                  INSERT ... FROM unnest(arrays) ON CONFLICT; UPDATE ... id = ANY(ids)
--          ins     the chunked INSERT alone;  upd: set-based INSERT + chunked UPDATE
--          merged  one statement per chunk: WITH u AS (UPDATE ... = ANY ... RETURNING)
--                  INSERT ... FROM u ON CONFLICT
--          mrange  the same by key range, no values from the client
--
--   sed -e "s/MODE/chunk/g" -e "s/CHUNK/1000/g" bench/chunk_shapes.sql | psql "$DB"
--   (CPU µs/row = (cpu1 - cpu0) * 10000 / 100000)
\set QUIET on
TRUNCATE account, ledger RESTART IDENTITY;
INSERT INTO account (id, seller_id, amount) SELECT g, 1 + g % 50, (1 + (g * 7919) % 99999) / 100.0 FROM generate_series(1, 100000) g;
VACUUM ANALYZE account; VACUUM ANALYZE ledger; CHECKPOINT;
SELECT pg_backend_pid() AS pid \gset
\setenv PID :pid
\! awk '{print "cpu0", $14+$15}' /proc/$PID/stat
DO $$
DECLARE t0 timestamptz; ids bigint[]; sel int[]; am numeric[]; last bigint := 0; tw interval := '0'; n int;
BEGIN
  t0 := clock_timestamp();
  IF 'MODE' IN ('set', 'upd', 'si') THEN
    INSERT INTO ledger (account_id, seller_id, amount, job_execution_id) SELECT id, seller_id, amount, 1 FROM account WHERE NOT processed
      ON CONFLICT (account_id) DO UPDATE SET seller_id = EXCLUDED.seller_id, amount = EXCLUDED.amount, job_execution_id = EXCLUDED.job_execution_id;
    IF 'MODE' = 'set' THEN UPDATE account SET processed = true WHERE NOT processed; END IF;
  END IF;
  IF 'MODE' NOT IN ('set', 'si') THEN
    LOOP
      SELECT array_agg(id ORDER BY id), array_agg(seller_id ORDER BY id), array_agg(amount ORDER BY id) INTO ids, sel, am
        FROM (SELECT id, seller_id, amount FROM account WHERE NOT processed AND id > last ORDER BY id LIMIT CHUNK) s;
      EXIT WHEN ids IS NULL;
      IF 'MODE' = 'merged' THEN
      WITH u AS (UPDATE account SET processed = true WHERE id = ANY(ids) RETURNING id, seller_id, amount)
      INSERT INTO ledger (account_id, seller_id, amount, job_execution_id) SELECT id, seller_id, amount, 1 FROM u
        ON CONFLICT (account_id) DO UPDATE SET seller_id = EXCLUDED.seller_id, amount = EXCLUDED.amount, job_execution_id = EXCLUDED.job_execution_id;
      END IF;
      IF 'MODE' = 'mrange' THEN
      WITH u AS (UPDATE account SET processed = true WHERE NOT processed AND id > last AND id <= ids[array_length(ids, 1)] RETURNING id, seller_id, amount)
      INSERT INTO ledger (account_id, seller_id, amount, job_execution_id) SELECT id, seller_id, amount, 1 FROM u
        ON CONFLICT (account_id) DO UPDATE SET seller_id = EXCLUDED.seller_id, amount = EXCLUDED.amount, job_execution_id = EXCLUDED.job_execution_id;
      END IF;
      IF 'MODE' IN ('chunk', 'ins') THEN
      INSERT INTO ledger (account_id, seller_id, amount, job_execution_id) SELECT a, s, m, 1 FROM unnest(ids, sel, am) AS u(a, s, m)
        ON CONFLICT (account_id) DO UPDATE SET seller_id = EXCLUDED.seller_id, amount = EXCLUDED.amount, job_execution_id = EXCLUDED.job_execution_id;
      END IF;
      IF 'MODE' IN ('chunk', 'upd') THEN
      UPDATE account SET processed = true WHERE id = ANY(ids);
      END IF;
      last := ids[array_length(ids, 1)];
    END LOOP;
  END IF;
  RAISE NOTICE 'MODE CHUNK: % us/row', round(extract(epoch from clock_timestamp() - t0) * 1e6 / 100000, 2);
END $$;
\! awk '{print "cpu1", $14+$15}' /proc/$PID/stat
