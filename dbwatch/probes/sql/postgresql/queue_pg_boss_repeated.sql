-- pg-boss jobs not finished on their second or later try (attempts = retry_count + 1), by queue,
-- over the summary's window: created/retry jobs in (name, start_after) order (pg-boss 10/11's
-- job_i5 holds that order: the read stops at the window, where one sort of every unfinished job
-- spilled to disk, ~1 s at a 1 M backlog) and active ones apart.
SELECT w.name AS queue, w.retry_count + 1 AS attempts, left(w.name, 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM ((SELECT name, retry_count FROM {table}
       WHERE state IN ('created', 'retry') ORDER BY name, start_after LIMIT %(window)s)
      UNION ALL
      (SELECT name, retry_count FROM {table} WHERE state = 'active' LIMIT %(window)s)) w
WHERE w.retry_count > 0
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
