-- Laravel jobs with attempts > 1 in the window, by queue, attempts, job class (the payload's
-- displayName) and the payload's own timeout. Payload cut to 2 kB in SQL, never cast to JSON.
-- The window is the summary's: the oldest %(window)s rows by id, read by a primary-key walk that
-- stops there (an `id <= max(first window ids)` filter was planned before ANALYZE as a scan of
-- every row: 100 ms at a 1 M backlog).
SELECT r.queue, r.attempts,
       left(substring(r.h FROM '"displayName"\s*:\s*"([^"]*)"'), 255) AS job_class,
       substring(r.h FROM '"timeout"\s*:\s*(\d+)') AS timeout_head,
       count(*) AS n
FROM (SELECT w.queue, w.attempts, left(w.payload, 2048) AS h
      FROM (SELECT queue, attempts, payload FROM {table} ORDER BY id LIMIT %(window)s) w
      WHERE w.attempts > 1) r
GROUP BY 1, 2, 3, 4
ORDER BY n DESC
LIMIT %(groups)s
