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
             -- the string value of the first "displayName" key, by byte searches: a regex,
             -- left() or substr() walks each payload character by character (70-300 ms over
             -- 20,000 real payloads, 13 ms this way); a value that is no string gives none
             CASE WHEN btrim(split_part(p.d, '"', 1), E' \t\r\n') = ':'
                  THEN left(split_part(p.d, '"', 2), 255) END AS job_class
      FROM (SELECT queue, failed_at, substr(exception, 1, 400) AS e,
                   split_part(payload, '"displayName"', 2) AS d
            -- a backward primary-key scan whatever the statistics
            FROM (SELECT queue, failed_at, exception, payload FROM {table}
                  ORDER BY id DESC LIMIT %(window)s) w
            WHERE failed_at >= localtimestamp - make_interval(secs => %(horizon)s)) p) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
