-- Lock waits from performance_schema (MySQL 8.0+, where the information_schema tables are
-- gone). Not run against a live MySQL 8 in the tests: chosen by table presence only.
SELECT r.trx_mysql_thread_id AS waiting_thread_id, r.trx_id AS waiting_trx_id,
       TIMESTAMPDIFF(SECOND, r.trx_wait_started, NOW()) AS wait_seconds,
       TIMESTAMPDIFF(SECOND, r.trx_started, NOW()) AS waiting_trx_seconds,
       LEFT(r.trx_query, 2048) AS waiting_query, rp.USER AS waiting_user, rp.HOST AS waiting_host,
       CONCAT(rl.OBJECT_SCHEMA, '.', rl.OBJECT_NAME) AS locked_table,
       rl.INDEX_NAME AS locked_index, rl.LOCK_MODE AS lock_mode, rl.LOCK_TYPE AS lock_type,
       b.trx_mysql_thread_id AS blocking_thread_id, b.trx_id AS blocking_trx_id,
       TIMESTAMPDIFF(SECOND, b.trx_started, NOW()) AS blocking_trx_seconds,
       LEFT(b.trx_query, 2048) AS blocking_query, b.trx_state AS blocking_trx_state,
       bp.USER AS blocking_user, bp.HOST AS blocking_host, bp.COMMAND AS blocking_command,
       bp.TIME AS blocking_command_seconds
FROM performance_schema.data_lock_waits w
JOIN information_schema.INNODB_TRX r ON r.trx_id = CAST(w.REQUESTING_ENGINE_TRANSACTION_ID AS CHAR)
JOIN information_schema.INNODB_TRX b ON b.trx_id = CAST(w.BLOCKING_ENGINE_TRANSACTION_ID AS CHAR)
LEFT JOIN performance_schema.data_locks rl ON rl.ENGINE_LOCK_ID = w.REQUESTING_ENGINE_LOCK_ID
LEFT JOIN information_schema.PROCESSLIST rp ON rp.ID = r.trx_mysql_thread_id
LEFT JOIN information_schema.PROCESSLIST bp ON bp.ID = b.trx_mysql_thread_id
ORDER BY r.trx_wait_started, r.trx_id
LIMIT %(limit)s
