-- Symfony Messenger (Doctrine transport): messages per queue_name, at most %(window)s read
-- through its queue_name index, queue by queue: the queue names by a skip scan (one index
-- probe each, at most %(groups)s), then each queue's rows by equality (an index scan whatever
-- the statistics, cold ones included); the failure transport's rows (names containing
-- 'failed'), however many, are never read. Acknowledged messages are deleted. The failure
-- transport's queue is read by the failed query. Doctrine writes local DATETIMEs: compared
-- with localtimestamp.
-- Each queue's rows as a range of one value: the planner estimates a range between unknown
-- bounds at 0.5 per cent, with or without statistics, so it is an index scan (an equality would be
-- estimated from n_distinct: a whole-table scan behind a big failure transport).
WITH RECURSIVE q (name, depth) AS (
  (SELECT queue_name, 1 FROM {table} ORDER BY queue_name LIMIT 1)
  UNION ALL
  SELECT (SELECT m.queue_name FROM {table} m WHERE m.queue_name > q.name
          ORDER BY m.queue_name LIMIT 1), q.depth + 1
  FROM q WHERE q.name IS NOT NULL AND q.depth < %(groups)s
)
SELECT w.queue_name AS queue, count(*) AS total,
       count(*) FILTER (WHERE w.delivered_at IS NULL AND w.available_at <= localtimestamp) AS available,
       extract(epoch FROM localtimestamp - min(w.available_at)
                 FILTER (WHERE w.delivered_at IS NULL AND w.available_at <= localtimestamp))::bigint
         AS oldest_available_seconds,
       count(*) FILTER (WHERE w.delivered_at IS NOT NULL) AS reserved,
       extract(epoch FROM localtimestamp - min(w.delivered_at))::bigint AS oldest_reserved_seconds,
       0 AS repeated, NULL::int AS max_attempts
FROM (SELECT r.queue_name, r.available_at, r.delivered_at
      FROM q CROSS JOIN LATERAL (SELECT m.queue_name, m.available_at, m.delivered_at
                                 FROM {table} m
                                 WHERE m.queue_name >= q.name AND m.queue_name <= q.name
                                 LIMIT %(window)s) r
      WHERE q.name NOT LIKE '%%failed%%'
      LIMIT %(window)s) w
GROUP BY 1
ORDER BY 1
LIMIT %(groups)s
