-- Symfony Messenger messages in the failure transport's queue (name containing 'failed') among
-- the newest %(window)s rows by id, with a slice around the ErrorDetailsStamp / message class (parsed
-- by dbwatch, bounded). When: created_at (the time it was sent to the failure transport).
SELECT f.queue, f.head, f.job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age <= 3600) AS n_1h, count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age <= 604800) AS n_7d,
       max(f.created_at)::text AS latest, min(f.age)::bigint AS latest_seconds_ago
FROM (SELECT queue_name AS queue, created_at, extract(epoch FROM localtimestamp - created_at) AS age,
             substring(x FROM greatest(position('exceptionClass' IN x) - 1, 1) FOR 400) AS head,
             substring(x FROM greatest(position('message\";O:' IN x), position('"type":' IN x), 1) FOR 150)
               AS job_class
      FROM (SELECT queue_name, created_at, substr(headers, 1, 4096) || substr(body, 1, 16384) AS x
            -- the newest %(window)s rows by id: a backward primary-key scan whatever the statistics
            FROM (SELECT queue_name, created_at, headers, body FROM {table}
                  ORDER BY id DESC LIMIT %(window)s) w
            WHERE queue_name LIKE '%%failed%%'
              AND created_at >= localtimestamp - make_interval(secs => %(horizon)s)) r) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
