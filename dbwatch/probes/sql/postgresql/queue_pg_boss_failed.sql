-- pg-boss jobs failed for good in the last %(horizon)s seconds, the newest %(window)s by
-- completed_on. `output` holds the serialized error: the stack's first line ("TypeError: …"),
-- else name and message, else pg-boss's own {"value": {"message": …}} (expiry).
-- pg-boss 10/11 have no index on failed jobs: every row of every partition is read. The fence
-- fragment is OFFSET 0 there (queues/pg_boss.py): the scan's filter is then `state` alone, so
-- each row is decoded up to its 5th column, not up to completed_on (the 16th): ~30 %% less CPU
-- at 1 M rows; completed_on is tested on the failed rows only. 12 (job_i16): empty fragment,
-- the plan as before.
SELECT f.queue, f.head, f.job_class, count(*) AS n,
       count(*) FILTER (WHERE f.age <= 3600) AS n_1h, count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
       count(*) FILTER (WHERE f.age <= 86400) AS n_24h,
       count(*) FILTER (WHERE f.age <= 259200) AS n_3d,
       count(*) FILTER (WHERE f.age <= 604800) AS n_7d,
       max(f.completed_on)::text AS latest, min(f.age)::bigint AS latest_seconds_ago
FROM (SELECT left(name, 255) AS queue, completed_on, left(name, 255) AS job_class,
             extract(epoch FROM now() - completed_on) AS age,
             left(coalesce(split_part(left(output ->> 'stack', 400), chr(10), 1),
                           (output ->> 'name') || ': ' || (output ->> 'message'),
                           'Error: ' || (output ->> 'message'),
                           'Error: ' || (output #>> '{value,message}'),
                           left(output::text, 200)), 400) AS head
      FROM (SELECT name, completed_on, output FROM {table} WHERE state = 'failed' {fence}) j
      WHERE completed_on >= now() - make_interval(secs => %(horizon)s)
      ORDER BY completed_on DESC LIMIT %(window)s) f
GROUP BY 1, 2, 3
ORDER BY n DESC
LIMIT %(groups)s
