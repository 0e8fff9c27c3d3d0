-- GoodJob unfinished jobs executed more than once, by queue and ActiveJob class, over the
-- summary's window: %(window)s unfinished jobs in (queue_name, scheduled_at) order, read
-- queue by queue as the summary reads them (jobs without a queue last). The walk keeps each
-- queue's counts by executions_count and class as a small jsonb array (one read).
WITH RECURSIVE walk AS (
  SELECT NULL::text AS name,
         (SELECT min(queue_name) FROM {table} WHERE finished_at IS NULL) AS next,
         0::bigint AS taken, 0 AS depth, NULL::jsonb AS tries
  UNION ALL
  SELECT w.next,
         (SELECT min(j.queue_name) FROM {table} j
          WHERE j.finished_at IS NULL AND j.queue_name > w.next),
         w.taken + a.total, w.depth + 1, a.tries
  FROM walk w
  CROSS JOIN LATERAL (
    SELECT coalesce(sum(g.n), 0)::bigint AS total,
           jsonb_agg(jsonb_build_array(g.attempts, g.job_class, g.n))
             FILTER (WHERE g.attempts > 1) AS tries
    FROM (SELECT r.executions_count AS attempts,
                 CASE WHEN r.executions_count > 1
                      THEN left(r.serialized_params ->> 'job_class', 255) END AS job_class,
                 count(*) AS n
          FROM (SELECT executions_count, serialized_params FROM {table}
                WHERE queue_name = w.next AND finished_at IS NULL
                ORDER BY scheduled_at LIMIT %(window)s - w.taken) r
          GROUP BY 1, 2) g) a
  WHERE w.next IS NOT NULL AND w.taken < %(window)s AND w.depth < %(groups)s
),
tried AS (
  SELECT w.name AS queue, (e.value ->> 0)::int AS attempts, e.value ->> 1 AS job_class,
         (e.value ->> 2)::bigint AS n
  FROM walk w CROSS JOIN LATERAL jsonb_array_elements(w.tries) e
  UNION ALL
  SELECT NULL::text, r.executions_count, left(r.serialized_params ->> 'job_class', 255), count(*)
  FROM (SELECT executions_count, serialized_params FROM {table}
        WHERE queue_name IS NULL AND finished_at IS NULL
        ORDER BY scheduled_at
        LIMIT greatest(%(window)s - (SELECT coalesce(max(taken), 0) FROM walk), 0)) r
  WHERE r.executions_count > 1
  GROUP BY 1, 2, 3
)
SELECT t.queue, t.attempts, t.job_class, NULL::text AS timeout_head, t.n
FROM tried t
ORDER BY t.n DESC
LIMIT %(groups)s
