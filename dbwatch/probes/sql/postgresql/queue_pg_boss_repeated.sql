-- pg-boss jobs not finished on their second or later try (attempts = retry_count + 1), by queue,
-- over the summary's window: %(window)s created/retry jobs in (name, start_after) order, read
-- as the summary reads them ({by_queue}: pg-boss 12 queue by queue through job_i11/i14, 10/11 in
-- one job_i5 scan that stops at the window; a sort of every unfinished job spilled to disk,
-- ~1 s at a 1 M backlog), and active ones apart. The walk keeps each queue's counts by
-- retry_count as a small jsonb array (one read of the window). The active ones (the active_scan fragment):
-- 12 through job_i14; 10/11 not here (`false`): the sweep reads them with QU002's and QU004's
-- jobs in one pass and adds them to these rows (probes/queue_pg_boss.py).
WITH RECURSIVE walk AS (
  SELECT NULL::text AS name,
         least(u.a,
               (SELECT min(j.name) FROM {table} j
                WHERE j.name <= coalesce(u.a, (SELECT max(name) FROM {table}))
                  AND {created_blocked}),
               (SELECT min(j.name) FROM {table} j
                WHERE j.name <= coalesce(u.a, (SELECT max(name) FROM {table}))
                  AND {retry_blocked})) AS next,
         0::bigint AS taken, 0 AS depth, NULL::jsonb AS tries
  FROM (SELECT (SELECT min(name) FROM {table} WHERE {unblocked}) AS a) u
  WHERE {by_queue}
  UNION ALL
  SELECT w.next, n.next, w.taken + a.total, w.depth + 1, a.tries
  FROM walk w
  CROSS JOIN LATERAL (
    SELECT coalesce(sum(g.n), 0)::bigint AS total,
           jsonb_agg(jsonb_build_array(g.retry_count, g.n)) FILTER (WHERE g.retry_count > 0)
             AS tries
    FROM (SELECT r.retry_count, count(*) AS n
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
                LIMIT %(window)s - w.taken) r
          GROUP BY r.retry_count) g) a
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
tried AS (
  SELECT w.name, (e.value ->> 0)::int AS retry_count, (e.value ->> 1)::bigint AS n
  FROM walk w CROSS JOIN LATERAL jsonb_array_elements(w.tries) e
  UNION ALL
  SELECT f.name, f.retry_count, count(*)
  FROM (SELECT name, retry_count FROM {table}
        WHERE NOT {by_queue} AND state < 'active' ORDER BY name, start_after
        LIMIT %(window)s) f
  WHERE f.retry_count > 0
  GROUP BY 1, 2
  UNION ALL
  SELECT x.name, x.retry_count, count(*)
  FROM (SELECT name, retry_count FROM {table} WHERE {active_scan} AND state = 'active'
        LIMIT %(window)s) x
  WHERE x.retry_count > 0
  GROUP BY 1, 2
)
SELECT t.name AS queue, t.retry_count + 1 AS attempts, left(t.name, 255) AS job_class,
       NULL::text AS timeout_head, sum(t.n)::bigint AS n
FROM tried t
GROUP BY t.name, t.retry_count
ORDER BY n DESC
LIMIT %(groups)s
