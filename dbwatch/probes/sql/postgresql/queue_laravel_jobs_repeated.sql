-- Laravel jobs with attempts > 1 in the window, by queue, attempts, job class (the payload's
-- displayName) and the payload's own timeout. Payload cut to 2 kB in SQL, never cast to JSON.
SELECT r.queue, r.attempts,
       left(substring(r.h FROM '"displayName"\s*:\s*"([^"]*)"'), 255) AS job_class,
       substring(r.h FROM '"timeout"\s*:\s*(\d+)') AS timeout_head,
       count(*) AS n
FROM (SELECT queue, attempts, left(payload, 2048) AS h
      FROM {table}
      WHERE id <= (SELECT coalesce(max(x.id), 0)
                   FROM (SELECT id FROM {table} ORDER BY id LIMIT %(window)s) x)
        AND attempts > 1) r
GROUP BY 1, 2, 3, 4
ORDER BY n DESC
LIMIT %(groups)s
