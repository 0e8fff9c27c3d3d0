-- graphile-worker jobs handed out more than once and not failed for good, by queue and task.
SELECT coalesce(q.queue_name, '(none)') AS queue, w.attempts, left(t.identifier, 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM (SELECT x.job_queue_id, x.task_id, x.attempts
      FROM (SELECT job_queue_id, task_id, attempts, max_attempts FROM {table}
            ORDER BY id DESC LIMIT %(window)s) x
      WHERE x.attempts < x.max_attempts) w
JOIN {tasks} t ON t.id = w.task_id
LEFT JOIN {job_queues} q ON q.id = w.job_queue_id
WHERE w.attempts > 1
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
