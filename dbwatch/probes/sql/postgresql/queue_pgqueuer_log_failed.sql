-- pgqueuer_log: jobs that ended in 'exception' (or 'failed', held) among the newest %(window)s
-- log rows by id (a backward primary-key scan: constant cost), with the traceback's exception.
SELECT f.entrypoint AS queue, f.head, left(f.entrypoint, 255) AS job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age <= 3600) AS n_1h, count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age <= 604800) AS n_7d,
       max(f.created)::text AS latest, min(f.age)::bigint AS latest_seconds_ago
FROM (SELECT entrypoint, created, extract(epoch FROM now() - created) AS age,
             left(coalesce((traceback ->> 'exception_type') || ': ' ||
                           left(traceback ->> 'exception_message', 300), status::text), 400) AS head
      -- the newest %(window)s rows by id: a backward primary-key scan whatever the statistics
      FROM (SELECT * FROM {table} ORDER BY id DESC LIMIT %(window)s) w
      WHERE status IN ('exception', 'failed')
        AND created >= now() - make_interval(secs => %(horizon)s)) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
