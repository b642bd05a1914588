-- cbatch job repository, schema version 4: schedules.
--
-- A schedule fires a job on a cron expression in a time zone. Every scheduler
-- node reads the same rows, and a fire instant becomes a run only by claiming
-- it: one row of batch_schedule_firing per (schedule, fire instant), under a
-- unique key, inserted in one transaction that holds the schedule's row lock.
-- Times are the database's (clock_timestamp()), never a node's clock; the
-- next fire instant is computed from the claimed one. Every node writes what
-- it did with each instant it considered to batch_schedule_event, which is
-- what `schedule history` shows.
--
-- Time zone rules come from the database server's time zone data
-- (batch_tz_segment), so that nodes with different host tzdata agree.

CREATE TABLE batch_schedule (
    schedule_id     bigserial PRIMARY KEY,
    schedule_name   varchar(100)  NOT NULL UNIQUE,
    cron_expression varchar(1024) NOT NULL,
    time_zone       varchar(100)  NOT NULL,
    job_name        varchar(100)  NOT NULL,
    -- Parameter templates, in command-line syntax: a JSON array of strings.
    parameters      jsonb         NOT NULL DEFAULT '[]',
    misfire_policy  varchar(10)   NOT NULL DEFAULT 'RUN_ONCE',
    -- How late a fire instant may be taken and still count as on time.
    misfire_grace_seconds int     NOT NULL DEFAULT 60,
    paused          boolean       NOT NULL DEFAULT false,
    -- The first fire instant nobody has claimed yet: every instant before it
    -- has a firing row (run, or recorded as missed).
    next_fire_time  timestamptz,
    last_fire_time  timestamptz,
    -- Bumped by every change a node must notice (pause, resume, edit).
    version         bigint        NOT NULL DEFAULT 0,
    created_at      timestamptz   NOT NULL DEFAULT clock_timestamp(),
    updated_at      timestamptz   NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT batch_schedule_misfire_ck CHECK (misfire_policy IN ('RUN_ONCE', 'SKIP')),
    CONSTRAINT batch_schedule_grace_ck CHECK (misfire_grace_seconds BETWEEN 1 AND 86400),
    CONSTRAINT batch_schedule_parameters_ck CHECK (jsonb_typeof(parameters) = 'array')
);

-- A running scheduler process. Its heartbeat tells the others whether its
-- open firings are still looked after.
CREATE TABLE batch_scheduler_node (
    node_id        varchar(200) PRIMARY KEY,  -- the process identity (host:pid:...)
    host           varchar(255) NOT NULL,
    pid            int          NOT NULL,
    started_at     timestamptz  NOT NULL DEFAULT clock_timestamp(),
    heartbeat_at   timestamptz  NOT NULL DEFAULT clock_timestamp(),
    lease_seconds  double precision NOT NULL,
    stopped_at     timestamptz
);

-- One row per claimed fire instant: the exactly-once key. kind SCHEDULED is
-- an instant taken on time; MISFIRE_RUN and MISFIRE_SKIP stand for the run of
-- instants from fire_time to missed_until that were missed while no scheduler
-- ran (run once now, with parameters from param_time, or recorded only).
CREATE TABLE batch_schedule_firing (
    firing_id        bigserial PRIMARY KEY,
    schedule_id      bigint       NOT NULL REFERENCES batch_schedule ON DELETE CASCADE,
    fire_time        timestamptz  NOT NULL,
    kind             varchar(12)  NOT NULL,
    missed_until     timestamptz,
    missed_count     bigint       NOT NULL DEFAULT 0,  -- -1: 10000 or more
    param_time       timestamptz,
    node_id          varchar(200) NOT NULL,
    claimed_at       timestamptz  NOT NULL DEFAULT clock_timestamp(),
    status           varchar(16)  NOT NULL,
    job_name         varchar(100) NOT NULL,
    job_key          varchar(32),
    parameters       jsonb        NOT NULL DEFAULT '[]',
    pid              int,
    job_execution_id bigint,
    exit_code        int,
    exit_status      varchar(10),
    message          varchar(2500) NOT NULL DEFAULT '',
    finished_at      timestamptz,
    CONSTRAINT batch_schedule_firing_once_uk UNIQUE (schedule_id, fire_time),
    CONSTRAINT batch_schedule_firing_kind_ck CHECK (kind IN ('SCHEDULED', 'MISFIRE_RUN', 'MISFIRE_SKIP')),
    CONSTRAINT batch_schedule_firing_status_ck CHECK (status IN
        ('CLAIMED', 'LAUNCHED', 'FINISHED', 'FAILED_TO_LAUNCH', 'MISFIRED', 'ORPHANED'))
);
-- What a node looks at every tick: firings not finished.
CREATE INDEX batch_schedule_firing_open_ix ON batch_schedule_firing (node_id)
    WHERE status IN ('CLAIMED', 'LAUNCHED');

