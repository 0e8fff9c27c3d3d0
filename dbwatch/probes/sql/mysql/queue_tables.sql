-- Queue-table candidates: the marker columns of every table with their types (the queue
-- model fits roles by type), grouped by dbwatch. No GROUP BY / GROUP_CONCAT / ORDER BY here: a grouped
-- information_schema read needs a second (Aria) temporary table, and MariaDB 10.11.19 was seen
-- to crash freeing one when such a statement was interrupted (signal 11 in
-- ha_maria::drop_table from free_tmp_table). No join to TABLES either: on MariaDB that opens
-- every table for its statistics (7 s at 5,000 tables, measured); the row estimate is read per
-- probed table by queue_estimate.sql. Every schema: queue_tables_scoped.sql reads one.
SELECT c.TABLE_SCHEMA AS `schema`, c.TABLE_NAME AS table_name, LOWER(c.COLUMN_NAME) AS column_name,
       c.COLUMN_TYPE AS column_type
FROM information_schema.COLUMNS c
WHERE c.COLUMN_NAME IN %(markers)s
  AND c.TABLE_SCHEMA NOT IN ('mysql', 'information_schema', 'performance_schema', 'sys')
LIMIT 50000
