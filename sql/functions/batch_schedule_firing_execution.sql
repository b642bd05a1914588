-- The newest execution of the firing's job instance created since it was
-- claimed: the run the firing launched (NULL if none got that far).
CREATE OR REPLACE FUNCTION batch_schedule_firing_execution(p_firing_id bigint,
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
