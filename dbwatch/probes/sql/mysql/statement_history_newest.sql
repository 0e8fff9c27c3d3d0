-- history_long larger than the limit: the newest statements (by TIMER_START) of every other
-- session, text cut to 4 kB, then in per-session order for the transaction grouper. Costs an
-- extra sort, so used only when the ring buffer is larger than the limit.
SELECT h.thread_id, h.event_id, h.sql_text
FROM (
  SELECT THREAD_ID AS thread_id, EVENT_ID AS event_id, LEFT(SQL_TEXT, 4096) AS sql_text
  FROM performance_schema.events_statements_history_long
  WHERE SQL_TEXT IS NOT NULL
    AND (%(schema)s IS NULL OR CURRENT_SCHEMA = %(schema)s)  -- scope: the URL's schema
    AND THREAD_ID <> COALESCE((SELECT t.THREAD_ID FROM performance_schema.threads AS t
                               WHERE t.PROCESSLIST_ID = CONNECTION_ID()), 0)
  ORDER BY TIMER_START DESC
  LIMIT %(limit)s
) AS h
ORDER BY h.thread_id, h.event_id
