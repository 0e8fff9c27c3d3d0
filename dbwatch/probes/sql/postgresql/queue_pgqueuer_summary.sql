-- pgqueuer: queued and picked jobs per entrypoint (finished jobs leave the table for
-- pgqueuer_log), the oldest %(window)s by id.
SELECT w.entrypoint AS queue, count(*) AS total,
       count(*) FILTER (WHERE w.status = 'queued' AND w.execute_after <= now()) AS available,
       extract(epoch FROM now() - min(greatest(w.created, w.execute_after))
                                   FILTER (WHERE w.status = 'queued' AND w.execute_after <= now()))::bigint
         AS oldest_available_seconds,
       count(*) FILTER (WHERE w.status = 'picked') AS reserved,
       extract(epoch FROM now() - min(w.updated) FILTER (WHERE w.status = 'picked'))::bigint
         AS oldest_reserved_seconds,
       0 AS repeated, NULL::int AS max_attempts
FROM (SELECT entrypoint, status, created, execute_after, updated FROM {table}
      ORDER BY id LIMIT %(window)s) w
GROUP BY 1
ORDER BY 1
LIMIT %(groups)s