-- What each node did with each fire instant it considered.
CREATE TABLE batch_schedule_event (
    event_id         bigserial PRIMARY KEY,
    schedule_id      bigint       NOT NULL REFERENCES batch_schedule ON DELETE CASCADE,
    fire_time        timestamptz  NOT NULL,
    node_id          varchar(200) NOT NULL,
    outcome          varchar(16)  NOT NULL,
    firing_id        bigint REFERENCES batch_schedule_firing ON DELETE CASCADE,
    job_execution_id bigint,
    message          varchar(2500) NOT NULL DEFAULT '',
    recorded_at      timestamptz  NOT NULL DEFAULT clock_timestamp(),
    CONSTRAINT batch_schedule_event_outcome_ck CHECK (outcome IN
        ('FIRED', 'SKIPPED_CLAIMED', 'MISFIRED', 'FAILED_TO_LAUNCH', 'FINISHED', 'ORPHANED'))
);
CREATE INDEX batch_schedule_event_schedule_ix ON batch_schedule_event (schedule_id, event_id);
CREATE INDEX batch_schedule_event_firing_ix ON batch_schedule_event (firing_id);

-- ---- time zone rules -------------------------------------------------------

-- Seconds east of UTC in zone p_zone at Unix time p_epoch.
CREATE FUNCTION batch_tz_offset(p_epoch bigint, p_zone text) RETURNS int
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT extract(epoch FROM (to_timestamp(p_epoch) AT TIME ZONE p_zone)
                            - (to_timestamp(p_epoch) AT TIME ZONE 'UTC'))::int
$$;

-- The stretch of time around Unix time p_epoch over which zone p_zone keeps
-- one UTC offset: [seg_start, seg_end) in Unix seconds, the offset, and the
-- offsets just before and after. Transitions are found by stepping a day at a
-- time up to 400 days each way, then bisecting to the second; a zone with no
-- transition within that reach gets a boundary there with the same offset on
-- both sides (harmless: the caller just asks again past it). Two transitions
-- within one day are not told apart (no zone in use has them).
CREATE FUNCTION batch_tz_segment(p_epoch bigint, p_zone text,
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

-- ---- firing ----------------------------------------------------------------

-- Claim fire instant p_fire_time of a schedule for node p_node, in one
-- transaction under the schedule's row lock. The caller computed the kind,
-- the parameters and the next instant (p_next_fire_time) from the instant
-- itself. Outcomes:
--   CLAIMED          the firing row is ours: launch it (or, for MISFIRE_SKIP,
--                    it is recorded as missed, and there is nothing to launch)
--   SKIPPED_CLAIMED  another node has it (claimed_by); recorded as such
--   CHANGED          the schedule was paused or edited since the caller read
--                    it (version): read it again
--   GONE             the schedule was removed
-- next_fire_time is the schedule's shared cursor after the call.
CREATE FUNCTION batch_schedule_claim(p_schedule_id bigint, p_version bigint,
    p_fire_time timestamptz, p_kind varchar, p_missed_until timestamptz, p_missed_count bigint,
    p_param_time timestamptz, p_next_fire_time timestamptz, p_node varchar,
    p_job_key varchar, p_parameters jsonb,
    OUT outcome varchar, OUT firing_id bigint, OUT claimed_by varchar,
    OUT next_fire_time timestamptz)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    s batch_schedule%ROWTYPE;
BEGIN
    -- NO KEY UPDATE: claims queue on each other, but not the foreign-key
    -- checks of other nodes' event and firing writes (KEY SHARE). A plain
    -- FOR UPDATE deadlocked with a node recording its launch: that UPDATE of
    -- the firing row made this insert wait for it, and its event's key check
    -- waited for this lock.
    SELECT * INTO s FROM batch_schedule x WHERE x.schedule_id = p_schedule_id
       FOR NO KEY UPDATE;
    IF NOT FOUND THEN
        outcome := 'GONE';
        RETURN;
    END IF;
    next_fire_time := s.next_fire_time;
    IF s.version <> p_version OR s.paused THEN
        outcome := 'CHANGED';
        RETURN;
    END IF;
    INSERT INTO batch_schedule_firing AS f (schedule_id, fire_time, kind, missed_until,
        missed_count, param_time, node_id, status, job_name, job_key, parameters)
    VALUES (p_schedule_id, p_fire_time, p_kind, p_missed_until, coalesce(p_missed_count, 0),
        p_param_time, p_node, CASE WHEN p_kind = 'MISFIRE_SKIP' THEN 'MISFIRED' ELSE 'CLAIMED' END,
        s.job_name, p_job_key, coalesce(p_parameters, '[]'))
    ON CONFLICT ON CONSTRAINT batch_schedule_firing_once_uk DO NOTHING
    RETURNING f.firing_id INTO firing_id;
    IF firing_id IS NULL THEN
        SELECT f.node_id INTO claimed_by FROM batch_schedule_firing f
         WHERE f.schedule_id = p_schedule_id AND f.fire_time = p_fire_time;
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, message)
        VALUES (p_schedule_id, p_fire_time, p_node, 'SKIPPED_CLAIMED',
                'claimed by ' || coalesce(claimed_by, 'another node'));
        outcome := 'SKIPPED_CLAIMED';
        RETURN;
    END IF;
    claimed_by := p_node;
    UPDATE batch_schedule x
       SET next_fire_time = greatest(x.next_fire_time, p_next_fire_time),
           last_fire_time = greatest(x.last_fire_time, coalesce(p_missed_until, p_fire_time))
     WHERE x.schedule_id = p_schedule_id
    RETURNING x.next_fire_time INTO next_fire_time;
    IF p_kind <> 'SCHEDULED' THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
        VALUES (p_schedule_id, p_fire_time, p_node, 'MISFIRED', firing_id,
                CASE WHEN p_missed_count < 0 THEN '10000 or more firings'
                     WHEN p_missed_count = 1 THEN '1 firing'
                     ELSE p_missed_count || ' firings' END
                || ' missed from ' || p_fire_time || ' to ' || p_missed_until
                || CASE WHEN p_kind = 'MISFIRE_RUN' THEN ': running once now, as of ' || p_param_time
                        ELSE ': skipped (misfire policy SKIP)' END);
    END IF;
    outcome := 'CLAIMED';
