-- Generic queue table: unfinished rows attempted more than once, by queue, job type, attempts
-- (texts by the row's key where the table has one: join).
SELECT r.queue, r.att AS attempts, {kind} AS job_class, NULL AS timeout_head, COUNT(*) AS n
FROM ({rows}) r {join}
WHERE r.state IN ('waiting', 'scheduled', 'running') AND r.att > 1
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
