-- Which lock-wait source this server has: decided by the tables that exist, not the version.
SELECT LOWER(TABLE_SCHEMA) AS table_schema, LOWER(TABLE_NAME) AS table_name
FROM information_schema.TABLES
WHERE (TABLE_SCHEMA = 'performance_schema' AND TABLE_NAME = 'data_lock_waits')
   OR (TABLE_SCHEMA = 'information_schema' AND TABLE_NAME = 'INNODB_LOCK_WAITS')
   OR (TABLE_SCHEMA = 'sys' AND TABLE_NAME = 'innodb_lock_waits')
