-- Solid Queue, per queue: ready executions (the oldest %(window)s by id; age since they became
-- ready) and scheduled executions already due (the oldest %(window)s by scheduled_at, the
-- dispatcher's index: a due one means the dispatcher is behind or down); claimed as reserved.
-- Rails stores UTC in DATETIME.
SELECT p.queue_name AS queue, SUM(p.available + p.reserved) AS total, SUM(p.available) AS available,
       TIMESTAMPDIFF(SECOND, MIN(p.oldest_due), UTC_TIMESTAMP()) AS oldest_available_seconds,
       SUM(p.reserved) AS reserved,
       TIMESTAMPDIFF(SECOND, MIN(p.oldest_claim), UTC_TIMESTAMP()) AS oldest_reserved_seconds,
       NULL AS repeated, NULL AS max_attempts
FROM (SELECT w.queue_name, COUNT(*) AS available, MIN(w.due) AS oldest_due, 0 AS reserved,
             NULL AS oldest_claim
      FROM ((SELECT queue_name, created_at AS due FROM {ready_executions} ORDER BY id LIMIT %(window)s)
            UNION ALL
            (SELECT queue_name, scheduled_at AS due FROM {scheduled_executions}
             WHERE scheduled_at <= UTC_TIMESTAMP() ORDER BY scheduled_at LIMIT %(window)s)) w
      GROUP BY w.queue_name
      UNION ALL
      SELECT j.queue_name, 0, NULL, COUNT(*), MIN(c.created_at)
      FROM (SELECT job_id, created_at FROM {claimed_executions} ORDER BY id LIMIT %(window)s) c
      JOIN {table} j ON j.id = c.job_id
      GROUP BY j.queue_name) p
GROUP BY p.queue_name
ORDER BY 1
LIMIT %(groups)s
