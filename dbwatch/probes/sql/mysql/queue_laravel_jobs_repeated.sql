-- Laravel jobs with attempts > 1 in the window, by queue, attempts, job class (the payload's
-- displayName) and the payload's own timeout. Payload cut to 2 kB in SQL; parsed by position.
SELECT r.queue AS queue, r.attempts AS attempts,
       CASE WHEN LOCATE('"displayName":"', r.h) > 0
            THEN LEFT(SUBSTRING_INDEX(SUBSTRING(r.h, LOCATE('"displayName":"', r.h) + 15), '"', 1), 255)
       END AS job_class,
       CASE WHEN LOCATE('"timeout":', r.h) > 0
            THEN SUBSTRING(r.h, LOCATE('"timeout":', r.h) + 10, 10) END AS timeout_head,
       COUNT(*) AS n
FROM (SELECT queue, attempts, LEFT(payload, 2048) AS h
      FROM {table} FORCE INDEX (PRIMARY)
      WHERE id <= %(max_id)s
        AND attempts > 1) r
GROUP BY r.queue, r.attempts, job_class, timeout_head
ORDER BY n DESC
LIMIT %(groups)s
