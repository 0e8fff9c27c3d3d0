-- Queue-table candidates in one catalog query: each table with several marker columns (types
-- only for the attempt counters), the catalog row estimate, the connected database first.
SELECT c.TABLE_SCHEMA AS `schema`, c.TABLE_NAME AS table_name,
       GROUP_CONCAT(CONCAT(LOWER(c.COLUMN_NAME), ' ',
                           IF(c.COLUMN_NAME IN ('attempts', 'attempt', 'error_count', 'executions_count'),
                              c.COLUMN_TYPE, ''))
                    ORDER BY c.COLUMN_NAME SEPARATOR ',') AS columns,
       MAX(t.TABLE_ROWS) AS rows_estimate,
       MAX(c.TABLE_SCHEMA = DATABASE()) AS current_db
FROM information_schema.COLUMNS c
JOIN information_schema.TABLES t
  ON t.TABLE_SCHEMA = c.TABLE_SCHEMA AND t.TABLE_NAME = c.TABLE_NAME AND t.TABLE_TYPE = 'BASE TABLE'
WHERE c.COLUMN_NAME IN %(markers)s
  AND c.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
GROUP BY c.TABLE_SCHEMA, c.TABLE_NAME
HAVING COUNT(*) >= 6
ORDER BY current_db DESC, c.TABLE_SCHEMA, c.TABLE_NAME
LIMIT 2000
