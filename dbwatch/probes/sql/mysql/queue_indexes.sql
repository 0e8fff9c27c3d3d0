-- Laravel-shaped jobs tables (reserved_at, queue and payload columns, any name or prefix):
-- the matching column rows, grouped by dbwatch (no GROUP BY on information_schema: see
-- queue_tables.sql). Every schema; queue_indexes_scoped.sql reads the target's database only.
SELECT c.TABLE_SCHEMA AS `schema`, c.TABLE_NAME AS table_name, LOWER(c.COLUMN_NAME) AS column_name
FROM information_schema.COLUMNS c
WHERE c.COLUMN_NAME IN ('reserved_at', 'queue', 'payload')
  AND c.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
LIMIT 30000
