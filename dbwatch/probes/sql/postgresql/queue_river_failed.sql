-- River jobs discarded (out of attempts) in the last %(horizon)s seconds, newest %(window)s
-- by id; the last recorded error's first line.
SELECT f.queue, f.head, f.job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age <= 3600) AS n_1h, count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age <= 604800) AS n_7d,
       max(f.finalized_at)::text AS latest, min(f.age)::bigint AS latest_seconds_ago
FROM (SELECT left(queue, 255) AS queue, finalized_at, extract(epoch FROM now() - finalized_at) AS age,
             split_part(left(errors[array_length(errors, 1)] ->> 'error', 400), chr(10), 1) AS head,
             left(kind, 255) AS job_class
      -- the newest %(window)s rows by id, a backward primary-key scan whatever the statistics
      FROM (SELECT * FROM {table} ORDER BY id DESC LIMIT %(window)s) w
      WHERE state::text = 'discarded' AND finalized_at >= now() - make_interval(secs => %(horizon)s)) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
