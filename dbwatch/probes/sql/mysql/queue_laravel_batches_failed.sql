-- Laravel job_batches created in the last %(horizon)s seconds with failed jobs, per batch name:
-- the sum of failed_jobs, timed by the batch's created_at (the jobs' own failures are in
-- failed_jobs). The newest %(window)s batches by key (ordered UUIDs): a bounded backward read.
SELECT b.queue AS queue, CONCAT('Illuminate', CHAR(92 USING utf8mb4), 'Bus', CHAR(92 USING utf8mb4), 'Batch: ', COUNT(*), ' batches with failed jobs') AS head,
       b.queue AS job_class, SUM(b.failed_jobs) AS n,
       SUM(IF(b.age <= 3600, b.failed_jobs, 0)) AS n_1h, SUM(IF(b.age <= 21600, b.failed_jobs, 0)) AS n_6h,
       SUM(IF(b.age <= 86400, b.failed_jobs, 0)) AS n_24h,
       SUM(IF(b.age <= 259200, b.failed_jobs, 0)) AS n_3d,
       SUM(IF(b.age <= 604800, b.failed_jobs, 0)) AS n_7d,
       CAST(FROM_UNIXTIME(MAX(b.created_at)) AS CHAR) AS latest, MIN(b.age) AS latest_seconds_ago
FROM (SELECT COALESCE(NULLIF(LEFT(name, 255), ''), '(unnamed)') AS queue, failed_jobs, created_at,
             CAST(UNIX_TIMESTAMP() AS SIGNED) - created_at AS age
      FROM (SELECT name, failed_jobs, created_at FROM {table} ORDER BY id DESC LIMIT %(window)s) x
      WHERE failed_jobs > 0 AND created_at >= UNIX_TIMESTAMP() - %(horizon)s) b
GROUP BY 1
ORDER BY n DESC
LIMIT %(groups)s
