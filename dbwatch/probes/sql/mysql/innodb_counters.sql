-- MariaDB (and MySQL 5.x): deadlock counter and history list length as status variables.
SELECT LOWER(VARIABLE_NAME) AS name, VARIABLE_VALUE AS value
FROM information_schema.GLOBAL_STATUS
WHERE VARIABLE_NAME IN ('INNODB_DEADLOCKS', 'INNODB_HISTORY_LIST_LENGTH')
