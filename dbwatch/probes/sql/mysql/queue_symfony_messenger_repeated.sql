-- Symfony Messenger messages carrying a RedeliveryStamp (retried by the retry strategy), by
-- queue and retryCount, read from the first 16 kB of body and headers (PHP or JSON serializer),
-- over the first %(lookups)s pending messages through the queue_name index (fewer than the
-- summary's window: each row's text is read; QU003 says so as repeated_window). At 50,000 of a
-- 1 M backlog the text alone cost MariaDB ~100 ms of CPU.
SELECT w.queue_name AS queue, w.retries + 1 AS attempts, NULL AS job_class,
       NULL AS timeout_head, COUNT(*) AS n
FROM (SELECT queue_name,
             CAST(REGEXP_SUBSTR(SUBSTRING(x, LOCATE('retryCount', x) + 10, 24), '[0-9]+') AS UNSIGNED)
               AS retries
      FROM (SELECT queue_name, CONCAT(LEFT(headers, 4096), LEFT(body, 16384)) AS x
            FROM {table}
            WHERE (queue_name < 'failed' OR queue_name > 'failed')
              AND queue_name NOT LIKE '%%failed%%' LIMIT %(lookups)s) r
      WHERE LOCATE('retryCount', x) > 0) w
WHERE w.retries > 0
GROUP BY w.queue_name, w.retries
ORDER BY n DESC
LIMIT %(groups)s
