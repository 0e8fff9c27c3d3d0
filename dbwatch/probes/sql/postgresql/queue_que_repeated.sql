-- Que jobs that already failed at least once (attempts = error_count + 1), by queue and class
-- (the ActiveJob wrapper's real class from args[0].job_class), over the summary's window.
-- Plans that hold without statistics (a 1 M backlog: que_poll_idx's bitmap would read all of it
-- and sort it by id). `fit`: a count of at most window + 1 unfinished jobs says whether they fit
-- the window. If they do, que_poll_idx finds them all; if not, the oldest by id are the first
-- ones of a primary-key walk that stops at the window (its filter in a CASE, estimated as most
-- rows, so the walk is chosen cold too). Both branches return the same rows. The count itself
-- is a bitmap of the whole que_poll_idx before ANALYZE (48-75 ms at 1 M entries): when the
-- table's partial indexes (que_poll_idx) are larger than %(poll_bytes)s, far more entries than
-- the window, the walk is taken without counting (an InitPlan runs only when its CASE arm is).
WITH fit AS MATERIALIZED (
  SELECT CASE
    WHEN (SELECT coalesce(sum(pg_relation_size(i.indexrelid)), 0) FROM pg_index i
          WHERE i.indrelid = (SELECT tableoid FROM {table} LIMIT 1) AND i.indpred IS NOT NULL)
         > %(poll_bytes)s THEN false
    ELSE (SELECT count(*) <= %(window)s
          FROM (SELECT 1 FROM {table} WHERE finished_at IS NULL AND expired_at IS NULL
                LIMIT %(window)s + 1) b)
  END AS small
)
SELECT r.queue, r.error_count + 1 AS attempts,
       left(CASE WHEN r.job_class LIKE 'ActiveJob::%%' THEN r.args -> 0 ->> 'job_class'
                 ELSE r.job_class END, 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM ((SELECT queue, error_count, job_class, args FROM {table}
        WHERE finished_at IS NULL AND expired_at IS NULL AND (SELECT small FROM fit)
        ORDER BY id LIMIT %(window)s)
      UNION ALL
      (SELECT queue, error_count, job_class, args FROM {table}
       WHERE CASE WHEN finished_at IS NULL AND expired_at IS NULL THEN 1 ELSE 0 END <> 0
         AND NOT (SELECT small FROM fit)
       ORDER BY id LIMIT %(window)s)) r
WHERE r.error_count > 0
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
