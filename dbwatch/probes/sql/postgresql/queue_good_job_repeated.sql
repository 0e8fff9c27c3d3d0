-- GoodJob unfinished jobs executed more than once, by queue and ActiveJob class.
SELECT r.queue_name AS queue, r.executions_count AS attempts,
       left(r.serialized_params ->> 'job_class', 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM (SELECT queue_name, executions_count, serialized_params
      FROM {table} WHERE finished_at IS NULL ORDER BY scheduled_at LIMIT %(window)s) r
WHERE r.executions_count > 1
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
