-- GoodJob: unfinished jobs per queue, the %(window)s earliest scheduled (the partial
-- scheduled_at index). Rails stores UTC in timestamp without time zone.
SELECT w.queue_name AS queue, count(*) AS total,
       count(*) FILTER (WHERE w.performed_at IS NULL AND w.due <= clock.now_utc) AS available,
       extract(epoch FROM clock.now_utc - min(w.due) FILTER (WHERE w.performed_at IS NULL
                                                           AND w.due <= clock.now_utc))::bigint
         AS oldest_available_seconds,
       count(*) FILTER (WHERE w.performed_at IS NOT NULL) AS reserved,
       extract(epoch FROM clock.now_utc - min(w.performed_at))::bigint AS oldest_reserved_seconds,
       count(*) FILTER (WHERE w.executions_count > 1) AS repeated,
       max(w.executions_count) AS max_attempts
FROM (SELECT queue_name, performed_at, coalesce(scheduled_at, created_at) AS due, executions_count
      FROM {table} WHERE finished_at IS NULL ORDER BY scheduled_at LIMIT %(window)s) w
CROSS JOIN (SELECT now() AT TIME ZONE 'UTC' AS now_utc) clock
GROUP BY w.queue_name, clock.now_utc
ORDER BY 1
LIMIT %(groups)s
