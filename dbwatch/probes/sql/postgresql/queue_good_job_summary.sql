-- GoodJob: unfinished jobs per queue, %(window)s in (queue_name, scheduled_at) order: queue by
-- queue (the next name by one probe of the partial index_good_jobs_on_queue_name_and_scheduled_at),
-- each queue's earliest scheduled first through that index, a queue taking what the window
-- has left (jobs without a queue last). Every unfinished job when they fit the window; past
-- it, the window is capped (window_capped), never a read of every unfinished job: before
-- ANALYZE the planner estimates `finished_at IS NULL` at 0.5 percent and read a 1 M backlog by a
-- bitmap and a sort (330 ms). Rails stores UTC in timestamp without time zone.
WITH RECURSIVE walk AS (
  SELECT NULL::text AS name,
         (SELECT min(queue_name) FROM {table} WHERE finished_at IS NULL) AS next,
         0::bigint AS taken, 0 AS depth, 0::bigint AS total, 0::bigint AS available,
         NULL::timestamp AS oldest_available, 0::bigint AS reserved,
         NULL::timestamp AS oldest_reserved, 0::bigint AS repeated, NULL::int AS max_attempts
  UNION ALL
  SELECT w.next,
         (SELECT min(j.queue_name) FROM {table} j
          WHERE j.finished_at IS NULL AND j.queue_name > w.next),
         w.taken + a.total, w.depth + 1, a.total, a.available, a.oldest_available, a.reserved,
         a.oldest_reserved, a.repeated, a.max_attempts
  FROM walk w
  CROSS JOIN LATERAL (
    SELECT count(*) AS total,
           count(*) FILTER (WHERE r.performed_at IS NULL AND r.due <= now() AT TIME ZONE 'UTC')
             AS available,
           min(r.due) FILTER (WHERE r.performed_at IS NULL AND r.due <= now() AT TIME ZONE 'UTC')
             AS oldest_available,
           count(*) FILTER (WHERE r.performed_at IS NOT NULL) AS reserved,
           min(r.performed_at) AS oldest_reserved,
           count(*) FILTER (WHERE r.executions_count > 1) AS repeated,
           max(r.executions_count) AS max_attempts
    FROM (SELECT performed_at, coalesce(scheduled_at, created_at) AS due, executions_count
          FROM {table} WHERE queue_name = w.next AND finished_at IS NULL
          ORDER BY scheduled_at LIMIT %(window)s - w.taken) r) a
  WHERE w.next IS NOT NULL AND w.taken < %(window)s AND w.depth < %(groups)s
),
unnamed AS (
  SELECT NULL::text AS name, count(*) AS total,
         count(*) FILTER (WHERE r.performed_at IS NULL AND r.due <= now() AT TIME ZONE 'UTC')
           AS available,
         min(r.due) FILTER (WHERE r.performed_at IS NULL AND r.due <= now() AT TIME ZONE 'UTC')
           AS oldest_available,
         count(*) FILTER (WHERE r.performed_at IS NOT NULL) AS reserved,
         min(r.performed_at) AS oldest_reserved,
         count(*) FILTER (WHERE r.executions_count > 1) AS repeated,
         max(r.executions_count) AS max_attempts
  FROM (SELECT performed_at, coalesce(scheduled_at, created_at) AS due, executions_count
        FROM {table} WHERE queue_name IS NULL AND finished_at IS NULL
        ORDER BY scheduled_at
        LIMIT greatest(%(window)s - (SELECT coalesce(max(taken), 0) FROM walk), 0)) r
)
SELECT q.name AS queue, q.total, q.available,
       extract(epoch FROM now() AT TIME ZONE 'UTC' - q.oldest_available)::bigint
         AS oldest_available_seconds,
       q.reserved,
       extract(epoch FROM now() AT TIME ZONE 'UTC' - q.oldest_reserved)::bigint
         AS oldest_reserved_seconds,
       q.repeated, q.max_attempts
FROM (SELECT name, total, available, oldest_available, reserved, oldest_reserved, repeated,
             max_attempts FROM walk
      UNION ALL
      SELECT * FROM unnamed) q
WHERE q.total > 0
ORDER BY 1
LIMIT %(groups)s
