-- Laravel jobs, per queue, over the oldest %(window)s rows by id (claims take the lowest ids).
-- A primary-key range read: bounded, no row locks. Epoch-second columns.
SELECT w.queue, count(*) AS total,
       count(*) FILTER (WHERE w.reserved_at IS NULL AND w.available_at <= clock.now_s) AS available,
       clock.now_s - min(w.available_at) FILTER (WHERE w.reserved_at IS NULL
                                                 AND w.available_at <= clock.now_s)
         AS oldest_available_seconds,
       count(*) FILTER (WHERE w.reserved_at IS NOT NULL) AS reserved,
       clock.now_s - min(w.reserved_at) AS oldest_reserved_seconds,
       count(*) FILTER (WHERE w.attempts > 1) AS repeated,
       max(w.attempts) AS max_attempts
FROM (SELECT queue, reserved_at, available_at, attempts FROM {table} ORDER BY id LIMIT %(window)s) w
CROSS JOIN (SELECT extract(epoch FROM now())::bigint AS now_s) clock
GROUP BY w.queue, clock.now_s
ORDER BY w.queue
LIMIT %(groups)s
