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
             -- cut by byte search (split_part): a character position (position(), substring
             -- FROM) walks the envelope character by character, ~140 us a failed message
             left(CASE WHEN strpos(x, 'exceptionClass') > 0
                       THEN 'exceptionClass' || split_part(x, 'exceptionClass', 2) ELSE x END,
                  400) AS head,
             left(CASE WHEN strpos(x, 'message\";O:') > 0
                       THEN 'message\";O:' || split_part(x, 'message\";O:', 2)
                       WHEN strpos(x, '"type":') > 0
                       THEN '"type":' || split_part(x, '"type":', 2) ELSE x END, 150)
               AS job_class
      FROM (SELECT queue_name, created_at, substr(headers, 1, 4096) || substr(body, 1, 16384) AS x
            -- the newest %(window)s rows by id: a backward primary-key scan whatever the statistics
            FROM (SELECT id, queue_name, created_at, headers, body FROM {table}
                  ORDER BY id DESC LIMIT %(window)s) w
            WHERE queue_name LIKE '%%failed%%'
              AND created_at >= localtimestamp - make_interval(secs => %(horizon)s)
            -- the newest %(text_rows)s failed messages (the scan's order: no sort); only they
            -- are projected, their headers and body read
            ORDER BY w.id DESC LIMIT %(text_rows)s) r) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
