-- Delayed::Job locked jobs: age of the lock; another worker takes them after max_run_time (4h).
-- Over the oldest %(window)s ids, as the summary.
SELECT w.queue, extract(epoch FROM clock.now_utc - w.locked_at)::bigint AS reserved_seconds,
       count(*) AS n, 14400::bigint AS expires_after
FROM (SELECT coalesce(queue, '(none)') AS queue, locked_at FROM {table}
      WHERE failed_at IS NULL AND locked_at IS NOT NULL AND id BETWEEN %(lo)s AND %(max_id)s
      LIMIT %(window)s) w
CROSS JOIN (SELECT now() AT TIME ZONE 'UTC' AS now_utc) clock
GROUP BY 1, 2
ORDER BY 2 DESC
LIMIT %(groups)s
