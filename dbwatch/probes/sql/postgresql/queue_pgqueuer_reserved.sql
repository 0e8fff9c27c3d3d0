-- pgqueuer picked jobs: the age of their heartbeat; past the consumer's heartbeat_timeout
-- (30 s by default) the consumer is gone and another one re-picks them. Its partial index
-- pgqueuer_picked_heartbeat_idx holds exactly these rows.
SELECT w.entrypoint AS queue, extract(epoch FROM now() - w.heartbeat)::bigint AS reserved_seconds,
       count(*) AS n, 30::bigint AS expires_after
FROM (SELECT entrypoint, heartbeat FROM {table} WHERE status = 'picked'
      ORDER BY heartbeat LIMIT %(window)s) w
GROUP BY 1, 2
ORDER BY 2 DESC
LIMIT %(groups)s
