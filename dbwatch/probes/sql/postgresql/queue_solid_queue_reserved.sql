-- Solid Queue claimed executions (the oldest %(window)s by id) by the silence of the process that
-- claimed them: seconds since its last heartbeat, or since the claim when the process row is
-- gone. Past process_alive_threshold (5 min) maintenance prunes the process and fails its jobs.
SELECT j.queue_name AS queue,
       extract(epoch FROM (now() AT TIME ZONE 'UTC')
                          - coalesce(p.last_heartbeat_at, c.created_at))::bigint AS reserved_seconds,
       count(*) AS n, 300::bigint AS expires_after
FROM (SELECT job_id, process_id, created_at FROM {claimed_executions} ORDER BY id LIMIT %(window)s) c
JOIN {table} j ON j.id = c.job_id
LEFT JOIN {processes} p ON p.id = c.process_id
GROUP BY 1, 2
ORDER BY 2 DESC
LIMIT %(groups)s
