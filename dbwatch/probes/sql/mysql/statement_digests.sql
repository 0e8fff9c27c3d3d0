-- Statement digests that lock rows or delete (the only ones QU401/QU402 look at), most
-- called first, text cut to 4 kB; idle_seconds tells a pattern the application dropped.
SELECT SCHEMA_NAME AS schema_name, LEFT(DIGEST_TEXT, 4096) AS digest_text,
       COUNT_STAR AS calls, TIMESTAMPDIFF(SECOND, LAST_SEEN, NOW()) AS idle_seconds
FROM performance_schema.events_statements_summary_by_digest
WHERE DIGEST_TEXT IS NOT NULL
  AND (%(schema)s IS NULL OR SCHEMA_NAME = %(schema)s)  -- scope: the URL's schema
  AND (DIGEST_TEXT LIKE %(for_update)s OR DIGEST_TEXT LIKE %(for_share)s
       OR DIGEST_TEXT LIKE %(share_mode)s OR DIGEST_TEXT LIKE %(delete)s)
ORDER BY COUNT_STAR DESC
LIMIT %(limit)s
