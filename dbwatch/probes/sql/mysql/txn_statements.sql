-- The statements performance_schema kept (events_statements_history: the last N per thread)
-- for the given performance_schema threads (txn_threads.sql), in per-thread order; text cut
-- to 2 kB. Executions of prepared statements (binary protocol) have no text: they are kept,
-- textless, so nothing is mistaken for the first statement; their Prepare/Close rows are
-- not. TIMER_START dates each one against dbwatch's own running statement (txn_timer.sql).
-- One scan with a bound id list (FIND_IN_SET), no join; bounded.
SELECT h.THREAD_ID AS pfs_thread_id,
       h.EVENT_ID AS event_id,
       h.NESTING_EVENT_ID AS nesting_event_id,
       LEFT(h.SQL_TEXT, 2048) AS sql_text,
       h.EVENT_NAME AS event_name,
       h.TIMER_START AS timer_start
FROM performance_schema.events_statements_history h
WHERE FIND_IN_SET(h.THREAD_ID, %(ids)s) > 0
  AND (h.SQL_TEXT IS NOT NULL OR h.EVENT_NAME = 'statement/com/Execute')
ORDER BY h.THREAD_ID, h.EVENT_ID
LIMIT %(limit)s
