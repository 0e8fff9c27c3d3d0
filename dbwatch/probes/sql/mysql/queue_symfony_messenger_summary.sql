-- Symfony Messenger (Doctrine transport): messages per queue_name, at most %(window)s read
-- through its queue_name index as two ranges around 'failed' (the failure transport's rows are
-- never read); acknowledged messages are deleted. The failure transport's
-- queue ('failed') is read by the failed query. Doctrine writes local DATETIMEs: NOW().
SELECT w.queue_name AS queue, COUNT(*) AS total,
       SUM(w.delivered_at IS NULL AND w.available_at <= NOW()) AS available,
       TIMESTAMPDIFF(SECOND, MIN(CASE WHEN w.delivered_at IS NULL AND w.available_at <= NOW()
                                      THEN w.available_at END), NOW()) AS oldest_available_seconds,
       SUM(w.delivered_at IS NOT NULL) AS reserved,
       TIMESTAMPDIFF(SECOND, MIN(w.delivered_at), NOW()) AS oldest_reserved_seconds,
       0 AS repeated, NULL AS max_attempts
FROM (SELECT queue_name, available_at, delivered_at FROM {table}
      WHERE queue_name < 'failed' OR queue_name > 'failed' LIMIT %(window)s) w
WHERE w.queue_name NOT LIKE '%%failed%%'
GROUP BY w.queue_name
ORDER BY w.queue_name
LIMIT %(groups)s
