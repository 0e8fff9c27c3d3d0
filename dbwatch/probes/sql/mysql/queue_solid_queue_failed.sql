-- Solid Queue failed executions of the last %(horizon)s seconds, the newest %(window)s by id;
-- `error` is Rails JSON {"exception_class":…,"message":…,"backtrace":…}, cut by position.
SELECT f.queue AS queue, f.head AS head, f.job_class AS job_class, COUNT(*) AS n,
       SUM(f.age <= 3600) AS n_1h, SUM(f.age <= 21600) AS n_6h, SUM(f.age <= 86400) AS n_24h,
       SUM(f.age <= 259200) AS n_3d, SUM(f.age <= 604800) AS n_7d,
       CAST(MAX(f.created_at) AS CHAR) AS latest, MIN(f.age) AS latest_seconds_ago
FROM (SELECT LEFT(j.queue_name, 255) AS queue, x.created_at,
             TIMESTAMPDIFF(SECOND, x.created_at, UTC_TIMESTAMP()) AS age,
             CONCAT(CASE WHEN LOCATE('"exception_class":"', x.e) > 0
                         THEN LEFT(SUBSTRING_INDEX(SUBSTRING(x.e, LOCATE('"exception_class":"', x.e) + 19),
                                                   '"', 1), 200)
                         ELSE '(unknown)' END, ': ',
                    CASE WHEN LOCATE('"message":"', x.e) > 0
                         THEN LEFT(SUBSTRING_INDEX(SUBSTRING(x.e, LOCATE('"message":"', x.e) + 11),
                                                   '","backtrace"', 1), 300)
                         ELSE '' END) AS head,
             LEFT(j.class_name, 255) AS job_class
      FROM (SELECT job_id, created_at, LEFT(error, 2048) AS e FROM {failed_executions}
            ORDER BY id DESC LIMIT %(window)s) x
      JOIN {table} j ON j.id = x.job_id
      WHERE x.created_at >= UTC_TIMESTAMP() - INTERVAL %(horizon)s SECOND) f
GROUP BY f.queue, f.head, f.job_class
ORDER BY n DESC
LIMIT %(groups)s
