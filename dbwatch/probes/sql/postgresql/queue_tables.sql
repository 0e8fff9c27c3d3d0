-- Queue-table candidates in one catalog query. First the candidates, counted cheaply per table
-- oid: 6 library markers, or 3 markers with one a queue's own (runnable-at, claim, attempts),
-- or 2 and a queue-like name (markers in every spelling: run_at, "runAt", runat). The marker
-- list is hash-joined to one scan of pg_attribute (by text: its name index would be walked once
-- per marker). Then, for candidates only: ALL their columns with types (the queue model also
-- reads roles by meaning: created_ts, stopped, date_done), enum labels, the columns their
-- indexes lead with, reltuples as the row estimate; tables on the search_path first.
WITH m AS (SELECT DISTINCT unnest(%(markers)s::text[]) AS name),
cand AS (
  SELECT a.attrelid,
         count(*) FILTER (WHERE a.attname::text = ANY (%(library)s::text[])) >= 6
           OR (count(*) >= 3
               AND count(*) FILTER (WHERE a.attname::text = ANY (%(core)s::text[])) >= 1) AS strong
  FROM pg_attribute a
  JOIN m ON m.name = a.attname::text
  WHERE a.attnum > 0 AND NOT a.attisdropped
    AND a.attrelid >= 16384  -- FirstNormalObjectId: skips initdb's catalogs (see dead_tuples.sql)
  GROUP BY a.attrelid
  HAVING count(*) >= 2
)
SELECT n.nspname AS schema, c.relname AS table_name,
       json_object_agg(a.attname, format_type(a.atttypid, a.atttypmod)) AS columns,
       json_object_agg(a.attname, (SELECT array_agg(e.enumlabel::text ORDER BY e.enumsortorder)
                                   FROM pg_enum e WHERE e.enumtypid = a.atttypid))
         FILTER (WHERE t.typtype = 'e') AS enums,
       max(c.reltuples)::bigint AS rows_estimate,
       bool_or(n.nspname = ANY (current_schemas(false))) AS current_db,
       (SELECT array_agg(DISTINCT x.attname::text)
        FROM pg_index i JOIN pg_attribute x ON x.attrelid = i.indrelid AND x.attnum = i.indkey[0]
        WHERE i.indrelid = c.oid) AS indexed
FROM cand
JOIN pg_class c ON c.oid = cand.attrelid AND c.relkind IN ('r', 'p') AND NOT c.relispartition
  AND (cand.strong OR c.relname ~ %(name_pattern)s)
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
JOIN pg_type t ON t.oid = a.atttypid
WHERE n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%%'
GROUP BY n.nspname, c.relname, c.oid
ORDER BY current_db DESC, 1, 2
LIMIT 2000
