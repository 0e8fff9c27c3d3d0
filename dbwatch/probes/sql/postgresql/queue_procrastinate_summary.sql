-- procrastinate 3.x: 'todo' and 'doing' jobs per queue, the oldest %(window)s by id (its partial
-- index procrastinate_jobs_id_lock_idx_v1 holds exactly these). A job has no creation time
-- column: the oldest available job's age is its scheduled_at, else its 'deferred' event.
WITH w AS (
  SELECT id, queue_name, status, scheduled_at, attempts
  FROM {table} WHERE status IN ('todo', 'doing') ORDER BY id LIMIT %(window)s
), firsts AS (
  SELECT DISTINCT ON (queue_name) queue_name, id, scheduled_at
  FROM w WHERE status = 'todo' AND (scheduled_at IS NULL OR scheduled_at <= now())
  ORDER BY queue_name, id
)
SELECT w.queue_name AS queue, count(*) AS total,
       count(*) FILTER (WHERE w.status = 'todo' AND (w.scheduled_at IS NULL OR w.scheduled_at <= now()))
         AS available,
       (SELECT extract(epoch FROM now() - coalesce(f.scheduled_at,
                 (SELECT min(e.at) FROM {events} e WHERE e.job_id = f.id AND e.type = 'deferred')))::bigint
        FROM firsts f WHERE f.queue_name = w.queue_name) AS oldest_available_seconds,
       count(*) FILTER (WHERE w.status = 'doing') AS reserved,
       NULL::bigint AS oldest_reserved_seconds,
       count(*) FILTER (WHERE w.attempts > 0) AS repeated, max(w.attempts) + 1 AS max_attempts
FROM w
GROUP BY w.queue_name
ORDER BY 1
LIMIT %(groups)s
