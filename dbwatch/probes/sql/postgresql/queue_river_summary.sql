-- River: jobs not yet finished per queue over the oldest %(window)s by id; scheduled and
-- retryable jobs whose time has come count as available (the stager moves them shortly).
-- Plans that hold without statistics. `fit`: at most window + 1 entries of the state index,
-- read in its order (a one-sided enum range is estimated at a third of the table, so the
-- ordered index scan that stops early is chosen cold too), say whether the unfinished jobs fit
-- the window. If they do, the state index finds them all; if not (a backlog past the window),
-- the oldest by id are the first unfinished ones of a primary-key walk that stops at the window
-- (its filter in a CASE, estimated as most rows): the state index's bitmap would read the whole
-- backlog and sort it. Both branches return the same rows; `fit` only chooses the plan.
-- River's unfinished states are two ranges of its enum (available; retryable, running,
-- scheduled): half a window each, so the ordered scan still wins cold on its wider rows.
WITH fit AS MATERIALIZED (
  SELECT (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE state <= 'available'
                               ORDER BY state LIMIT %(window)s / 2 + 1) a) <= %(window)s / 2
     AND (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE state >= 'retryable'
                                ORDER BY state LIMIT %(window)s / 2 + 1) b) <= %(window)s / 2 AS small
)
SELECT w.queue, count(*) AS total,
       count(*) FILTER (WHERE w.state::text <> 'running' AND w.scheduled_at <= clock.now_s) AS available,
       extract(epoch FROM clock.now_s - min(w.scheduled_at) FILTER (WHERE w.state::text <> 'running'
                                                                   AND w.scheduled_at <= clock.now_s))::bigint
         AS oldest_available_seconds,
       count(*) FILTER (WHERE w.state::text = 'running') AS reserved,
       extract(epoch FROM clock.now_s - min(w.attempted_at) FILTER (WHERE w.state::text = 'running'))::bigint
         AS oldest_reserved_seconds,
       count(*) FILTER (WHERE w.attempt > 1) AS repeated,
       max(w.attempt) AS max_attempts
FROM ((SELECT queue, state, scheduled_at, attempted_at, attempt FROM {table}
        WHERE state IN ('available', 'scheduled', 'retryable', 'running') AND (SELECT small FROM fit)
        ORDER BY id LIMIT %(window)s)
      UNION ALL
      (SELECT queue, state, scheduled_at, attempted_at, attempt FROM {table}
       WHERE CASE WHEN state IN ('available', 'scheduled', 'retryable', 'running') THEN 1 ELSE 0 END <> 0
         AND NOT (SELECT small FROM fit)
       ORDER BY id LIMIT %(window)s)) w
CROSS JOIN (SELECT now() AS now_s) clock
GROUP BY w.queue, clock.now_s
ORDER BY 1
LIMIT %(groups)s
