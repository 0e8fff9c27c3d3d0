-- Delayed::Job locked jobs: age of the lock; another worker takes them after max_run_time (4h).
SELECT COALESCE(j.queue, '(none)') AS queue,
       TIMESTAMPDIFF(SECOND, j.locked_at, UTC_TIMESTAMP()) AS reserved_seconds,
       COUNT(*) AS n, 14400 AS expires_after
FROM {table} j FORCE INDEX (PRIMARY)
WHERE j.failed_at IS NULL AND j.locked_at IS NOT NULL
  AND j.id <= %(max_id)s
GROUP BY 1, 2
ORDER BY 2 DESC
LIMIT %(groups)s
