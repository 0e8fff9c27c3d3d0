-- procrastinate 3.x jobs waiting or running again after a failed try (attempts > 0), by queue
-- and task, over the same window as the summary.
SELECT w.queue_name AS queue, w.attempts + 1 AS attempts, left(w.task_name, 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM (SELECT queue_name, task_name, attempts FROM {table}
      WHERE status IN ('todo', 'doing') ORDER BY id LIMIT %(window)s) w
WHERE w.attempts > 0
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
