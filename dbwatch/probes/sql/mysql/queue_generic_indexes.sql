-- The columns the indexes of one schema's generic queue candidates lead with (constant schema,
-- named tables: only those are opened).
SELECT s.TABLE_NAME AS table_name, LOWER(s.COLUMN_NAME) AS column_name
FROM information_schema.STATISTICS s
WHERE s.TABLE_SCHEMA = %(schema)s AND s.TABLE_NAME IN %(tables)s AND s.SEQ_IN_INDEX = 1
LIMIT 5000
