-- Laravel-shaped jobs tables (by columns, any name or schema) and their indexes' columns.
-- Starts from pg_attribute rows named reserved_at, so thousands of tables cost little.
WITH jobs AS (
  SELECT c.oid, n.nspname AS schema, c.relname AS table_name
  FROM pg_attribute a
  JOIN pg_class c ON c.oid = a.attrelid AND c.relkind IN ('r', 'p')
  JOIN pg_namespace n ON n.oid = c.relnamespace
  WHERE a.attname = 'reserved_at' AND NOT a.attisdropped
    AND a.attrelid >= 16384  -- FirstNormalObjectId (see dead_tuples.sql)
    AND n.nspname NOT IN ('pg_catalog', 'information_schema')
    AND EXISTS (SELECT 1 FROM pg_attribute q WHERE q.attrelid = c.oid AND q.attname = 'queue' AND NOT q.attisdropped)
    AND EXISTS (SELECT 1 FROM pg_attribute p WHERE p.attrelid = c.oid AND p.attname = 'payload' AND NOT p.attisdropped)
)
SELECT j.schema, j.table_name, i.relname AS index_name,
       array(SELECT att.attname::text
             FROM unnest(x.indkey::int2[]) WITH ORDINALITY AS k(attnum, ord)
             JOIN pg_attribute att ON att.attrelid = j.oid AND att.attnum = k.attnum
             ORDER BY k.ord) AS columns,
       x.indisprimary AS is_primary,
       pg_relation_size(i.oid) AS index_bytes
FROM jobs j
LEFT JOIN pg_index x ON x.indrelid = j.oid
LEFT JOIN pg_class i ON i.oid = x.indexrelid
ORDER BY j.schema, j.table_name, i.relname
LIMIT 1000
