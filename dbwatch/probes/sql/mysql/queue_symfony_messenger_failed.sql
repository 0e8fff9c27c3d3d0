-- Symfony Messenger messages in the failure transport's queue (name containing 'failed') over
-- the newest ids (constant range), with a slice around the ErrorDetailsStamp / message class
-- (parsed by dbwatch, bounded). When: created_at (sent to the failure transport).
SELECT f.queue, f.head, f.job_class, COUNT(*) AS n,
       SUM(f.age <= 3600) AS n_1h, SUM(f.age <= 21600) AS n_6h, SUM(f.age <= 86400) AS n_24h,
       SUM(f.age <= 259200) AS n_3d, SUM(f.age <= 604800) AS n_7d,
       CAST(MAX(f.created_at) AS CHAR) AS latest, MIN(f.age) AS latest_seconds_ago
FROM (SELECT queue_name AS queue, created_at, TIMESTAMPDIFF(SECOND, created_at, NOW()) AS age,
             -- searched as bytes: LOCATE on the text compares by its collation, position by
             -- position (~300 us a failed message of ~9 kB; 5x less as bytes); the slices are
             -- made text again (a character cut in two becomes '?')
             CONVERT(SUBSTRING(x, GREATEST(LOCATE(_binary'exceptionClass', x) - 1, 1), 400)
                     USING utf8mb4) AS head,
             CONVERT(SUBSTRING(x, GREATEST(LOCATE(_binary'message\\";O:', x),
                                           LOCATE(_binary'"type":', x), 1), 150) USING utf8mb4)
               AS job_class
      FROM (SELECT queue_name, created_at,
                   CONCAT(LEFT(CAST(headers AS BINARY), 4096), LEFT(CAST(body AS BINARY), 16384)) AS x
            FROM {table} FORCE INDEX (PRIMARY)
            WHERE id >= %(min_id)s AND queue_name LIKE '%%failed%%'
              AND created_at >= NOW() - INTERVAL %(horizon)s SECOND
            -- the newest %(text_rows)s failed messages: each body is read whole (off-page)
            ORDER BY id DESC LIMIT %(text_rows)s) r) f
GROUP BY f.queue, f.head, f.job_class
ORDER BY n DESC
LIMIT %(groups)s
