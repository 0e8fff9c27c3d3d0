-- Oban unfinished jobs on their second or later attempt, by queue and worker.
SELECT r.queue, r.attempt AS attempts, left(r.worker, 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM (SELECT queue, attempt, worker FROM {table}
      WHERE state IN ('available', 'scheduled', 'retryable', 'executing') ORDER BY id LIMIT %(window)s) r
WHERE r.attempt > 1
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
