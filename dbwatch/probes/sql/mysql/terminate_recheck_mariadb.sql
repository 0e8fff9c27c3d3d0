-- MariaDB: as terminate_recheck.sql plus QUERY_ID (a new statement since the listing = a
-- different session state: the kill is skipped).
SELECT p.ID AS thread_id, p.USER AS user, p.COMMAND AS command, p.TIME AS command_seconds,
       p.QUERY_ID AS query_id, t.trx_id
FROM information_schema.PROCESSLIST p
LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
WHERE p.ID = %(thread_id)s
