-- Symfony Messenger messages delivered to a consumer and not yet acknowledged: past
-- redeliver_timeout (3600 s by default) the transport hands them to another consumer.
SELECT w.queue_name AS queue, extract(epoch FROM localtimestamp - w.delivered_at)::bigint AS reserved_seconds,
       count(*) AS n, 3600::bigint AS expires_after
FROM (SELECT queue_name, delivered_at FROM {table} WHERE delivered_at IS NOT NULL
      ORDER BY delivered_at LIMIT %(window)s) w
GROUP BY 1, 2
ORDER BY 2 DESC
LIMIT %(groups)s
