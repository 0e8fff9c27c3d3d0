-- Laravel job_batches not finished nor cancelled, per batch name: jobs still to run
-- (pending_jobs counts failed jobs too) and the oldest such batch's age. The table has only its
-- primary key (Laravel's ordered UUIDs: time order): the newest %(window)s batches, a bounded
-- backward read of the clustered key (the table's row estimate past the window sets
-- window_capped_ids). Epoch-second columns.
SELECT COALESCE(NULLIF(w.name, ''), '(unnamed)') AS queue, COUNT(*) AS total,
       SUM(w.pending_jobs - w.failed_jobs) AS available,
       CAST(UNIX_TIMESTAMP() AS SIGNED) - MIN(w.created_at) AS oldest_available_seconds,
       0 AS reserved, NULL AS oldest_reserved_seconds, NULL AS repeated, NULL AS max_attempts
FROM (SELECT LEFT(b.name, 255) AS name, b.pending_jobs, b.failed_jobs, b.created_at
      FROM (SELECT name, pending_jobs, failed_jobs, created_at, finished_at, cancelled_at
            FROM {table} ORDER BY id DESC LIMIT %(window)s) b
      WHERE b.finished_at IS NULL AND b.cancelled_at IS NULL) w
WHERE w.pending_jobs > w.failed_jobs
GROUP BY 1
ORDER BY 1
LIMIT %(groups)s
