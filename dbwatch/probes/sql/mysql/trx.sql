-- Open InnoDB transactions with their sessions; dbwatch's own excluded; query cut to 2 kB.
SELECT t.trx_id, t.trx_state, t.trx_started,
       TIMESTAMPDIFF(SECOND, t.trx_started, NOW()) AS trx_seconds,
       t.trx_mysql_thread_id AS thread_id,
       LEFT(t.trx_query, 2048) AS trx_query,
       t.trx_operation_state, t.trx_tables_locked, t.trx_lock_structs, t.trx_rows_locked,
       t.trx_rows_modified, t.trx_isolation_level,
       p.USER AS user, p.HOST AS host, p.DB AS db, p.COMMAND AS command, p.TIME AS command_seconds,
       p.STATE AS state, LEFT(p.INFO, 2048) AS info
FROM information_schema.INNODB_TRX t
LEFT JOIN information_schema.PROCESSLIST p ON p.ID = t.trx_mysql_thread_id
WHERE t.trx_mysql_thread_id <> CONNECTION_ID()
ORDER BY t.trx_started
LIMIT %(limit)s
