-- Lock waits from information_schema (MariaDB, MySQL 5.7): waiter, lock, blocker, sessions.
SELECT r.trx_mysql_thread_id AS waiting_thread_id, r.trx_id AS waiting_trx_id,
       TIMESTAMPDIFF(SECOND, r.trx_wait_started, NOW()) AS wait_seconds,
       TIMESTAMPDIFF(SECOND, r.trx_started, NOW()) AS waiting_trx_seconds,
       LEFT(r.trx_query, 2048) AS waiting_query, rp.USER AS waiting_user, rp.HOST AS waiting_host,
       rl.lock_table AS locked_table, rl.lock_index AS locked_index,
       rl.lock_mode AS lock_mode, rl.lock_type AS lock_type,
       b.trx_mysql_thread_id AS blocking_thread_id, b.trx_id AS blocking_trx_id,
       TIMESTAMPDIFF(SECOND, b.trx_started, NOW()) AS blocking_trx_seconds,
       LEFT(b.trx_query, 2048) AS blocking_query, b.trx_state AS blocking_trx_state,
       bp.USER AS blocking_user, bp.HOST AS blocking_host, bp.COMMAND AS blocking_command,
       bp.TIME AS blocking_command_seconds
FROM information_schema.INNODB_LOCK_WAITS w
JOIN information_schema.INNODB_TRX r ON r.trx_id = w.requesting_trx_id
JOIN information_schema.INNODB_TRX b ON b.trx_id = w.blocking_trx_id
LEFT JOIN information_schema.INNODB_LOCKS rl ON rl.lock_id = w.requested_lock_id
LEFT JOIN information_schema.PROCESSLIST rp ON rp.ID = r.trx_mysql_thread_id
LEFT JOIN information_schema.PROCESSLIST bp ON bp.ID = b.trx_mysql_thread_id
ORDER BY r.trx_wait_started, r.trx_id
LIMIT %(limit)s
