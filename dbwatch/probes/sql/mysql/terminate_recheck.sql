-- Re-read one thread and its InnoDB transaction immediately before KILL.
SELECT p.ID AS thread_id, p.USER AS user, p.COMMAND AS command, t.trx_id
FROM information_schema.PROCESSLIST p
LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
WHERE p.ID = %(thread_id)s
