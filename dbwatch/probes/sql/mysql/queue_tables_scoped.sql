-- Queue-table candidates of ONE schema (the target URL's database): the constant equality on
-- TABLE_SCHEMA lets the server open only that schema's tables. Same shape and reasons as
-- queue_tables.sql (no grouping in SQL).
SELECT c.TABLE_SCHEMA AS `schema`, c.TABLE_NAME AS table_name, LOWER(c.COLUMN_NAME) AS column_name,
       c.COLUMN_TYPE AS column_type
FROM information_schema.COLUMNS c
WHERE c.TABLE_SCHEMA = %(schema)s
  AND c.COLUMN_NAME IN %(markers)s
LIMIT 50000
