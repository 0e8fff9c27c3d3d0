-- Queue-table candidates in one catalog query: each table with marker columns (library shapes'
-- and the queue model's role names) — their types, enum labels, the columns its indexes lead
-- with — pg_class.reltuples as the row estimate, tables on the search_path first. A table is a
-- candidate with 6 markers, or 3 with one a queue's own (runnable-at, claim, attempts), or 2
-- and a queue-like name; the marker list is hash-joined (cheap at thousands of tables).
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
FROM pg_attribute a
JOIN (SELECT DISTINCT unnest(%(markers)s::text[])::name AS name) m ON m.name = a.attname
JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p') AND NOT c.relispartition
JOIN pg_namespace n ON n.oid = c.relnamespace
JOIN pg_type t ON t.oid = a.atttypid
WHERE a.attnum > 0 AND NOT a.attisdropped
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%%'
GROUP BY n.nspname, c.relname, c.oid
HAVING count(*) >= 6
    OR (count(*) >= 3 AND count(*) FILTER (WHERE a.attname = ANY (%(core)s::text[]::name[])) >= 1)
    OR (count(*) >= 2 AND c.relname ~ %(name_pattern)s)
ORDER BY current_db DESC, 1, 2
LIMIT 2000
