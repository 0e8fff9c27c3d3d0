-- Re-read one thread from the live PROCESSLIST immediately before KILL (never INNODB_TRX:
-- it is served from a cache that is refreshed only after 0.1 s without readers).
SELECT p.ID AS thread_id, p.USER AS user, p.COMMAND AS command, p.TIME AS command_seconds,
       LEFT(p.INFO, 2048) AS info, NULL AS query_id
FROM information_schema.PROCESSLIST p
WHERE p.ID = %(thread_id)s
