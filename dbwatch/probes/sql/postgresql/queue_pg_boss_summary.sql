-- pg-boss (10+: snake_case columns; `name` is the queue): jobs created or waiting for a retry,
-- and active ones, per queue: %(window)s rows in (name, start_after) order, the order of its
-- fetch index. state is pg-boss's enum (created < retry < active < completed …). The state
-- lists are ones its partial indexes imply (12: job_i14 on live states; 10/11: job_i5 on
-- state < 'active'), so 1 M completed rows are never read. pg-boss 10/11 have no index on
-- active jobs: that half reads the table (see the README's figures).
SELECT w.name AS queue, count(*) AS total,
       count(*) FILTER (WHERE w.state < 'active' AND w.start_after <= now()) AS available,
       extract(epoch FROM now() - min(w.start_after) FILTER (WHERE w.state < 'active'
                                                           AND w.start_after <= now()))::bigint
         AS oldest_available_seconds,
       count(*) FILTER (WHERE w.state = 'active') AS reserved,
       extract(epoch FROM now() - min(w.started_on) FILTER (WHERE w.state = 'active'))::bigint
         AS oldest_reserved_seconds,
       count(*) FILTER (WHERE w.retry_count > 0) AS repeated, max(w.retry_count) + 1 AS max_attempts
FROM ((SELECT name, state, start_after, started_on, retry_count FROM {table}
       WHERE state IN ('created', 'retry') ORDER BY name, start_after LIMIT %(window)s)
      UNION ALL
      (SELECT name, state, start_after, started_on, retry_count FROM {table}
       WHERE state = 'active' LIMIT %(window)s)) w
GROUP BY w.name
ORDER BY 1
LIMIT %(groups)s
