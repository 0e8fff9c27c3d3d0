-- The transaction event of each thread with an open InnoDB transaction at least min_age
-- seconds old (events_transactions_current, when its consumer and the transaction instrument
-- are on): its EVENT_ID orders the thread's statements — the ones after it are this
-- transaction's. Bounded: LIMIT rows.
SELECT th.PROCESSLIST_ID AS thread_id, x.EVENT_ID AS event_id, x.STATE AS state,
       x.ACCESS_MODE AS access_mode, x.AUTOCOMMIT AS autocommit
FROM information_schema.INNODB_TRX t
JOIN performance_schema.threads th ON th.PROCESSLIST_ID = t.trx_mysql_thread_id
JOIN performance_schema.events_transactions_current x ON x.THREAD_ID = th.THREAD_ID
WHERE t.trx_started <= NOW() - INTERVAL %(min_age)s SECOND
  AND t.trx_mysql_thread_id <> CONNECTION_ID()
ORDER BY t.trx_started, th.PROCESSLIST_ID
LIMIT %(limit)s
