-- graphile-worker (0.14+: task and queue ids): jobs not failed for good, per named queue ('(none)'
-- for jobs in no queue), over the oldest %(window)s by id. A completed job is deleted; attempts
-- counts claims, so attempts 2 = handed out twice.
SELECT coalesce(q.queue_name, '(none)') AS queue, count(*) AS total,
       count(*) FILTER (WHERE w.locked_at IS NULL AND w.run_at <= now()) AS available,
       extract(epoch FROM now() - min(w.run_at) FILTER (WHERE w.locked_at IS NULL
                                                         AND w.run_at <= now()))::bigint
         AS oldest_available_seconds,
       count(*) FILTER (WHERE w.locked_at IS NOT NULL) AS reserved,
       extract(epoch FROM now() - min(w.locked_at))::bigint AS oldest_reserved_seconds,
       count(*) FILTER (WHERE w.attempts > 1) AS repeated, max(w.attempts) AS max_attempts
FROM (SELECT job_queue_id, run_at, locked_at, attempts FROM {table}
      WHERE attempts < max_attempts ORDER BY id LIMIT %(window)s) w
LEFT JOIN {job_queues} q ON q.id = w.job_queue_id
GROUP BY 1
ORDER BY 1
LIMIT %(groups)s
