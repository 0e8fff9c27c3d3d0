-- Symfony Messenger messages carrying a RedeliveryStamp (retried by the retry strategy), by
-- queue and retryCount, read from the first 16 kB of body and headers (PHP or JSON serializer).
SELECT w.queue_name AS queue, w.retries + 1 AS attempts, NULL::text AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM (SELECT queue_name,
             substring(left(headers, 4096) || left(body, 16384) FROM 'retryCount\D{1,12}(\d{1,6})')::int
               AS retries
      FROM (SELECT queue_name, headers, body FROM {table}
            WHERE queue_name < 'failed' OR queue_name > 'failed' LIMIT %(window)s) x
      WHERE queue_name NOT LIKE '%%failed%%') w
WHERE w.retries > 0
GROUP BY 1, 2
ORDER BY n DESC
LIMIT %(groups)s
