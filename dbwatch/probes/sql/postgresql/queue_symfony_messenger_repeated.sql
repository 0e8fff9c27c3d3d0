-- Symfony Messenger messages carrying a RedeliveryStamp (retried by the retry strategy), by
-- queue and retryCount, read from the first 16 kB of body and headers (PHP or JSON serializer).
-- The same rows as the summary: at most %(window)s, queue by queue through the queue_name index
-- (a skip scan for the names, then equality: index scans whatever the statistics), the
-- failure transport's queues (names containing 'failed') left out.
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
SELECT w.queue_name AS queue, w.retries + 1 AS attempts, NULL::text AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM (SELECT y.queue_name,
             -- the regular expression only where its literal is (strpos is cheap)
             CASE WHEN strpos(y.x, 'retryCount') > 0
                  THEN substring(y.x FROM 'retryCount\D{1,12}(\d{1,6})')::int END AS retries
      FROM (SELECT x.queue_name, left(x.headers, 4096) || left(x.body, 16384) AS x
      FROM (SELECT r.queue_name, r.headers, r.body
            FROM q CROSS JOIN LATERAL (SELECT m.queue_name, m.headers, m.body
                                       FROM {table} m
                                       WHERE m.queue_name >= q.name AND m.queue_name <= q.name
                                       LIMIT %(window)s) r
            WHERE q.name NOT LIKE '%%failed%%'
            LIMIT %(window)s) x) y) w
WHERE w.retries > 0
GROUP BY 1, 2
ORDER BY n DESC
LIMIT %(groups)s
