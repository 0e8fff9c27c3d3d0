-- MySQL 8.0.22+: the deadlock events of the error log, readable without file access
-- (innodb_print_all_deadlocks = ON). Bounded by time and rows.
SELECT LOGGED AS logged, THREAD_ID AS thread_id, PRIO AS prio, ERROR_CODE AS error_code,
       SUBSYSTEM AS subsystem, LEFT(DATA, 65536) AS data
FROM performance_schema.error_log
WHERE ERROR_CODE IN ('MY-012468', 'MY-012469')
  AND LOGGED >= NOW(6) - INTERVAL %s SECOND
ORDER BY LOGGED
LIMIT 20000
