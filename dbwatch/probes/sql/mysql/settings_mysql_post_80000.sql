-- MySQL 8 moved global variables to performance_schema (information_schema.GLOBAL_VARIABLES is gone).
SELECT VARIABLE_NAME AS name, VARIABLE_VALUE AS value
FROM performance_schema.global_variables
WHERE VARIABLE_NAME IN ('innodb_deadlock_detect', 'innodb_print_all_deadlocks',
                        'innodb_lock_wait_timeout', 'performance_schema', 'log_error',
                        'transaction_isolation', 'wait_timeout')
