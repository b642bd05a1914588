-- The stretch of time around Unix time p_epoch over which zone p_zone keeps
-- one UTC offset: [seg_start, seg_end) in Unix seconds, the offset, and the
-- offsets just before and after. Transitions are found by stepping a day at a
-- time up to 400 days each way, then bisecting to the second; a zone with no
-- transition within that reach gets a boundary there with the same offset on
-- both sides (harmless: the caller just asks again past it). Two transitions
-- within one day are not told apart (no zone in use has them).
CREATE OR REPLACE FUNCTION batch_tz_segment(p_epoch bigint, p_zone text,
    OUT seg_start bigint, OUT seg_end bigint, OUT utc_offset int,
    OUT prev_offset int, OUT next_offset int)
LANGUAGE plpgsql STABLE AS $$
DECLARE
    day constant bigint := 86400;
    reach constant int := 400;
    lo bigint;
    hi bigint;
    mid bigint;
BEGIN
    utc_offset := batch_tz_offset(p_epoch, p_zone);
    -- forward
    hi := NULL;
    FOR i IN 1..reach LOOP
        IF batch_tz_offset(p_epoch + i * day, p_zone) <> utc_offset THEN
            lo := p_epoch + (i - 1) * day;
            hi := p_epoch + i * day;
            EXIT;
        END IF;
    END LOOP;
    IF hi IS NULL THEN
        seg_end := p_epoch + reach * day;
        next_offset := utc_offset;
    ELSE
        WHILE hi - lo > 1 LOOP
            mid := lo + (hi - lo) / 2;
            IF batch_tz_offset(mid, p_zone) = utc_offset THEN lo := mid; ELSE hi := mid; END IF;
        END LOOP;
        seg_end := hi;
        next_offset := batch_tz_offset(hi, p_zone);
    END IF;
    -- backward: seg_start is the first second with this offset
    lo := NULL;
    FOR i IN 1..reach LOOP
        IF batch_tz_offset(p_epoch - i * day, p_zone) <> utc_offset THEN
            lo := p_epoch - i * day;
            hi := p_epoch - (i - 1) * day;
            EXIT;
        END IF;
    END LOOP;
    IF lo IS NULL THEN
        seg_start := p_epoch - reach * day;
        prev_offset := utc_offset;
    ELSE
        WHILE hi - lo > 1 LOOP
            mid := lo + (hi - lo) / 2;
            IF batch_tz_offset(mid, p_zone) = utc_offset THEN hi := mid; ELSE lo := mid; END IF;
        END LOOP;
        seg_start := hi;
        prev_offset := batch_tz_offset(lo, p_zone);
    END IF;
END $$;
