-- Que (>= 1.0): unfinished, unexpired jobs per queue over the oldest %(window)s by id. Que
-- holds advisory locks, not reservations, so running jobs count as available here.
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
SELECT w.queue, count(*) AS total,
       count(*) FILTER (WHERE w.run_at <= now()) AS available,
       extract(epoch FROM now() - min(w.run_at) FILTER (WHERE w.run_at <= now()))::bigint
         AS oldest_available_seconds,
       0 AS reserved, NULL::bigint AS oldest_reserved_seconds,
       count(*) FILTER (WHERE w.error_count > 0) AS repeated,
       max(w.error_count) + 1 AS max_attempts
FROM ((SELECT queue, run_at, error_count FROM {table}
        WHERE finished_at IS NULL AND expired_at IS NULL AND (SELECT small FROM fit)
        ORDER BY id LIMIT %(window)s)
      UNION ALL
      (SELECT queue, run_at, error_count FROM {table}
       WHERE CASE WHEN finished_at IS NULL AND expired_at IS NULL THEN 1 ELSE 0 END <> 0
         AND NOT (SELECT small FROM fit)
       ORDER BY id LIMIT %(window)s)) w
GROUP BY w.queue
ORDER BY w.queue
LIMIT %(groups)s
