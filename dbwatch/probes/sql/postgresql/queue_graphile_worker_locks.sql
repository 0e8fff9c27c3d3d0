-- graphile-worker named queues locked by a worker: while locked, no other worker runs any job
-- of that queue (graphile-worker frees the lock after 4 hours). Per lock: its worker, age, the
-- jobs waiting behind it (counted up to %(window)s, through its own partial index
-- jobs_main_index: is_available is the generated locked_at IS NULL AND attempts < max_attempts)
-- and the jobs that worker still holds among the newest %(window)s jobs by id (no index holds
-- locked jobs: a backward primary-key scan, read once and only when a queue is locked).
WITH recent AS MATERIALIZED (
  SELECT job_queue_id, locked_by FROM {table} ORDER BY id DESC LIMIT %(window)s
)
SELECT q.queue_name AS queue, left(q.locked_by, 200) AS worker,
       extract(epoch FROM now() - q.locked_at)::bigint AS locked_seconds,
       (SELECT count(*) FROM (SELECT 1 FROM {table} j
                              WHERE j.is_available AND j.job_queue_id = q.id AND j.run_at <= now()
                              LIMIT %(window)s) x) AS waiting,
       (SELECT count(*) FROM recent r
        WHERE r.job_queue_id = q.id AND r.locked_by = q.locked_by) AS held_jobs
FROM {job_queues} q
WHERE q.locked_at IS NOT NULL
ORDER BY q.locked_at
LIMIT %(groups)s
