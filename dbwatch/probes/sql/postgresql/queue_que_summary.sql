-- Que (>= 1.0): unfinished, unexpired jobs per queue over the oldest %(window)s by id. Que
-- holds advisory locks, not reservations, so running jobs count as available here.
SELECT w.queue, count(*) AS total,
       count(*) FILTER (WHERE w.run_at <= now()) AS available,
       extract(epoch FROM now() - min(w.run_at) FILTER (WHERE w.run_at <= now()))::bigint
         AS oldest_available_seconds,
       0 AS reserved, NULL::bigint AS oldest_reserved_seconds,
       count(*) FILTER (WHERE w.error_count > 0) AS repeated,
       max(w.error_count) + 1 AS max_attempts
FROM (SELECT queue, run_at, error_count FROM {table}
      WHERE finished_at IS NULL AND expired_at IS NULL ORDER BY id LIMIT %(window)s) w
GROUP BY w.queue
ORDER BY w.queue
LIMIT %(groups)s
