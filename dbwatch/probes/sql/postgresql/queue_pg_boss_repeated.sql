-- pg-boss jobs not finished on their second or later try (attempts = retry_count + 1), by queue.
SELECT w.name AS queue, w.retry_count + 1 AS attempts, left(w.name, 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM (SELECT name, retry_count FROM {table}
      WHERE state IN ('created', 'retry', 'active') ORDER BY name, start_after LIMIT %(window)s) w
WHERE w.retry_count > 0
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
