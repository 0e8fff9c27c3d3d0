-- Queue tables of this database (recognised as the queue probe does: several marker columns,
-- read from pg_attribute, which every role may read) that this role cannot read: no USAGE on
-- the schema or no SELECT on the table. Their queue rules would otherwise see nothing.
SELECT n.nspname AS schema,
       c.relname AS "table",
       has_schema_privilege(n.oid, 'USAGE') AS schema_usage,
       has_table_privilege(c.oid, 'SELECT') AS table_select
FROM pg_attribute a
JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p') AND NOT c.relispartition
JOIN pg_namespace n ON n.oid = c.relnamespace
WHERE a.attname = ANY (%(markers)s::name[]) AND a.attnum > 0 AND NOT a.attisdropped
  AND a.attrelid >= 16384  -- FirstNormalObjectId (see dead_tuples.sql)
  AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\_%%'
  AND NOT (has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT'))
GROUP BY n.oid, n.nspname, c.oid, c.relname
HAVING count(*) >= 6
ORDER BY n.nspname, c.relname
LIMIT %(limit)s