END $$;

-- The launch of a claimed firing: LAUNCHED with the child's pid, or
-- FAILED_TO_LAUNCH with the reason. Recorded as an event of the node.
CREATE FUNCTION batch_schedule_launched(p_firing_id bigint, p_node varchar, p_pid int,
    p_message varchar) RETURNS void
LANGUAGE plpgsql AS $$
DECLARE
    f batch_schedule_firing%ROWTYPE;
BEGIN
    UPDATE batch_schedule_firing x
       SET status = CASE WHEN p_pid IS NULL THEN 'FAILED_TO_LAUNCH' ELSE 'LAUNCHED' END,
           pid = p_pid, message = coalesce(p_message, ''),
           finished_at = CASE WHEN p_pid IS NULL THEN clock_timestamp() END
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node AND x.status = 'CLAIMED'
    RETURNING * INTO f;
    IF FOUND THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id, message)
        VALUES (f.schedule_id, f.fire_time, p_node,
                CASE WHEN p_pid IS NULL THEN 'FAILED_TO_LAUNCH' ELSE 'FIRED' END, f.firing_id,
                coalesce(p_message, ''));
    END IF;
END $$;

-- The newest execution of the firing's job instance created since it was
-- claimed: the run the firing launched (NULL if none got that far).
CREATE FUNCTION batch_schedule_firing_execution(p_firing_id bigint,
    OUT job_execution_id bigint, OUT status varchar)
LANGUAGE sql STABLE AS $$
    SELECT e.job_execution_id, e.status
      FROM batch_schedule_firing f
      JOIN batch_job_instance i ON i.job_name = f.job_name AND i.job_key = f.job_key
      JOIN batch_job_execution e ON e.job_instance_id = i.job_instance_id
     WHERE f.firing_id = p_firing_id AND e.create_time >= f.claimed_at
     ORDER BY e.job_execution_id DESC
     LIMIT 1
$$;

-- The child of a launched firing has exited with p_exit_code.
CREATE FUNCTION batch_schedule_finished(p_firing_id bigint, p_node varchar, p_exit_code int,
    p_message varchar, OUT job_execution_id bigint, OUT exit_status varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_variable
DECLARE
    f batch_schedule_firing%ROWTYPE;
BEGIN
    SELECT x.job_execution_id, x.status INTO job_execution_id, exit_status
      FROM batch_schedule_firing_execution(p_firing_id) x;
    UPDATE batch_schedule_firing x
       SET status = 'FINISHED', exit_code = p_exit_code, job_execution_id = job_execution_id,
           exit_status = exit_status, message = coalesce(p_message, ''),
           finished_at = clock_timestamp()
     -- ORPHANED too: a node cut off for longer than its lease comes back to
     -- a firing the others reported, and its child's end still counts.
     WHERE x.firing_id = p_firing_id AND x.node_id = p_node
       AND x.status IN ('CLAIMED', 'LAUNCHED', 'ORPHANED')
    RETURNING * INTO f;
    IF FOUND THEN
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                          job_execution_id, message)
        VALUES (f.schedule_id, f.fire_time, p_node, 'FINISHED', f.firing_id, job_execution_id,
                coalesce(p_message, ''));
    END IF;
