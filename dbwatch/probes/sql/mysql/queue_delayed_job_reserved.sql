-- Delayed::Job locked jobs: age of the lock; another worker takes them after max_run_time (4h).
SELECT w.queue AS queue, TIMESTAMPDIFF(SECOND, w.locked_at, UTC_TIMESTAMP()) AS reserved_seconds,
       COUNT(*) AS n, 14400 AS expires_after
FROM (SELECT COALESCE(queue, '(none)') AS queue, locked_at FROM {table}
      WHERE failed_at IS NULL AND locked_at IS NOT NULL ORDER BY id LIMIT %(window)s) w
GROUP BY w.queue, reserved_seconds
ORDER BY reserved_seconds DESC
LIMIT %(groups)s
