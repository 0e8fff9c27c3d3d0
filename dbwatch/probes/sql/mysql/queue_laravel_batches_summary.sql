-- Laravel job_batches not finished nor cancelled, per batch name: jobs still to run
-- (pending_jobs counts failed jobs too) and the oldest such batch's age. The table has only its
-- uuid primary key: %(window)s batches in key order. Epoch-second columns.
SELECT COALESCE(NULLIF(w.name, ''), '(unnamed)') AS queue, COUNT(*) AS total,
       SUM(w.pending_jobs - w.failed_jobs) AS available,
       CAST(UNIX_TIMESTAMP() AS SIGNED) - MIN(w.created_at) AS oldest_available_seconds,
       0 AS reserved, NULL AS oldest_reserved_seconds, NULL AS repeated, NULL AS max_attempts
FROM (SELECT LEFT(name, 255) AS name, pending_jobs, failed_jobs, created_at FROM {table}
      WHERE finished_at IS NULL AND cancelled_at IS NULL ORDER BY id LIMIT %(window)s) w
WHERE w.pending_jobs > w.failed_jobs
GROUP BY 1
ORDER BY 1
LIMIT %(groups)s
