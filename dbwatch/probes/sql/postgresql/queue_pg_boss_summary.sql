-- pg-boss (10+: snake_case columns; `name` is the queue): jobs created or waiting for a retry,
-- and active ones, per queue: %(window)s created/retry jobs in (name, start_after) order (the
-- order of its fetch index), and at most %(window)s active ones. state is pg-boss's enum
-- (created < retry < active < completed …), so 1 M completed rows are never read. Two reads
-- of the same window, one of them pruned by a constant ({by_queue}, from the table's columns):
-- - 10/11 (`flat`): job_i5 (name, start_after) WHERE state < 'active' holds the order; the
--   one-sided enum range is estimated at a third of the table, so the ordered scan that stops
--   at the window is the plan before ANALYZE as after;
-- - 12 (`walk`): no index has that order (job_i14 is (name, state, blocked, start_after)), so
--   queue by queue, each queue's created and retry
--   jobs merged from four job_i14 ranges in start_after order, a queue taking what the window
--   has left: at most %(window)s rows read, where one sort read every waiting job. The next
--   queue is the least name past this one with a waiting job: the next unblocked one by one
--   job_i11 probe (it holds them by name), a blocked one by job_i14 within the names before
--   it (one pass over job_i14 for the whole walk): queues with no waiting job are never
--   visited; at most %(groups)s queues.
-- Active jobs (the active_read fragment): 12 reads at most %(window)s of them here (job_i14).
-- pg-boss 10/11 have no index on active jobs: reading them is a scan of every row of every
-- partition (55–75 ms CPU at 1 M rows, whatever the plan), which the reserved query does
-- anyway for QU002 (every active job, the oldest first). So 10/11 read them there only: this
-- query's reserved / oldest_reserved_seconds are NULL (not read, not zero) and the check takes
-- the active count per queue from the reserved rows (checks/queue_health.py).
WITH RECURSIVE walk AS (
  SELECT NULL::text AS name,
         least(u.a,
               (SELECT min(j.name) FROM {table} j
                WHERE j.name <= coalesce(u.a, (SELECT max(name) FROM {table}))
                  AND {created_blocked}),
               (SELECT min(j.name) FROM {table} j
                WHERE j.name <= coalesce(u.a, (SELECT max(name) FROM {table}))
                  AND {retry_blocked})) AS next,
         0::bigint AS taken, 0 AS depth, 0::bigint AS total, 0::bigint AS available,
         NULL::timestamptz AS oldest_available, 0::bigint AS repeated, NULL::int AS max_retry
  FROM (SELECT (SELECT min(name) FROM {table} WHERE {unblocked}) AS a) u
  WHERE {by_queue}
  UNION ALL
  SELECT w.next, n.next, w.taken + a.total, w.depth + 1, a.total, a.available,
         a.oldest_available, a.repeated, a.max_retry
  FROM walk w
  CROSS JOIN LATERAL (
    SELECT count(*) AS total,
           count(*) FILTER (WHERE r.start_after <= now()) AS available,
           min(r.start_after) FILTER (WHERE r.start_after <= now()) AS oldest_available,
           count(*) FILTER (WHERE r.retry_count > 0) AS repeated,
           max(r.retry_count) AS max_retry
    FROM (SELECT b.start_after, b.retry_count
          FROM ((SELECT start_after, retry_count FROM {table}
                 WHERE name = w.next AND {created} ORDER BY start_after)
                UNION ALL
                (SELECT start_after, retry_count FROM {table}
                 WHERE name = w.next AND {created_blocked} ORDER BY start_after)
                UNION ALL
                (SELECT start_after, retry_count FROM {table}
                 WHERE name = w.next AND {retry} ORDER BY start_after)
                UNION ALL
                (SELECT start_after, retry_count FROM {table}
                 WHERE name = w.next AND {retry_blocked} ORDER BY start_after)) b
          ORDER BY b.start_after
          LIMIT %(window)s - w.taken) r) a
  CROSS JOIN LATERAL (
    SELECT least(u.a,
                 (SELECT min(j.name) FROM {table} j
                  WHERE j.name > w.next AND j.name <= coalesce(u.a, (SELECT max(name) FROM {table}))
                    AND {created_blocked}),
                 (SELECT min(j.name) FROM {table} j
                  WHERE j.name > w.next AND j.name <= coalesce(u.a, (SELECT max(name) FROM {table}))
                    AND {retry_blocked})) AS next
    FROM (SELECT (SELECT min(j.name) FROM {table} j WHERE j.name > w.next AND {unblocked}) AS a) u
  ) n
  WHERE w.next IS NOT NULL AND w.taken < %(window)s AND w.depth < %(groups)s
),
flat AS (
  SELECT f.name, count(*) AS total,
         count(*) FILTER (WHERE f.start_after <= now()) AS available,
         min(f.start_after) FILTER (WHERE f.start_after <= now()) AS oldest_available,
         count(*) FILTER (WHERE f.retry_count > 0) AS repeated, max(f.retry_count) AS max_retry
  FROM (SELECT name, start_after, retry_count FROM {table}
        WHERE NOT {by_queue} AND state < 'active' ORDER BY name, start_after
        LIMIT %(window)s) f
  GROUP BY f.name
),
waiting AS (
  SELECT name, total, available, oldest_available, repeated, max_retry FROM walk
  WHERE total > 0
  UNION ALL
  SELECT name, total, available, oldest_available, repeated, max_retry FROM flat
),
active AS (
  SELECT x.name, count(*) AS reserved, min(x.started_on) AS oldest_reserved,
         count(*) FILTER (WHERE x.retry_count > 0) AS repeated, max(x.retry_count) AS max_retry
  FROM (SELECT name, started_on, retry_count FROM {table}
        WHERE {active_read} AND state = 'active'
        LIMIT %(window)s) x
  GROUP BY x.name
)
SELECT coalesce(w.name, a.name) AS queue,
       coalesce(w.total, 0) + coalesce(a.reserved, 0) AS total,
       coalesce(w.available, 0) AS available,
       extract(epoch FROM now() - w.oldest_available)::bigint AS oldest_available_seconds,
       CASE WHEN {active_read} THEN coalesce(a.reserved, 0) END AS reserved,
       extract(epoch FROM now() - a.oldest_reserved)::bigint AS oldest_reserved_seconds,
       coalesce(w.repeated, 0) + coalesce(a.repeated, 0) AS repeated,
       greatest(w.max_retry, a.max_retry) + 1 AS max_attempts
FROM waiting w
FULL JOIN active a ON a.name = w.name
ORDER BY 1
LIMIT %(groups)s
