-- Generic queue table: every distinct value of its status column by a skip scan of the index
-- that leads with it (one index probe per value), at most %(values)s values.
WITH RECURSIVE v (s, depth) AS (
  (SELECT {status}, 1 FROM {table} WHERE {status} IS NOT NULL ORDER BY {status} LIMIT 1)
  UNION ALL
  SELECT (SELECT t.{status} FROM {table} t WHERE t.{status} > v.s
          ORDER BY t.{status} LIMIT 1), v.depth + 1
  FROM v WHERE v.s IS NOT NULL AND v.depth < %(values)s
)
SELECT left(s::text, 64) AS value, NULL::bigint AS n FROM v WHERE s IS NOT NULL
