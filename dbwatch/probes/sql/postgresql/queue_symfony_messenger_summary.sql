-- Symfony Messenger (Doctrine transport): messages per queue_name, at most %(window)s read
-- through its queue_name index as two ranges around 'failed' (the failure transport's rows,
-- however many, are never read);
-- acknowledged messages are deleted. The failure transport's queue ('failed') is read by the
-- failed query. Doctrine writes local DATETIMEs: compared with localtimestamp.
SELECT w.queue_name AS queue, count(*) AS total,
       count(*) FILTER (WHERE w.delivered_at IS NULL AND w.available_at <= localtimestamp) AS available,
       extract(epoch FROM localtimestamp - min(w.available_at)
                 FILTER (WHERE w.delivered_at IS NULL AND w.available_at <= localtimestamp))::bigint
         AS oldest_available_seconds,
       count(*) FILTER (WHERE w.delivered_at IS NOT NULL) AS reserved,
       extract(epoch FROM localtimestamp - min(w.delivered_at))::bigint AS oldest_reserved_seconds,
       0 AS repeated, NULL::int AS max_attempts
FROM (SELECT x.queue_name, x.available_at, x.delivered_at
      FROM (SELECT queue_name, available_at, delivered_at FROM {table}
            WHERE queue_name < 'failed' OR queue_name > 'failed' LIMIT %(window)s) x
      WHERE x.queue_name NOT LIKE '%%failed%%') w
GROUP BY 1
ORDER BY 1
LIMIT %(groups)s
