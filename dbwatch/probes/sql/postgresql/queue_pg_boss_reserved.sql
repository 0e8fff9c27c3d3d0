-- pg-boss active jobs: time since they were fetched, with each job's own expiration
-- (expire_in or expire_seconds); past it, maintenance fails the job and retries it if it can.
-- pg-boss 12: jobs with heartbeat_seconds are failed as soon as their heartbeat is that old
-- (the worker died), so their age is the heartbeat's and their limit heartbeat_seconds.
SELECT w.name AS queue,
       coalesce(w.hb_age, extract(epoch FROM now() - w.started_on)::bigint) AS reserved_seconds,
       count(*) AS n, coalesce(w.hb_limit, w.expire)::bigint AS expires_after,
       (w.hb_limit IS NOT NULL) AS heartbeat
FROM (SELECT name, started_on, {expire} AS expire,
             CASE WHEN {hb_limit} IS NOT NULL THEN {hb_age} END AS hb_age, {hb_limit} AS hb_limit
      FROM {table}
      WHERE state = 'active' ORDER BY started_on LIMIT %(window)s) w
GROUP BY 1, 2, 4, 5
ORDER BY 2 DESC
LIMIT %(groups)s
