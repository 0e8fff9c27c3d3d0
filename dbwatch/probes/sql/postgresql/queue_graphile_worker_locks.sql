-- graphile-worker named queues locked by a worker: while locked, no other worker runs any job
-- of that queue (graphile-worker frees the lock after 4 hours). Per lock: its worker, age, the
-- jobs waiting behind it (counted up to %(window)s) and the jobs that worker still holds.
SELECT q.queue_name AS queue, left(q.locked_by, 200) AS worker,
       extract(epoch FROM now() - q.locked_at)::bigint AS locked_seconds,
       (SELECT count(*) FROM (SELECT 1 FROM {table} j
                              WHERE j.job_queue_id = q.id AND j.locked_at IS NULL
                                AND j.attempts < j.max_attempts AND j.run_at <= now()
                              LIMIT %(window)s) x) AS waiting,
       (SELECT count(*) FROM (SELECT 1 FROM {table} j
                              WHERE j.job_queue_id = q.id AND j.locked_by = q.locked_by
                              LIMIT %(window)s) y) AS held_jobs
FROM {job_queues} q
WHERE q.locked_at IS NOT NULL
ORDER BY q.locked_at
LIMIT %(groups)s
