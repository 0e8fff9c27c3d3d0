-- Queue-like tables of this database the role cannot read (no USAGE on the schema or no SELECT
-- on the table): their queue rules would otherwise see nothing. Bounded by LIMIT.
SELECT n.nspname AS schema,
       c.relname AS "table",
       has_schema_privilege(n.oid, 'USAGE') AS schema_usage,
       has_table_privilege(c.oid, 'SELECT') AS table_select
FROM pg_class c
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE c.relkind IN ('r', 'p')
  AND n.nspname NOT IN ('pg_catalog', 'information_schema')
  AND n.nspname !~ '^pg_toast'
  AND (c.relname = ANY(%(queue_names)s) OR c.relname ~ %(queue_pattern)s)
  AND NOT (has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT'))
ORDER BY n.nspname, c.relname
LIMIT %(limit)s
