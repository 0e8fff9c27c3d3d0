-- Symfony Messenger messages carrying a RedeliveryStamp (retried by the retry strategy), by
-- queue and retryCount, read from the first 16 kB of body and headers (PHP or JSON serializer).
SELECT w.queue_name AS queue, w.retries + 1 AS attempts, NULL AS job_class,
       NULL AS timeout_head, COUNT(*) AS n
FROM (SELECT queue_name,
             CAST(REGEXP_SUBSTR(SUBSTRING(x, LOCATE('retryCount', x) + 10, 24), '[0-9]+') AS UNSIGNED)
               AS retries
      FROM (SELECT queue_name, CONCAT(LEFT(headers, 4096), LEFT(body, 16384)) AS x
            FROM {table}
            WHERE (queue_name < 'failed' OR queue_name > 'failed')
              AND queue_name NOT LIKE '%%failed%%' LIMIT %(window)s) r
      WHERE LOCATE('retryCount', x) > 0) w
WHERE w.retries > 0
GROUP BY w.queue_name, w.retries
ORDER BY n DESC
LIMIT %(groups)s
