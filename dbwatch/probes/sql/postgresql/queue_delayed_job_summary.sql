-- Delayed::Job: jobs not failed, per queue, over the oldest %(window)s ids (a constant primary-key
-- range from queue_bounds: an index range scan whatever the statistics, as on MySQL). Rails stores UTC
-- in timestamp without time zone. attempts counts failures, so attempts 1 = a second run.
SELECT w.queue, count(*) AS total,
       count(*) FILTER (WHERE w.locked_at IS NULL AND w.run_at <= clock.now_utc) AS available,
       extract(epoch FROM clock.now_utc - min(w.run_at) FILTER (WHERE w.locked_at IS NULL
                                                               AND w.run_at <= clock.now_utc))::bigint
         AS oldest_available_seconds,
       count(*) FILTER (WHERE w.locked_at IS NOT NULL) AS reserved,
       extract(epoch FROM clock.now_utc - min(w.locked_at))::bigint AS oldest_reserved_seconds,
       count(*) FILTER (WHERE w.attempts > 0) AS repeated,
       max(w.attempts) + 1 AS max_attempts
FROM (SELECT coalesce(queue, '(none)') AS queue, locked_at, run_at, attempts FROM {table}
      WHERE failed_at IS NULL AND id BETWEEN %(lo)s AND %(max_id)s LIMIT %(window)s) w
CROSS JOIN (SELECT now() AT TIME ZONE 'UTC' AS now_utc) clock
GROUP BY w.queue, clock.now_utc
ORDER BY 1
LIMIT %(groups)s
