-- Solid Queue, per queue: ready executions (the oldest %(window)s by id; age since they became
-- ready) and scheduled executions already due (the oldest %(window)s by scheduled_at, the
-- dispatcher's index: a due one means the dispatcher is behind or down); claimed as reserved.
-- Rails stores UTC in timestamp without time zone.
WITH clock AS (SELECT now() AT TIME ZONE 'UTC' AS now_utc),
waiting AS (
  (SELECT queue_name, created_at AS due FROM {ready_executions} ORDER BY id LIMIT %(window)s)
  UNION ALL
  (SELECT s.queue_name, s.scheduled_at FROM {scheduled_executions} s
   WHERE s.scheduled_at <= (SELECT now_utc FROM clock) ORDER BY s.scheduled_at LIMIT %(window)s)),
claimed AS (
  SELECT j.queue_name, c.created_at
  FROM (SELECT job_id, created_at FROM {claimed_executions} ORDER BY id LIMIT %(window)s) c
  JOIN {table} j ON j.id = c.job_id),
per_queue AS (
  SELECT queue_name, count(*) AS available, min(due) AS oldest_due, 0 AS reserved,
         NULL::timestamp AS oldest_claim FROM waiting GROUP BY queue_name
  UNION ALL
  SELECT queue_name, 0, NULL, count(*), min(created_at) FROM claimed GROUP BY queue_name)
SELECT p.queue_name AS queue, sum(p.available + p.reserved) AS total, sum(p.available) AS available,
       extract(epoch FROM clock.now_utc - min(p.oldest_due))::bigint AS oldest_available_seconds,
       sum(p.reserved) AS reserved,
       extract(epoch FROM clock.now_utc - min(p.oldest_claim))::bigint AS oldest_reserved_seconds,
       NULL::bigint AS repeated, NULL::bigint AS max_attempts
FROM per_queue p CROSS JOIN clock
GROUP BY p.queue_name, clock.now_utc
ORDER BY 1
LIMIT %(groups)s
