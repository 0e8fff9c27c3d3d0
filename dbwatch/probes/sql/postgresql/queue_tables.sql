-- Queue-table candidates in one catalog query: each table with several marker columns (and
-- their types), pg_class.reltuples as the row estimate, tables on the search_path first.
SELECT n.nspname AS schema, c.relname AS table_name,
       string_agg(a.attname || ' ' || format_type(a.atttypid, a.atttypmod), ',' ORDER BY a.attname)
         AS columns,
       max(c.reltuples)::bigint AS rows_estimate,
       bool_or(n.nspname = ANY (current_schemas(false))) AS current_db
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p') AND NOT c.relispartition
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE a.attname = ANY (%(markers)s) AND a.attnum > 0 AND NOT a.attisdropped
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%%'
GROUP BY n.nspname, c.relname
HAVING count(*) >= 6
ORDER BY current_db DESC, 1, 2
LIMIT 2000
