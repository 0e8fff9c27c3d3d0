-- GoodJob jobs finished with an error (discarded) in the last %(horizon)s seconds, the newest
-- %(window)s by finished_at (its index). Error text is "Class: message".
SELECT f.queue, f.head, f.job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age <= 3600) AS n_1h, count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age <= 604800) AS n_7d,
       max(f.finished_at)::text AS latest, min(f.age)::bigint AS latest_seconds_ago
FROM (SELECT left(queue_name, 255) AS queue, finished_at,
             extract(epoch FROM (now() AT TIME ZONE 'UTC') - finished_at) AS age,
             split_part(substr(error, 1, 400), chr(10), 1) AS head,
             left(serialized_params ->> 'job_class', 255) AS job_class
      FROM {table}
      WHERE finished_at >= (now() AT TIME ZONE 'UTC') - make_interval(secs => %(horizon)s)
        AND error IS NOT NULL
      ORDER BY finished_at DESC LIMIT %(window)s) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
