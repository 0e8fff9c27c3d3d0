-- Oban jobs left 'executing': age of the attempt; Lifeline rescues (runs again) them after
-- rescue seconds, its default for the table's client (Elixir 3600, Python 300).
SELECT w.queue, extract(epoch FROM clock.now_s - w.attempted_at)::bigint AS reserved_seconds,
       count(*) AS n, {rescue}::bigint AS expires_after
FROM (SELECT queue, attempted_at FROM {table} WHERE state = 'executing'
      ORDER BY id LIMIT %(window)s) w
CROSS JOIN (SELECT (now() AT TIME ZONE 'UTC') AS now_s) clock
GROUP BY 1, 2
ORDER BY 2 DESC
LIMIT %(groups)s
