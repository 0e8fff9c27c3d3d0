-- Every statement of the global ring buffer (its size is at most the limit), text cut to 4 kB,
-- in per-session order for the transaction grouper; thread ids are never reused, so
-- (thread, event) orders each session. dbwatch's own thread is excluded.
SELECT THREAD_ID AS thread_id, EVENT_ID AS event_id, LEFT(SQL_TEXT, 4096) AS sql_text
FROM performance_schema.events_statements_history_long
WHERE SQL_TEXT IS NOT NULL
  AND (%(schema)s IS NULL OR CURRENT_SCHEMA = %(schema)s)  -- scope: the URL's schema
  AND THREAD_ID <> COALESCE((SELECT t.THREAD_ID FROM performance_schema.threads AS t
                             WHERE t.PROCESSLIST_ID = CONNECTION_ID()), 0)
ORDER BY THREAD_ID, EVENT_ID
LIMIT %(limit)s
