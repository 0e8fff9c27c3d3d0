-- Oban unfinished jobs on their second or later attempt, by queue and worker.
-- Plans that hold without statistics. `fit`: at most window + 1 entries of the state index,
-- read in its order (a one-sided enum range is estimated at a third of the table, so the
-- ordered index scan that stops early is chosen cold too), say whether the unfinished jobs fit
-- the window. If they do, the state index finds them all; if not (a backlog past the window),
-- the oldest by id are the first unfinished ones of a primary-key walk that stops at the window
-- (its filter in a CASE, estimated as most rows): the state index's bitmap would read the whole
-- backlog and sort it. Both branches return the same rows; `fit` only chooses the plan.
WITH fit AS MATERIALIZED (
  SELECT count(*) <= %(window)s AS small
  FROM (SELECT 1 FROM {table} WHERE state < 'completed' ORDER BY state LIMIT %(window)s + 1) b
)
SELECT r.queue, r.attempt AS attempts, left(r.worker, 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM ((SELECT queue, attempt, worker FROM {table}
        WHERE state IN ('available', 'scheduled', 'retryable', 'executing') AND (SELECT small FROM fit)
        ORDER BY id LIMIT %(window)s)
      UNION ALL
      (SELECT queue, attempt, worker FROM {table}
       WHERE CASE WHEN state IN ('available', 'scheduled', 'retryable', 'executing') THEN 1 ELSE 0 END <> 0
         AND NOT (SELECT small FROM fit)
       ORDER BY id LIMIT %(window)s)) r
WHERE r.attempt > 1
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
