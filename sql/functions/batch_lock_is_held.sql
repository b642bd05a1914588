-- Whether a lock row is held: not released, and its lease (in the database's
-- time) not yet over. The one definition of "held" (an execution's or a
-- partition's lock is held by its owner when, besides, the row still carries
-- the owner's fencing token). SQL statements, PL/pgSQL functions and the C
-- statements call it with the row's two columns. One SQL expression, so the
-- planner inlines it into the calling statement: it stays a plain condition
-- on the row (and implies the predicate of batch_lock_held_ix, NOT released).
-- Not IMMUTABLE or STABLE: it reads batch_now(), and a function declared
-- so would not be inlined.
CREATE OR REPLACE FUNCTION batch_lock_is_held(p_released boolean, p_locked_until timestamptz)
RETURNS boolean LANGUAGE sql PARALLEL SAFE AS $$
    SELECT NOT p_released AND p_locked_until >= batch_now()
$$;
