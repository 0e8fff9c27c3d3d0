-- The catalog's row estimate of one queue table (constant schema and name: only that table is opened).
SELECT TABLE_ROWS AS rows_estimate
FROM information_schema.TABLES
WHERE TABLE_SCHEMA = %(schema)s AND TABLE_NAME = %(table)s AND TABLE_TYPE = 'BASE TABLE'
