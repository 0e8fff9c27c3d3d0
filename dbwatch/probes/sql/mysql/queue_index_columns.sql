-- The index columns of one jobs table, in order (constant schema and table: one table opened).
SELECT s.INDEX_NAME AS index_name, s.COLUMN_NAME AS column_name, s.SEQ_IN_INDEX AS seq
FROM information_schema.STATISTICS s
WHERE s.TABLE_SCHEMA = %(schema)s AND s.TABLE_NAME = %(table)s
LIMIT 200
