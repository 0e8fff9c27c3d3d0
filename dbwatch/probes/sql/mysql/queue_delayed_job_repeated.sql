-- Delayed::Job jobs that failed before and will run again, by queue and class (the handler
-- YAML's job_class for ActiveJob, else its !ruby/object tag), cut out by position.
SELECT r.queue AS queue, r.attempts + 1 AS attempts,
       LEFT(CASE WHEN LOCATE('job_class: ', r.h) > 0
                 THEN SUBSTRING_INDEX(SUBSTRING(r.h, LOCATE('job_class: ', r.h) + 11), CHAR(10), 1)
                 WHEN LOCATE('!ruby/object:', r.h) > 0
                 THEN SUBSTRING_INDEX(SUBSTRING_INDEX(SUBSTRING(r.h, LOCATE('!ruby/object:', r.h) + 13),
                                                      CHAR(10), 1), ' ', 1) END, 255) AS job_class,
       NULL AS timeout_head, COUNT(*) AS n
FROM (SELECT COALESCE(queue, '(none)') AS queue, attempts, LEFT(handler, 2048) AS h FROM {table} FORCE INDEX (PRIMARY)
      WHERE failed_at IS NULL AND attempts > 0
        AND id <= %(max_id)s) r
GROUP BY r.queue, attempts, job_class
ORDER BY n DESC
LIMIT %(groups)s
