-- Delayed::Job: jobs not failed, per queue, over the oldest %(window)s by id. Rails stores UTC
-- in DATETIME. attempts counts failures, so attempts 1 = a second run.
SELECT COALESCE(j.queue, '(none)') AS queue, COUNT(*) AS total,
       SUM(j.locked_at IS NULL AND j.run_at <= clock.now_utc) AS available,
       TIMESTAMPDIFF(SECOND, MIN(CASE WHEN j.locked_at IS NULL AND j.run_at <= clock.now_utc
                                      THEN j.run_at END), clock.now_utc) AS oldest_available_seconds,
       SUM(j.locked_at IS NOT NULL) AS reserved,
       TIMESTAMPDIFF(SECOND, MIN(j.locked_at), clock.now_utc) AS oldest_reserved_seconds,
       SUM(j.attempts > 0) AS repeated,
       MAX(j.attempts) + 1 AS max_attempts
FROM {table} j FORCE INDEX (PRIMARY)
CROSS JOIN (SELECT UTC_TIMESTAMP() AS now_utc) clock
WHERE j.failed_at IS NULL
  AND j.id <= %(max_id)s
GROUP BY COALESCE(j.queue, '(none)'), clock.now_utc
ORDER BY 1
LIMIT %(groups)s
