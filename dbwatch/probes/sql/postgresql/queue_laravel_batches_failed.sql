-- Laravel job_batches created in the last %(horizon)s seconds with failed jobs, per batch name:
-- the sum of failed_jobs, timed by the batch's created_at (the jobs' own failures are in
-- failed_jobs). The newest %(window)s batches by key (ordered UUIDs): the constant key range
-- (failed_lo_key, hi_key] of queue_newest_keys (filtering in key order walked every batch
-- without failures).
SELECT b.queue, 'Illuminate' || chr(92) || 'Bus' || chr(92) || 'Batch: ' || count(*) || ' batches with failed jobs' AS head,
       b.queue AS job_class, sum(b.failed_jobs) AS n,
       sum(b.failed_jobs) FILTER (WHERE b.age <= 3600) AS n_1h,
       sum(b.failed_jobs) FILTER (WHERE b.age <= 21600) AS n_6h,
       sum(b.failed_jobs) FILTER (WHERE b.age <= 86400) AS n_24h,
       sum(b.failed_jobs) FILTER (WHERE b.age <= 259200) AS n_3d,
       sum(b.failed_jobs) FILTER (WHERE b.age <= 604800) AS n_7d,
       to_timestamp(max(b.created_at))::text AS latest, min(b.age) AS latest_seconds_ago
FROM (SELECT coalesce(nullif(left(name, 255), ''), '(unnamed)') AS queue, failed_jobs, created_at,
             extract(epoch FROM now())::bigint - created_at AS age
      FROM {table}
      WHERE id <= %(hi_key)s AND (%(failed_lo_key)s::text IS NULL OR id > %(failed_lo_key)s)
        AND failed_jobs > 0 AND created_at >= extract(epoch FROM now())::bigint - %(horizon)s) b
GROUP BY 1
ORDER BY n DESC
LIMIT %(groups)s
