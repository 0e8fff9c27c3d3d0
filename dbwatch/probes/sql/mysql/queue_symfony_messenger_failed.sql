-- Symfony Messenger messages in the failure transport's queue (name containing 'failed') over
-- the newest ids (constant range), with a slice around the ErrorDetailsStamp / message class
-- (parsed by dbwatch, bounded). When: created_at (sent to the failure transport).
SELECT f.queue, f.head, f.job_class, COUNT(*) AS n,
       SUM(f.age <= 3600) AS n_1h, SUM(f.age <= 21600) AS n_6h, SUM(f.age <= 86400) AS n_24h,
       SUM(f.age <= 259200) AS n_3d, SUM(f.age <= 604800) AS n_7d,
       CAST(MAX(f.created_at) AS CHAR) AS latest, MIN(f.age) AS latest_seconds_ago
FROM (SELECT queue_name AS queue, created_at, TIMESTAMPDIFF(SECOND, created_at, NOW()) AS age,
             SUBSTRING(x, GREATEST(LOCATE('exceptionClass', x) - 1, 1), 400) AS head,
             SUBSTRING(x, GREATEST(LOCATE('message\\";O:', x), LOCATE('"type":', x), 1), 150)
               AS job_class
      FROM (SELECT queue_name, created_at, CONCAT(LEFT(headers, 4096), LEFT(body, 16384)) AS x
            FROM {table} FORCE INDEX (PRIMARY)
            WHERE id >= %(min_id)s AND queue_name LIKE '%%failed%%'
              AND created_at >= NOW() - INTERVAL %(horizon)s SECOND) r) f
GROUP BY f.queue, f.head, f.job_class
ORDER BY n DESC
LIMIT %(groups)s
