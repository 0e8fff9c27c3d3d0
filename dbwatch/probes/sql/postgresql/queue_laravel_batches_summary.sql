-- Laravel job_batches not finished nor cancelled, per batch name: jobs still to run
-- (pending_jobs counts failed jobs too) and the oldest such batch's age. The table has only its
-- varchar primary key (Laravel's ordered UUIDs: time order) and no index for the filter: the
-- newest %(window)s batches, the key range (lo_key, hi_key] found by queue_newest_keys (a range
-- between two constants: an index range scan with or without statistics; filtering in key order
-- walked every finished batch, 1 M at 1 M). A lo_key (more batches past the window) sets
-- window_capped_ids (probes/queue.py). Epoch-second columns.
SELECT coalesce(nullif(w.name, ''), '(unnamed)') AS queue, count(*) AS total,
       sum(w.pending_jobs - w.failed_jobs) AS available,
       clock.now_s - min(w.created_at) AS oldest_available_seconds,
       0 AS reserved, NULL::bigint AS oldest_reserved_seconds,
       NULL::bigint AS repeated, NULL::bigint AS max_attempts
FROM (SELECT left(name, 255) AS name, pending_jobs, failed_jobs, created_at FROM {table}
      WHERE id <= %(hi_key)s AND (%(lo_key)s::text IS NULL OR id > %(lo_key)s)
        AND finished_at IS NULL AND cancelled_at IS NULL) w
CROSS JOIN (SELECT extract(epoch FROM now())::bigint AS now_s) clock
WHERE w.pending_jobs > w.failed_jobs
GROUP BY 1, clock.now_s
ORDER BY 1
LIMIT %(groups)s
