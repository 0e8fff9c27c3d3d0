-- Every column of one schema's generic queue candidates with its type, spelled as declared
-- (the catalog read asked for role names only; the queue model also reads roles by meaning:
-- created_ts, date_done, runAt).
-- Constant schema and named tables: only those are opened. No ORDER BY (see queue_tables.sql).
SELECT c.TABLE_NAME AS table_name, c.COLUMN_NAME AS column_name,
       c.COLUMN_TYPE AS column_type
FROM information_schema.COLUMNS c
WHERE c.TABLE_SCHEMA = %(schema)s AND c.TABLE_NAME IN %(tables)s
LIMIT 20000
