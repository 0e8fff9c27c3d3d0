-- The keys that bound the newest %(window)s and %(failed_window)s rows of a table read by its
-- primary key only (newest-window kinds: Laravel's job_batches, varchar ordered UUIDs): a walk
-- down the key in steps of %(step)s rows, each one index read that stops there (a step is a
-- small share of any table estimate, so it is an index scan with or without statistics; one
-- ORDER BY ... LIMIT window was a whole-table sort whenever the planner underestimated the rows).
-- hi_key: the newest key; lo_key / failed_lo_key: the key just past each window (NULL: the table
-- holds no more rows than that window). The queries then read the constant range
-- (lo_key, hi_key]: a range between two constants is an index range scan even before ANALYZE.
WITH RECURSIVE walk (k, n) AS (
  SELECT (SELECT id FROM {table} ORDER BY id DESC LIMIT 1), 1
  UNION ALL
  SELECT (SELECT t.id FROM {table} t WHERE t.id < w.k ORDER BY t.id DESC
          OFFSET %(step)s - 1 LIMIT 1), w.n + %(step)s
  FROM walk w
  WHERE w.k IS NOT NULL AND w.n < %(last)s
)
SELECT (SELECT k FROM walk WHERE n = 1) AS hi_key,
       (SELECT k FROM walk WHERE n = %(window)s + 1) AS lo_key,
       (SELECT k FROM walk WHERE n = %(failed_window)s + 1) AS failed_lo_key
