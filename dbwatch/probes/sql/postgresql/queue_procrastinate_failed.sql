-- procrastinate 3.x jobs failed for good among the newest %(window)s jobs by id (a primary-key scan:
-- the same cost at any table size), when from their 'failed' event. procrastinate keeps no
-- error text in the database: the head says so.
SELECT f.queue_name AS queue, f.head, left(f.task_name, 255) AS job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age <= 3600) AS n_1h, count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age <= 604800) AS n_7d,
       max(f.at)::text AS latest, min(f.age)::bigint AS latest_seconds_ago
FROM (SELECT j.queue_name, j.task_name, e.at, extract(epoch FROM now() - e.at) AS age,
             'procrastinate: failed after ' || j.attempts || ' attempts (error text only in the worker log)' AS head
      -- the newest %(window)s jobs by id: a backward primary-key scan whatever the statistics
      FROM (SELECT id, queue_name, task_name, attempts, status FROM {table}
            ORDER BY id DESC LIMIT %(window)s) j
      CROSS JOIN LATERAL (SELECT max(ev.at) AS at FROM {events} ev
                          WHERE ev.job_id = j.id AND ev.type = 'failed') e
      WHERE j.status = 'failed'
        AND coalesce(e.at, now()) >= now() - make_interval(secs => %(horizon)s)) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
