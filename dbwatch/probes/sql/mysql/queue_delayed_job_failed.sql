-- Delayed::Job jobs failed for good in the last %(horizon)s seconds, among the newest
-- %(window)s ids.
SELECT f.queue AS queue, f.head AS head, f.job_class AS job_class, COUNT(*) AS n,
       SUM(f.age <= 3600) AS n_1h, SUM(f.age <= 21600) AS n_6h, SUM(f.age <= 86400) AS n_24h,
       SUM(f.age <= 259200) AS n_3d, SUM(f.age <= 604800) AS n_7d,
       CAST(MAX(f.failed_at) AS CHAR) AS latest, MIN(f.age) AS latest_seconds_ago
FROM (SELECT p.queue, p.failed_at, TIMESTAMPDIFF(SECOND, p.failed_at, UTC_TIMESTAMP()) AS age,
             SUBSTRING_INDEX(p.e, CHAR(10), 1) AS head,
             LEFT(CASE WHEN LOCATE('job_class: ', p.h) > 0
                       THEN SUBSTRING_INDEX(SUBSTRING(p.h, LOCATE('job_class: ', p.h) + 11), CHAR(10), 1)
                       WHEN LOCATE('!ruby/object:', p.h) > 0
                       THEN SUBSTRING_INDEX(SUBSTRING_INDEX(SUBSTRING(p.h, LOCATE('!ruby/object:', p.h) + 13),
                                                            CHAR(10), 1), ' ', 1) END, 255) AS job_class
      FROM (SELECT COALESCE(LEFT(queue, 255), '(none)') AS queue, failed_at,
                   LEFT(last_error, 400) AS e, LEFT(handler, 2048) AS h
            FROM {table} FORCE INDEX (PRIMARY)
            WHERE failed_at >= UTC_TIMESTAMP() - INTERVAL %(horizon)s SECOND
              AND id >= %(min_id)s
            -- the newest %(text_rows)s failures of the id window: each last_error is read whole
            ORDER BY id DESC LIMIT %(text_rows)s) p) f
GROUP BY f.queue, f.head, f.job_class
ORDER BY n DESC
LIMIT %(groups)s
