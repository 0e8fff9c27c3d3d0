-- Laravel jobs, per queue, over the oldest %(window)s rows by id (claims take the lowest ids).
-- A primary-key range read (only ids are materialised): bounded, a consistent read, no locks.
SELECT j.queue AS queue, COUNT(*) AS total,
       SUM(j.reserved_at IS NULL AND j.available_at <= clock.now_s) AS available,
       clock.now_s - MIN(CASE WHEN j.reserved_at IS NULL AND j.available_at <= clock.now_s
                              THEN CAST(j.available_at AS SIGNED) END) AS oldest_available_seconds,
       SUM(j.reserved_at IS NOT NULL) AS reserved,
       clock.now_s - MIN(CAST(j.reserved_at AS SIGNED)) AS oldest_reserved_seconds,
       SUM(j.attempts > 1) AS repeated,
       MAX(j.attempts) AS max_attempts
FROM {table} j FORCE INDEX (PRIMARY)
CROSS JOIN (SELECT CAST(UNIX_TIMESTAMP() AS SIGNED) AS now_s) clock
WHERE j.id <= %(max_id)s
GROUP BY j.queue, clock.now_s
ORDER BY j.queue
LIMIT %(groups)s
