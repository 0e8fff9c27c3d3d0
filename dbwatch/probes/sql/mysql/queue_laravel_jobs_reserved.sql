-- Laravel jobs reserved by a worker: how long ago, per queue and second (oldest first), so
-- the check can apply any retry_after. Same bounded primary-key window as the summary.
SELECT j.queue AS queue, clock.now_s - CAST(j.reserved_at AS SIGNED) AS reserved_seconds,
       COUNT(*) AS n, NULL AS expires_after
FROM {table} j FORCE INDEX (PRIMARY)
CROSS JOIN (SELECT CAST(UNIX_TIMESTAMP() AS SIGNED) AS now_s) clock
WHERE j.reserved_at IS NOT NULL
  AND j.id <= %(max_id)s
GROUP BY j.queue, j.reserved_at, clock.now_s
ORDER BY j.reserved_at
LIMIT %(groups)s
