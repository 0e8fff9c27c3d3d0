-- Que jobs expired (out of retries) in the last %(horizon)s seconds, newest %(window)s by id.
SELECT f.queue, f.head, f.job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age <= 3600) AS n_1h, count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age <= 604800) AS n_7d,
       max(f.expired_at)::text AS latest, min(f.age)::bigint AS latest_seconds_ago
FROM (SELECT left(queue, 255) AS queue, expired_at, extract(epoch FROM now() - expired_at) AS age,
             split_part(substr(last_error_message, 1, 400), chr(10), 1) AS head,
             left(CASE WHEN job_class LIKE 'ActiveJob::%%' THEN args -> 0 ->> 'job_class'
                       ELSE job_class END, 255) AS job_class
      -- the newest %(window)s rows by id, a backward primary-key scan whatever the statistics
      FROM (SELECT * FROM {table} ORDER BY id DESC LIMIT %(window)s) w
      WHERE expired_at >= now() - make_interval(secs => %(horizon)s)) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
