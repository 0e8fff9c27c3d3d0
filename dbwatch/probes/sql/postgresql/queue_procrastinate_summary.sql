-- procrastinate 3.x: 'todo' and 'doing' jobs per queue, the oldest %(window)s by id (its partial
-- index procrastinate_jobs_id_lock_idx_v1 holds exactly these). A job has no creation time
-- column: the oldest available job's age is its scheduled_at, else its 'deferred' event.
-- A 'todo' job whose lock a 'doing' job holds cannot run (blocked; the stalled finding names
-- the holder): read through procrastinate_jobs_lock_idx_v1.
-- Plans that hold without statistics (a 1 M backlog: the partial index's bitmap would read all
-- of it and sort it). `fit` says whether the waiting and running jobs fit the window: their id
-- span (min/max of the partial index), else a count of at most window + 1 of them (first
-- within 2 x window ids from the oldest: a dense backlog is told there). If they fit,
-- the partial index finds them all; if not, the oldest by id are the first ones of a
-- primary-key walk that stops at the window (its filter in a CASE, estimated as most rows, so
-- the walk is chosen cold too). Both branches return the same rows; `fit` only picks the plan.
WITH fit AS MATERIALIZED (
  SELECT CASE WHEN (SELECT max(id) FROM {table} WHERE status IN ('todo', 'doing'))
                   - (SELECT min(id) FROM {table} WHERE status IN ('todo', 'doing')) < %(window)s
              THEN true
              -- more than the window within the first 2 x window ids: cannot fit (a dense
              -- backlog); read by an id range of the partial index, not all of its entries
              WHEN (SELECT count(*)
                    FROM (SELECT 1 FROM {table}
                          WHERE status IN ('todo', 'doing')
                            AND id >= (SELECT min(id) FROM {table}
                                       WHERE status IN ('todo', 'doing'))
                            AND id < (SELECT min(id) FROM {table}
                                      WHERE status IN ('todo', 'doing')) + 2 * %(window)s
                          LIMIT %(window)s + 1) d) > %(window)s
              THEN false
              ELSE (SELECT count(*) FROM (SELECT 1 FROM {table} WHERE status IN ('todo', 'doing')
                                          LIMIT %(window)s + 1) b) <= %(window)s END AS small
), g AS (
  -- one pass over the window (w is read once, so it is not materialized; the first ready job
  -- per queue is its min(id), looked up after by primary key: no sort of the window)
  SELECT w.queue_name, count(*) AS total,
         count(*) FILTER (WHERE w.ready) AS available,
         count(*) FILTER (WHERE w.blocked) AS blocked,
         min(w.id) FILTER (WHERE w.ready) AS first_id,
         count(*) FILTER (WHERE w.status = 'doing') AS reserved,
         count(*) FILTER (WHERE w.attempts > 0) AS repeated, max(w.attempts) + 1 AS max_attempts
  FROM (SELECT b.*, (b.status = 'todo' AND NOT b.blocked
                     AND (b.scheduled_at IS NULL OR b.scheduled_at <= now())) AS ready
        FROM (SELECT j.id, j.queue_name, j.status, j.scheduled_at, j.attempts,
                     (j.status = 'todo' AND j.lock IS NOT NULL
                      AND EXISTS (SELECT 1 FROM {table} d WHERE d.lock = j.lock AND d.status = 'doing'))
                       AS blocked
              FROM ((SELECT id, queue_name, status, scheduled_at, attempts, lock FROM {table}
                    WHERE status IN ('todo', 'doing') AND (SELECT small FROM fit)
                    ORDER BY id LIMIT %(window)s)
                  UNION ALL
                  (SELECT id, queue_name, status, scheduled_at, attempts, lock FROM {table}
                   WHERE CASE WHEN status IN ('todo', 'doing') THEN 1 ELSE 0 END <> 0
                     AND NOT (SELECT small FROM fit)
                   ORDER BY id LIMIT %(window)s)) j) b) w
  GROUP BY w.queue_name
  ORDER BY 1
  LIMIT %(groups)s
)
SELECT g.queue_name AS queue, g.total, g.available, g.blocked,
       (SELECT extract(epoch FROM now() - coalesce(f.scheduled_at,
                 (SELECT min(e.at) FROM {events} e WHERE e.job_id = f.id AND e.type = 'deferred')))::bigint
        FROM {table} f WHERE f.id = g.first_id) AS oldest_available_seconds,
       g.reserved, NULL::bigint AS oldest_reserved_seconds, g.repeated, g.max_attempts
FROM g
ORDER BY 1
