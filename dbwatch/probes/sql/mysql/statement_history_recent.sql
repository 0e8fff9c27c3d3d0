-- The last statements of each live session (events_statements_history: 10 per thread by
-- default), text cut to 4 kB, in per-session order; dbwatch's own thread excluded.
SELECT THREAD_ID AS thread_id, EVENT_ID AS event_id, LEFT(SQL_TEXT, 4096) AS sql_text
FROM performance_schema.events_statements_history
WHERE SQL_TEXT IS NOT NULL
  AND (%(schema)s IS NULL OR CURRENT_SCHEMA = %(schema)s)  -- scope: the URL's schema
  AND THREAD_ID <> COALESCE((SELECT t.THREAD_ID FROM performance_schema.threads AS t
                             WHERE t.PROCESSLIST_ID = CONNECTION_ID()), 0)
ORDER BY THREAD_ID, EVENT_ID
LIMIT %(limit)s