END $$;

-- ---- nodes -----------------------------------------------------------------

-- Register or refresh node p_node; returns the database's time, which is the
-- only clock a scheduler goes by.
CREATE FUNCTION batch_scheduler_heartbeat(p_node varchar, p_host varchar, p_pid int,
    p_lease_seconds double precision) RETURNS timestamptz
LANGUAGE sql AS $$
    INSERT INTO batch_scheduler_node AS n (node_id, host, pid, lease_seconds)
    VALUES (p_node, p_host, p_pid, p_lease_seconds)
    ON CONFLICT (node_id) DO UPDATE
       SET heartbeat_at = clock_timestamp(), lease_seconds = excluded.lease_seconds,
           stopped_at = NULL;
    SELECT clock_timestamp();
$$;

CREATE FUNCTION batch_scheduler_stopped(p_node varchar) RETURNS void
LANGUAGE sql AS $$
    UPDATE batch_scheduler_node SET stopped_at = clock_timestamp(), heartbeat_at = clock_timestamp()
     WHERE node_id = p_node;
$$;

-- Firings left open by nodes that are gone: their lease ran out, or they
-- stopped, or (p_dead_nodes) the caller saw that their process is gone.
-- Marked ORPHANED once, by whichever node gets there first, with the
-- execution they launched (if any), which the job's own lock and lease take
-- care of from here. Returns what it marked.
CREATE FUNCTION batch_schedule_orphans(p_node varchar, p_dead_nodes varchar[])
RETURNS TABLE (firing_id bigint, schedule_id bigint, fire_time timestamptz, node_id varchar,
               job_execution_id bigint, exit_status varchar)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
    r record;
    e record;
BEGIN
    FOR r IN
        SELECT f.firing_id, f.schedule_id, f.fire_time, f.node_id
          FROM batch_schedule_firing f
          LEFT JOIN batch_scheduler_node n ON n.node_id = f.node_id
         WHERE f.status IN ('CLAIMED', 'LAUNCHED') AND f.node_id <> p_node
           AND (n.node_id IS NULL OR n.stopped_at IS NOT NULL
                OR n.heartbeat_at < clock_timestamp() - n.lease_seconds * interval '1 second'
                OR f.node_id = ANY (coalesce(p_dead_nodes, '{}')))
         ORDER BY f.firing_id
         FOR UPDATE OF f SKIP LOCKED
    LOOP
        SELECT x.job_execution_id, x.status INTO e FROM batch_schedule_firing_execution(r.firing_id) x;
        UPDATE batch_schedule_firing x
           SET status = 'ORPHANED', job_execution_id = e.job_execution_id, exit_status = e.status,
               finished_at = clock_timestamp(),
               message = 'node ' || r.node_id || ' is gone; '
                   || CASE WHEN e.job_execution_id IS NULL THEN 'it started no execution'
                           ELSE 'execution ' || e.job_execution_id || ' was ' || e.status
                                || ' (its own lock and lease decide a restart)' END
         WHERE x.firing_id = r.firing_id;
        INSERT INTO batch_schedule_event (schedule_id, fire_time, node_id, outcome, firing_id,
                                          job_execution_id, message)
        SELECT x.schedule_id, x.fire_time, p_node, 'ORPHANED', x.firing_id, x.job_execution_id,
               x.message
          FROM batch_schedule_firing x WHERE x.firing_id = r.firing_id;
        firing_id := r.firing_id;
        schedule_id := r.schedule_id;
        fire_time := r.fire_time;
        node_id := r.node_id;
        job_execution_id := e.job_execution_id;
        exit_status := e.status;
        RETURN NEXT;
    END LOOP;
END $$;

-- Schedule changes wake sleeping nodes.
CREATE FUNCTION batch_schedule_notify() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('cbatch_schedules', '');
    RETURN NULL;
END $$;
CREATE TRIGGER batch_schedule_notify_tg AFTER INSERT OR UPDATE OF version OR DELETE
    ON batch_schedule FOR EACH STATEMENT EXECUTE FUNCTION batch_schedule_notify();
