-- Queue-table candidates in one catalog query: each table with several marker columns (types
-- only for the attempt counters), the connected database first; only the URL's database when
-- the target is scoped (%(schema)s; NULL = every schema). No join to TABLES here:
-- on MariaDB that opens every table for its statistics (7 s at 5,000 tables, measured);
-- the row estimate is read per probed table by queue_estimate.sql instead.
SELECT c.TABLE_SCHEMA AS `schema`, c.TABLE_NAME AS table_name,
       GROUP_CONCAT(CONCAT(LOWER(c.COLUMN_NAME), ' ',
                           IF(c.COLUMN_NAME IN ('attempts', 'attempt', 'error_count', 'executions_count'),
                              c.COLUMN_TYPE, ''))
                    ORDER BY c.COLUMN_NAME SEPARATOR ',') AS columns,
       MAX(c.TABLE_SCHEMA = DATABASE()) AS current_db
FROM information_schema.COLUMNS c
WHERE c.COLUMN_NAME IN %(markers)s
  AND c.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
  AND (%(schema)s IS NULL OR c.TABLE_SCHEMA = %(schema)s)
GROUP BY c.TABLE_SCHEMA, c.TABLE_NAME
HAVING COUNT(*) >= 6
ORDER BY current_db DESC, c.TABLE_SCHEMA, c.TABLE_NAME
LIMIT 2000
