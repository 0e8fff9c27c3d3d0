-- The statements performance_schema kept (events_statements_history: the last N per thread)
-- for the threads of open InnoDB transactions at least min_age seconds old, oldest first per
-- thread; text cut to 2 kB. Executions of prepared statements (binary protocol) have no
-- text: they are kept, textless, so nothing is mistaken for the first statement; their
-- Prepare/Close rows are not. seconds_ago: from the timer of dbwatch's own running statement
-- (NULL when that is not instrumented). Bounded: LIMIT rows.
SELECT th.PROCESSLIST_ID AS thread_id,
       h.EVENT_ID AS event_id,
       h.NESTING_EVENT_ID AS nesting_event_id,
       LEFT(h.SQL_TEXT, 2048) AS sql_text,
       h.EVENT_NAME AS event_name,
       (me.TIMER_START - h.TIMER_START) / 1000000000000 AS seconds_ago
FROM information_schema.INNODB_TRX t
JOIN performance_schema.threads th ON th.PROCESSLIST_ID = t.trx_mysql_thread_id
JOIN performance_schema.events_statements_history h ON h.THREAD_ID = th.THREAD_ID
LEFT JOIN (SELECT c.TIMER_START
           FROM performance_schema.events_statements_current c
           JOIN performance_schema.threads o ON o.THREAD_ID = c.THREAD_ID
           WHERE o.PROCESSLIST_ID = CONNECTION_ID()
           ORDER BY c.EVENT_ID DESC
           LIMIT 1) me ON 1 = 1
WHERE t.trx_started <= NOW() - INTERVAL %(min_age)s SECOND
  AND t.trx_mysql_thread_id <> CONNECTION_ID()
  AND (h.SQL_TEXT IS NOT NULL OR h.EVENT_NAME = 'statement/com/Execute')
ORDER BY t.trx_started, th.PROCESSLIST_ID, h.EVENT_ID
LIMIT %(limit)s
