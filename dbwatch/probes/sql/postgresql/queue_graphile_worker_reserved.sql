-- graphile-worker locked jobs: age of the lock; after 4 hours graphile-worker treats the lock as
-- abandoned and the job can be taken again.
SELECT coalesce(q.queue_name, '(none)') AS queue,
       extract(epoch FROM now() - w.locked_at)::bigint AS reserved_seconds,
       count(*) AS n, 14400::bigint AS expires_after
FROM (SELECT job_queue_id, locked_at FROM {table} WHERE locked_at IS NOT NULL
      ORDER BY id LIMIT %(window)s) w
LEFT JOIN {job_queues} q ON q.id = w.job_queue_id
GROUP BY 1, 2
ORDER BY 2 DESC
LIMIT %(groups)s
