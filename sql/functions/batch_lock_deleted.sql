-- Deleted lock rows: the next row of the same name must get a greater token.
CREATE OR REPLACE FUNCTION batch_lock_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    v_max bigint;
    v_next bigint;
BEGIN
    SELECT max(fencing_token) INTO v_max FROM old_rows;
    IF v_max IS NULL THEN
        RETURN NULL;
    END IF;
    -- The value nextval would give next; only ever moved forward, so a
    -- concurrent nextval can at worst repeat a token of another name.
    SELECT CASE WHEN is_called THEN last_value + 1 ELSE last_value END INTO v_next
      FROM batch_lock_token_seq;
    IF v_next <= v_max THEN
        PERFORM setval('batch_lock_token_seq', v_max, true);
    END IF;
    RETURN NULL;
END
$$;

DROP TRIGGER IF EXISTS batch_lock_deleted_tg ON batch_lock;
CREATE TRIGGER batch_lock_deleted_tg AFTER DELETE ON batch_lock
    REFERENCING OLD TABLE AS old_rows FOR EACH STATEMENT EXECUTE FUNCTION batch_lock_deleted();
