-- River jobs left 'running': age of the attempt; rescued (run again) after 3600 s by default.
SELECT w.queue, extract(epoch FROM clock.now_s - w.attempted_at)::bigint AS reserved_seconds,
       count(*) AS n, 3600::bigint AS expires_after
FROM (SELECT queue, attempted_at FROM {table} WHERE state = 'running'
      ORDER BY id LIMIT %(window)s) w
CROSS JOIN (SELECT now() AS now_s) clock
GROUP BY 1, 2
ORDER BY 2 DESC
LIMIT %(groups)s
