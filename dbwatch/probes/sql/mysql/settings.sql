-- InnoDB settings that decide how deadlocks and lock waits are handled and recorded.
SELECT VARIABLE_NAME AS name, VARIABLE_VALUE AS value
FROM information_schema.GLOBAL_VARIABLES
WHERE VARIABLE_NAME IN ('INNODB_DEADLOCK_DETECT', 'INNODB_PRINT_ALL_DEADLOCKS',
                        'INNODB_LOCK_WAIT_TIMEOUT', 'INNODB_DEADLOCK_REPORT',
                        'PERFORMANCE_SCHEMA', 'LOG_ERROR', 'TRANSACTION_ISOLATION',
                        'TX_ISOLATION', 'IDLE_TRANSACTION_TIMEOUT', 'WAIT_TIMEOUT')
