-- graphile-worker (0.14+: task and queue ids): jobs not failed for good, per named queue ('(none)'
-- for jobs in no queue), over the oldest %(window)s by id. A completed job is deleted; attempts
-- counts claims, so attempts 2 = handed out twice. Available jobs come from its own partial
-- index (jobs_main_index: is_available); locked ones from the newest %(window)s ids (no index
-- holds them), so permanently failed rows are never all read.
SELECT coalesce(q.queue_name, '(none)') AS queue, count(*) AS total,
       count(*) FILTER (WHERE w.locked_at IS NULL AND w.run_at <= now()) AS available,
       extract(epoch FROM now() - min(w.run_at) FILTER (WHERE w.locked_at IS NULL
                                                         AND w.run_at <= now()))::bigint
         AS oldest_available_seconds,
       count(*) FILTER (WHERE w.locked_at IS NOT NULL) AS reserved,
       extract(epoch FROM now() - min(w.locked_at))::bigint AS oldest_reserved_seconds,
       count(*) FILTER (WHERE w.attempts > 1) AS repeated, max(w.attempts) AS max_attempts
FROM ((SELECT job_queue_id, run_at, locked_at, attempts FROM {table}
       WHERE is_available ORDER BY priority, run_at LIMIT %(window)s)
      UNION ALL
      (SELECT x.job_queue_id, x.run_at, x.locked_at, x.attempts
       FROM (SELECT job_queue_id, run_at, locked_at, attempts, max_attempts, is_available
             FROM {table} ORDER BY id DESC LIMIT %(window)s) x
       WHERE NOT x.is_available AND x.attempts < x.max_attempts)) w
LEFT JOIN {job_queues} q ON q.id = w.job_queue_id
GROUP BY 1
ORDER BY 1
LIMIT %(groups)s
