-- graphile-worker jobs handed out more than once and not failed for good, by queue and task.
SELECT coalesce(q.queue_name, '(none)') AS queue, w.attempts, left(t.identifier, 255) AS job_class,
       NULL::text AS timeout_head, count(*) AS n
FROM (SELECT job_queue_id, task_id, attempts FROM {table}
      WHERE attempts < max_attempts ORDER BY id LIMIT %(window)s) w
JOIN {tasks} t ON t.id = w.task_id
LEFT JOIN {job_queues} q ON q.id = w.job_queue_id
WHERE w.attempts > 1
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
