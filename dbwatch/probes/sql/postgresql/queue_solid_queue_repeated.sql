-- Solid Queue jobs waiting for another run: Active Job's serialized "executions" (the runs so
-- far; retry_on enqueues the job again with it) read from the end of `arguments`, where Rails
-- writes it after the job's own arguments. The oldest %(lookups)s ready and scheduled
-- executions each (one job lookup per execution: a smaller window than the summary's,
-- said in QU003's evidence as repeated_window).
SELECT r.queue_name AS queue, r.executions + 1 AS attempts, left(r.class_name, 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM ((SELECT job_id FROM {ready_executions} ORDER BY id LIMIT %(lookups)s)
      UNION ALL
      (SELECT job_id FROM {scheduled_executions} ORDER BY id LIMIT %(lookups)s)) e
-- LATERAL … LIMIT 1: one primary-key lookup per execution; a plain join let the planner run the
-- regular expression over the whole jobs table (finished jobs stay there).
CROSS JOIN LATERAL (
  SELECT j.queue_name, j.class_name,
         -- the regular expression anchored at the key's first place (strpos): a few bytes, not 1 kB
         substring(substr(right(j.arguments, 1024), strpos(right(j.arguments, 1024), '"executions"'), 40)
                   FROM '^"executions"\s*:\s*(\d{1,9})')::bigint AS executions
  FROM {table} j WHERE j.id = e.job_id LIMIT 1) r
WHERE r.executions >= 1
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
