-- Laravel-shaped jobs tables (by columns, any name or prefix) and their indexes' columns, in
-- the target's database only when it is scoped (%(schema)s; NULL = every schema).
SELECT s.TABLE_SCHEMA AS `schema`, s.TABLE_NAME AS table_name, s.INDEX_NAME AS index_name,
       GROUP_CONCAT(s.COLUMN_NAME ORDER BY s.SEQ_IN_INDEX SEPARATOR ',') AS columns
FROM information_schema.STATISTICS s
JOIN (SELECT c.TABLE_SCHEMA, c.TABLE_NAME
      FROM information_schema.COLUMNS c
      WHERE c.COLUMN_NAME IN ('reserved_at', 'queue', 'payload')
        AND c.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
        AND (%(schema)s IS NULL OR c.TABLE_SCHEMA = %(schema)s)
      GROUP BY c.TABLE_SCHEMA, c.TABLE_NAME
      HAVING COUNT(DISTINCT c.COLUMN_NAME) = 3) j
  ON j.TABLE_SCHEMA = s.TABLE_SCHEMA AND j.TABLE_NAME = s.TABLE_NAME
GROUP BY s.TABLE_SCHEMA, s.TABLE_NAME, s.INDEX_NAME
ORDER BY s.TABLE_SCHEMA, s.TABLE_NAME, s.INDEX_NAME
LIMIT 1000
