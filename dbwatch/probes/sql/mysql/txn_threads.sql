-- The threads whose InnoDB transaction is at least min_age seconds old, with their
-- performance_schema THREAD_ID (the key of the statement and transaction tables), oldest
-- first; plus dbwatch's own (is_self), whose running statement's timer dates the others.
-- A semi-join on INNODB_TRX: no join of two unindexed performance_schema tables. Bounded.
SELECT th.THREAD_ID AS pfs_thread_id, th.PROCESSLIST_ID AS thread_id,
       th.PROCESSLIST_ID = CONNECTION_ID() AS is_self
FROM performance_schema.threads th
WHERE th.PROCESSLIST_ID = CONNECTION_ID()
   OR th.PROCESSLIST_ID IN (SELECT t.trx_mysql_thread_id
                            FROM information_schema.INNODB_TRX t
                            WHERE t.trx_started <= NOW() - INTERVAL %(min_age)s SECOND)
ORDER BY th.PROCESSLIST_ID
LIMIT %(limit)s
