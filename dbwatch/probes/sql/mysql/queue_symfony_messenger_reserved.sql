-- Symfony Messenger messages delivered to a consumer and not yet acknowledged: past
-- redeliver_timeout (3600 s by default) the transport hands them to another consumer.
-- Its index on delivered_at holds these rows.
SELECT w.queue_name AS queue, TIMESTAMPDIFF(SECOND, w.delivered_at, NOW()) AS reserved_seconds,
       COUNT(*) AS n, 3600 AS expires_after
FROM (SELECT queue_name, delivered_at FROM {table} WHERE delivered_at IS NOT NULL
      ORDER BY delivered_at LIMIT %(window)s) w
GROUP BY w.queue_name, w.delivered_at
ORDER BY reserved_seconds DESC
LIMIT %(groups)s
