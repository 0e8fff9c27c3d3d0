-- pg-boss 10/11: active and failed jobs in ONE pass over a slice of the table, for QU002 (the
-- reserved rows), QU004 (the failed rows) and QU003's active share (the repeated rows) at once.
-- These versions have no index holding active or failed jobs (docs/queues.md), so each of the
-- three reads was a scan of every row; the sweep (probes/queue_pg_boss.py) reads the table once
-- as consecutive page ranges of every partition (the slice fragment: `ctid >= lo AND ctid < hi`, a TID
-- Range Scan on PostgreSQL 14+, before ANALYZE as after; `true` before 14: one slice) and
-- merges the slices' groups. The scan's filter is `state` alone (the MATERIALIZED fence): a
-- finished row is decoded up to its 5th column; two equalities, not `IN (…)`: the array test
-- cost ~10 %% more CPU per row (1 M rows: 87 against 79 ms). Per slice, as the three queries read the whole
-- table: the oldest %(window)s active jobs (grouped by age and expiry, the oldest %(groups)s
-- groups), the active ones on a later try, the newest %(failed_window)s failures in the
-- %(horizon)s-second horizon (grouped by error head, the %(groups)s largest groups).
WITH s AS MATERIALIZED (
  SELECT name, state, started_on, {expire} AS expire, retry_count, completed_on, output
  FROM {table}
  WHERE {slice} AND (state = 'active' OR state = 'failed')
),
reserved AS (
  SELECT w.name AS queue, extract(epoch FROM now() - w.started_on)::bigint AS reserved_seconds,
         count(*) AS n, w.expire::bigint AS expires_after
  FROM (SELECT name, started_on, expire FROM s WHERE state = 'active'
        ORDER BY started_on LIMIT %(window)s) w
  GROUP BY 1, 2, 4
  ORDER BY 2 DESC
  LIMIT %(groups)s
),
repeated AS (
  SELECT name AS queue, retry_count + 1 AS attempts, count(*) AS n
  FROM s WHERE state = 'active' AND retry_count > 0
  GROUP BY 1, 2
  ORDER BY 3 DESC
  LIMIT %(groups)s
),
failed AS (
  SELECT f.queue, f.head, f.job_class, count(*) AS n,
         count(*) FILTER (WHERE f.age <= 3600) AS n_1h,
         count(*) FILTER (WHERE f.age <= 21600) AS n_6h,
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
        FROM s
        WHERE state = 'failed' AND completed_on >= now() - make_interval(secs => %(horizon)s)
        ORDER BY completed_on DESC LIMIT %(failed_window)s) f
  GROUP BY 1, 2, 3
  ORDER BY n DESC
  LIMIT %(groups)s
)
SELECT (SELECT coalesce(jsonb_agg(to_jsonb(r)), '[]') FROM reserved r) AS reserved,
       (SELECT coalesce(jsonb_agg(to_jsonb(p)), '[]') FROM repeated p) AS repeated,
       (SELECT coalesce(jsonb_agg(to_jsonb(f)), '[]') FROM failed f) AS failed
