-- River: jobs not yet finished per queue over the oldest %(window)s by id; scheduled and
-- retryable jobs whose time has come count as available (the stager moves them shortly).
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
FROM (SELECT queue, state, scheduled_at, attempted_at, attempt FROM {table}
      WHERE state IN ('available', 'scheduled', 'retryable', 'running') ORDER BY id LIMIT %(window)s) w
CROSS JOIN (SELECT now() AS now_s) clock
GROUP BY w.queue, clock.now_s
ORDER BY 1
LIMIT %(groups)s
