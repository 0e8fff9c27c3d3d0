-- Solid Queue failed executions of the last %(horizon)s seconds, the newest %(window)s by id;
-- `error` is Rails JSON {"exception_class":…,"message":…,"backtrace":…}, read as text.
SELECT f.queue, f.head, f.job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age <= 3600) AS n_1h, count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age <= 604800) AS n_7d,
       max(f.created_at)::text AS latest, min(f.age)::bigint AS latest_seconds_ago
FROM (SELECT left(j.queue_name, 255) AS queue, x.created_at,
             extract(epoch FROM (now() AT TIME ZONE 'UTC') - x.created_at) AS age,
             -- [^"]+ then the length, not [^"]{1,200}: a bounded repeat costs PostgreSQL's regex
             -- engine a state per repeat (300 us a row)
             coalesce((SELECT c FROM (SELECT substring(x.e FROM '"exception_class"\s*:\s*"([^"]+)"') AS c) k
                       WHERE length(c) <= 200), '(unknown)')
               || ': ' || left(coalesce(substring(x.e FROM '"message"\s*:\s*"((?:[^"\\]|\\.)*)'), ''), 300)
               AS head,
             left(j.class_name, 255) AS job_class
      FROM (SELECT job_id, created_at, left(error, 2048) AS e FROM {failed_executions}
            ORDER BY id DESC LIMIT %(window)s) x
      JOIN {table} j ON j.id = x.job_id
      WHERE x.created_at >= (now() AT TIME ZONE 'UTC') - make_interval(secs => %(horizon)s)) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
