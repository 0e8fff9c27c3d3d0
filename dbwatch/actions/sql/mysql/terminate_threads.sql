-- Threads for `dbwatch terminate`, with their InnoDB transaction (identity: thread id + trx id).
SELECT p.ID AS thread_id, p.USER AS user, p.HOST AS host, p.DB AS db, p.COMMAND AS command,
       p.TIME AS command_seconds, p.STATE AS state, LEFT(p.INFO, 2048) AS info,
       t.trx_id, t.trx_state, t.trx_rows_modified, t.trx_started,
       TIMESTAMPDIFF(SECOND, t.trx_started, NOW()) AS trx_seconds,
       LEFT(t.trx_query, 2048) AS trx_query,
       p.ID = CONNECTION_ID() AS is_self
FROM information_schema.PROCESSLIST p
LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
ORDER BY t.trx_started IS NULL, t.trx_started, p.ID
LIMIT %(limit)s
