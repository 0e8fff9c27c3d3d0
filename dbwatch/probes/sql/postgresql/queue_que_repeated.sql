-- Que jobs that already failed at least once (attempts = error_count + 1), by queue and class
-- (the ActiveJob wrapper's real class from args[0].job_class).
SELECT r.queue, r.error_count + 1 AS attempts,
       left(CASE WHEN r.job_class LIKE 'ActiveJob::%%' THEN r.args -> 0 ->> 'job_class'
                 ELSE r.job_class END, 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM (SELECT queue, error_count, job_class, args FROM {table}
      WHERE finished_at IS NULL AND expired_at IS NULL AND error_count > 0
        AND id <= (SELECT coalesce(max(x.id), 0)
                   FROM (SELECT id FROM {table} WHERE finished_at IS NULL AND expired_at IS NULL
                         ORDER BY id LIMIT %(window)s) x)) r
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
