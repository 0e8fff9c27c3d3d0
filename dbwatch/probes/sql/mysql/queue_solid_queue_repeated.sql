-- Solid Queue jobs waiting for another run: Active Job's serialized "executions" (the runs so
-- far; retry_on enqueues the job again with it) read from the end of `arguments`, where Rails
-- writes it after the job's own arguments. The oldest %(lookups)s ready and scheduled executions
-- each (one job lookup per execution: QU003's evidence says repeated_window).
SELECT r.queue_name AS queue, r.executions + 1 AS attempts, LEFT(r.class_name, 255) AS job_class,
       NULL AS timeout_head, COUNT(*) AS n
FROM (SELECT j.queue_name, j.class_name,
             CAST(SUBSTRING(REGEXP_SUBSTR(RIGHT(j.arguments, 1024), '"executions":[0-9]{1,9}'), 14)
                  AS UNSIGNED) AS executions
      FROM ((SELECT job_id FROM {ready_executions} ORDER BY id LIMIT %(lookups)s)
            UNION ALL
            (SELECT job_id FROM {scheduled_executions} ORDER BY id LIMIT %(lookups)s)) e
      JOIN {table} j ON j.id = e.job_id) r
WHERE r.executions >= 1
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
