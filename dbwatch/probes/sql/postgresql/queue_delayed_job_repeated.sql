-- Delayed::Job jobs that failed before and will run again, by queue and class (the handler
-- YAML's job_class for ActiveJob, else its !ruby/object tag), over the oldest %(window)s ids.
SELECT r.queue, r.attempts + 1 AS attempts,
       left(coalesce(substring(r.h FROM 'job_class: *([A-Za-z0-9_:]+)'),
                     substring(r.h FROM '!ruby/object:([A-Za-z0-9_:]+)')), 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM (SELECT coalesce(queue, '(none)') AS queue, attempts, left(handler, 2048) AS h FROM {table}
      WHERE failed_at IS NULL AND attempts > 0 AND id BETWEEN %(lo)s AND %(max_id)s) r
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
