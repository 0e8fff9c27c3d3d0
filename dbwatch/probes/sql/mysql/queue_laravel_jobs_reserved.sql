-- Laravel jobs reserved by a worker: how long ago, per queue and second (oldest first), so
-- the check can apply any retry_after. Same bounded window as the summary.
SELECT w.queue AS queue, clock.now_s - CAST(w.reserved_at AS SIGNED) AS reserved_seconds,
       COUNT(*) AS n, NULL AS expires_after
FROM (SELECT queue, reserved_at FROM {table} ORDER BY id LIMIT %(window)s) w
CROSS JOIN (SELECT CAST(UNIX_TIMESTAMP() AS SIGNED) AS now_s) clock
WHERE w.reserved_at IS NOT NULL
GROUP BY w.queue, w.reserved_at, clock.now_s
ORDER BY w.reserved_at
LIMIT %(groups)s
