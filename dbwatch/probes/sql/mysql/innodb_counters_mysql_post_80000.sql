-- MySQL 8: the counters live in information_schema.INNODB_METRICS (lock_deadlocks is on by default).
SELECT CASE NAME WHEN 'lock_deadlocks' THEN 'innodb_deadlocks'
                 ELSE 'innodb_history_list_length' END AS name,
       COUNT AS value
FROM information_schema.INNODB_METRICS
WHERE NAME IN ('lock_deadlocks', 'trx_rseg_history_len')
