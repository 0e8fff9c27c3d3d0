-- Delayed::Job: jobs not failed, per queue, over the oldest %(window)s by id. Rails stores UTC
-- in DATETIME. attempts counts failures, so attempts 1 = a second run.
SELECT w.queue AS queue, COUNT(*) AS total,
       SUM(w.locked_at IS NULL AND w.run_at <= clock.now_utc) AS available,
       TIMESTAMPDIFF(SECOND, MIN(CASE WHEN w.locked_at IS NULL AND w.run_at <= clock.now_utc
                                      THEN w.run_at END), clock.now_utc) AS oldest_available_seconds,
       SUM(w.locked_at IS NOT NULL) AS reserved,
       TIMESTAMPDIFF(SECOND, MIN(w.locked_at), clock.now_utc) AS oldest_reserved_seconds,
       SUM(w.attempts > 0) AS repeated,
       MAX(w.attempts) + 1 AS max_attempts
FROM (SELECT COALESCE(queue, '(none)') AS queue, locked_at, run_at, attempts FROM {table}
      WHERE failed_at IS NULL ORDER BY id LIMIT %(window)s) w
CROSS JOIN (SELECT UTC_TIMESTAMP() AS now_utc) clock
GROUP BY w.queue, clock.now_utc
ORDER BY w.queue
LIMIT %(groups)s
