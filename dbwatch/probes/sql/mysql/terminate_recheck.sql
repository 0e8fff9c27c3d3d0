-- Re-read one thread and its InnoDB transaction immediately before KILL. PROCESSLIST is read
-- live; INNODB_TRX comes from a cache up to 0.1 s old, so TIME (seconds in the current
-- command) must not have restarted either.
SELECT p.ID AS thread_id, p.USER AS user, p.COMMAND AS command, p.TIME AS command_seconds,
       t.trx_id
FROM information_schema.PROCESSLIST p
LEFT JOIN information_schema.INNODB_TRX t ON t.trx_mysql_thread_id = p.ID
WHERE p.ID = %(thread_id)s
