-- graphile-worker jobs failed for good (attempts = max_attempts; they stay in the table), among
-- the newest %(window)s by id. The failure time is not stored: fail_job sets run_at to now plus
-- exp(least(attempts, 10)) seconds, and permanently_fail_jobs sets updated_at.
SELECT f.queue, f.head, f.job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age <= 3600) AS n_1h, count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age <= 604800) AS n_7d,
       max(f.failed_at)::text AS latest, min(f.age)::bigint AS latest_seconds_ago
FROM (SELECT coalesce(q.queue_name, '(none)') AS queue, x.failed_at,
             extract(epoch FROM now() - x.failed_at) AS age,
             split_part(substr(x.last_error, 1, 400), chr(10), 1) AS head,
             left(t.identifier, 255) AS job_class
      FROM (SELECT job_queue_id, task_id, last_error,
                   greatest(updated_at, run_at - make_interval(secs => exp(least(attempts, 10))))
                     AS failed_at
            FROM {table}
            WHERE attempts >= max_attempts
              AND id >= (SELECT coalesce(min(y.id), 0)
                         FROM (SELECT id FROM {table} ORDER BY id DESC LIMIT %(window)s) y)) x
      JOIN {tasks} t ON t.id = x.task_id
      LEFT JOIN {job_queues} q ON q.id = x.job_queue_id
      WHERE x.failed_at >= now() - make_interval(secs => %(horizon)s)) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
