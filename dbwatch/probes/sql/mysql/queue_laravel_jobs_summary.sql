-- Laravel jobs, per queue, over the oldest %(window)s rows by id (claims take the lowest ids).
-- A primary-key range read: bounded, no locks (a consistent read). Epoch-second columns.
SELECT w.queue AS queue, COUNT(*) AS total,
       SUM(w.reserved_at IS NULL AND w.available_at <= clock.now_s) AS available,
       clock.now_s - MIN(CASE WHEN w.reserved_at IS NULL AND w.available_at <= clock.now_s
                              THEN CAST(w.available_at AS SIGNED) END) AS oldest_available_seconds,
       SUM(w.reserved_at IS NOT NULL) AS reserved,
       clock.now_s - MIN(CAST(w.reserved_at AS SIGNED)) AS oldest_reserved_seconds,
       SUM(w.attempts > 1) AS repeated,
       MAX(w.attempts) AS max_attempts
FROM (SELECT queue, reserved_at, available_at, attempts FROM {table} ORDER BY id LIMIT %(window)s) w
CROSS JOIN (SELECT CAST(UNIX_TIMESTAMP() AS SIGNED) AS now_s) clock
GROUP BY w.queue, clock.now_s
ORDER BY w.queue
LIMIT %(groups)s
