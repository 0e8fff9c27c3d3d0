-- Last resort where neither base table is readable: the sys schema view (same columns mapped).
SELECT w.waiting_pid AS waiting_thread_id, w.waiting_trx_id,
       w.wait_age_secs AS wait_seconds,
       TIMESTAMPDIFF(SECOND, w.waiting_trx_started, NOW()) AS waiting_trx_seconds,
       LEFT(w.waiting_query, 2048) AS waiting_query, rp.USER AS waiting_user, rp.HOST AS waiting_host,
       w.locked_table, w.locked_index, w.waiting_lock_mode AS lock_mode, w.locked_type AS lock_type,
       w.blocking_pid AS blocking_thread_id, w.blocking_trx_id,
       TIMESTAMPDIFF(SECOND, w.blocking_trx_started, NOW()) AS blocking_trx_seconds,
       LEFT(w.blocking_query, 2048) AS blocking_query, NULL AS blocking_trx_state,
       bp.USER AS blocking_user, bp.HOST AS blocking_host, bp.COMMAND AS blocking_command,
       bp.TIME AS blocking_command_seconds
FROM sys.innodb_lock_waits w
LEFT JOIN information_schema.PROCESSLIST rp ON rp.ID = w.waiting_pid
LEFT JOIN information_schema.PROCESSLIST bp ON bp.ID = w.blocking_pid
ORDER BY w.wait_started
LIMIT %(limit)s
