-- MariaDB: as terminate_recheck.sql plus QUERY_ID, which moves with every statement the
-- thread starts (the kill itself is conditional on it: terminate_kill_mariadb.sql).
SELECT p.ID AS thread_id, p.USER AS user, p.COMMAND AS command, p.TIME AS command_seconds,
       LEFT(p.INFO, 2048) AS info, p.QUERY_ID AS query_id
FROM information_schema.PROCESSLIST p
WHERE p.ID = %(thread_id)s
