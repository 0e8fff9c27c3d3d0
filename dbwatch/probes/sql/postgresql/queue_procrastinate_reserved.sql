-- procrastinate 3.x 'doing' jobs and their worker: a worker row that is gone (pruned: worker_id
-- set NULL) means stalled now (limit 0); else the age of its last heartbeat against
-- stalled_worker_timeout (30 s), as get_stalled_jobs() reads it.
SELECT j.queue_name AS queue,
       CASE WHEN wk.id IS NULL THEN 0
            ELSE extract(epoch FROM now() - wk.last_heartbeat)::bigint END AS reserved_seconds,
       count(*) AS n,
       CASE WHEN wk.id IS NULL THEN 0 ELSE 30 END::bigint AS expires_after,
       (wk.id IS NULL) AS worker_gone
FROM (SELECT queue_name, worker_id FROM {table} WHERE status = 'doing'
      ORDER BY id LIMIT %(window)s) j
LEFT JOIN {workers} wk ON wk.id = j.worker_id
GROUP BY 1, 2, 4, 5
ORDER BY 2 DESC
LIMIT %(groups)s
