-- procrastinate 3.x jobs waiting or running again after a failed try (attempts > 0), by queue
-- and task, over the same window as the summary.
-- Plans that hold without statistics (a 1 M backlog: the partial index's bitmap would read all
-- of it and sort it). `fit` says whether the waiting and running jobs fit the window: their id
-- span (min/max of the partial index), else a count of at most window + 1 of them (first
-- within 2 x window ids from the oldest: a dense backlog is told there). If they fit,
-- the partial index finds them all; if not, the oldest by id are the first ones of a
-- primary-key walk that stops at the window (its filter in a CASE, estimated as most rows, so
-- the walk is chosen cold too). Both branches return the same rows; `fit` only picks the plan.
WITH fit AS MATERIALIZED (
  SELECT CASE WHEN (SELECT max(id) FROM {table} WHERE status IN ('todo', 'doing'))
                   - (SELECT min(id) FROM {table} WHERE status IN ('todo', 'doing')) < %(window)s
              THEN true
              -- more than the window within the first 2 x window ids: cannot fit (a dense
              -- backlog); read by an id range of the partial index, not all of its entries
              WHEN (SELECT count(*)
                    FROM (SELECT 1 FROM {table}
                          WHERE status IN ('todo', 'doing')
                            AND id >= (SELECT min(id) FROM {table}
                                       WHERE status IN ('todo', 'doing'))
                            AND id < (SELECT min(id) FROM {table}
                                      WHERE status IN ('todo', 'doing')) + 2 * %(window)s
                          LIMIT %(window)s + 1) d) > %(window)s
              THEN false
              ELSE (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status IN ('todo', 'doing')
                                          LIMIT %(window)s + 1) b) <= %(window)s END AS small
)
SELECT w.queue_name AS queue, w.attempts + 1 AS attempts, left(w.task_name, 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM ((SELECT queue_name, task_name, attempts FROM {table}
        WHERE status IN ('todo', 'doing') AND (SELECT small FROM fit)
        ORDER BY id LIMIT %(window)s)
      UNION ALL
      (SELECT queue_name, task_name, attempts FROM {table}
       WHERE CASE WHEN status IN ('todo', 'doing') THEN 1 ELSE 0 END <> 0
         AND NOT (SELECT small FROM fit)
       ORDER BY id LIMIT %(window)s)) w
WHERE w.attempts > 0
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
