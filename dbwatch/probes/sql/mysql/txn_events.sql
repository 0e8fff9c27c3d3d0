-- The current transaction event of the given performance_schema threads (txn_threads.sql;
-- events_transactions_current, when its consumer and the `transaction` instrument are on):
-- its EVENT_ID orders the thread's statements — the ones after it are this transaction's.
-- One scan with a bound id list (FIND_IN_SET), no join; bounded.
SELECT x.THREAD_ID AS pfs_thread_id, x.EVENT_ID AS event_id, x.STATE AS state,
       x.ACCESS_MODE AS access_mode, x.AUTOCOMMIT AS autocommit
FROM performance_schema.events_transactions_current x
WHERE FIND_IN_SET(x.THREAD_ID, %(ids)s) > 0
ORDER BY x.THREAD_ID
LIMIT %(limit)s
