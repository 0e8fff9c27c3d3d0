-- Laravel failed_jobs of the last %(horizon)s seconds, among the newest %(window)s rows by id
-- (a primary-key range): grouped by queue, the exception's first line (SQL text with its
-- bindings cut off) and the job class, with counts for fixed windows (1h 6h 24h 3d 7d).
SELECT f.queue, f.head, f.job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age <= 3600) AS n_1h, count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age <= 604800) AS n_7d,
       max(f.failed_at)::text AS latest, min(f.age)::bigint AS latest_seconds_ago
FROM (SELECT left(p.queue, 255) AS queue, p.failed_at,
             extract(epoch FROM localtimestamp - p.failed_at) AS age,
             split_part(split_part(split_part(p.e, chr(10), 1), ' (SQL: ', 1),
                        ' (Connection: ', 1) AS head,
             left(substring(p.h FROM '"displayName"\s*:\s*"([^"]*)"'), 255) AS job_class
      FROM (SELECT queue, failed_at, left(exception, 400) AS e, left(payload, 2048) AS h
            -- a backward primary-key scan whatever the statistics
            FROM (SELECT queue, failed_at, exception, payload FROM {table}
                  ORDER BY id DESC LIMIT %(window)s) w
            WHERE failed_at >= localtimestamp - make_interval(secs => %(horizon)s)) p) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
