-- graphile-worker locked jobs: age of the lock. graphile-worker frees a lock only after 4 hours;
-- a lock older than 5 minutes is reported (a worker that died keeps its jobs until then).
SELECT coalesce(q.queue_name, '(none)') AS queue,
       extract(epoch FROM now() - w.locked_at)::bigint AS reserved_seconds,
       count(*) AS n, 300::bigint AS expires_after
FROM (SELECT x.job_queue_id, x.locked_at
      FROM (SELECT job_queue_id, locked_at FROM {table} ORDER BY id DESC LIMIT %(window)s) x
      WHERE x.locked_at IS NOT NULL) w
LEFT JOIN {job_queues} q ON q.id = w.job_queue_id
GROUP BY 1, 2
ORDER BY 2 DESC
LIMIT %(groups)s
