-- queue_indexes.sql for ONE schema (the target URL's database): constant equality on
-- TABLE_SCHEMA, so only that schema's tables are opened.
SELECT c.TABLE_SCHEMA AS `schema`, c.TABLE_NAME AS table_name, LOWER(c.COLUMN_NAME) AS column_name
FROM information_schema.COLUMNS c
WHERE c.TABLE_SCHEMA = %(schema)s AND c.COLUMN_NAME IN ('reserved_at', 'queue', 'payload')
LIMIT 30000
