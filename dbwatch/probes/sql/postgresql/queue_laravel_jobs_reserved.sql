-- Laravel jobs reserved by a worker: how long ago, per queue and second (oldest first), so
-- the check can apply any retry_after. Same bounded window as the summary.
SELECT w.queue, clock.now_s - w.reserved_at AS reserved_seconds, count(*) AS n,
       NULL::bigint AS expires_after
FROM (SELECT queue, reserved_at FROM {table} ORDER BY id LIMIT %(window)s) w
CROSS JOIN (SELECT extract(epoch FROM now())::bigint AS now_s) clock
WHERE w.reserved_at IS NOT NULL
GROUP BY w.queue, w.reserved_at, clock.now_s
ORDER BY w.reserved_at
LIMIT %(groups)s
