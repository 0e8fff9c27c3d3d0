-- Laravel failed_jobs of the last %(horizon)s seconds, among the newest %(window)s rows by id
-- (a primary-key range): grouped by queue, the exception's first line (SQL text with its
-- bindings cut off) and the job class, with counts for fixed windows (1h 6h 24h 3d 7d).
SELECT f.queue AS queue, f.head AS head, f.job_class AS job_class, COUNT(*) AS n,
       SUM(f.age <= 3600) AS n_1h, SUM(f.age <= 21600) AS n_6h, SUM(f.age <= 86400) AS n_24h,
       SUM(f.age <= 259200) AS n_3d, SUM(f.age <= 604800) AS n_7d,
       CAST(MAX(f.failed_at) AS CHAR) AS latest, MIN(f.age) AS latest_seconds_ago
FROM (SELECT LEFT(p.queue, 255) AS queue, p.failed_at, TIMESTAMPDIFF(SECOND, p.failed_at, NOW()) AS age,
             SUBSTRING_INDEX(SUBSTRING_INDEX(SUBSTRING_INDEX(p.e, CHAR(10), 1), ' (SQL: ', 1),
                             ' (Connection: ', 1) AS head,
             CASE WHEN LOCATE('"displayName":"', p.h) > 0
                  THEN LEFT(SUBSTRING_INDEX(SUBSTRING(p.h, LOCATE('"displayName":"', p.h) + 15), '"', 1), 255)
             END AS job_class
      FROM (SELECT queue, failed_at, LEFT(exception, 400) AS e, LEFT(payload, 2048) AS h
            FROM {table} FORCE INDEX (PRIMARY)
            WHERE id >= %(min_id)s
              AND failed_at >= NOW() - INTERVAL %(horizon)s SECOND) p) f
GROUP BY f.queue, f.head, f.job_class
ORDER BY n DESC
LIMIT %(groups)s
