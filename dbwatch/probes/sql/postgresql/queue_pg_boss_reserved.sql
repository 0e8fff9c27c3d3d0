-- pg-boss active jobs: time since they were fetched, with each job's own expiration
-- (expire_in or expire_seconds); past it, maintenance fails the job and retries it if it can.
SELECT w.name AS queue, extract(epoch FROM now() - w.started_on)::bigint AS reserved_seconds,
       count(*) AS n, w.expire::bigint AS expires_after
FROM (SELECT name, started_on, {expire} AS expire FROM {table}
      WHERE state = 'active' ORDER BY started_on LIMIT %(window)s) w
GROUP BY 1, 2, 4
ORDER BY 2 DESC
LIMIT %(groups)s
