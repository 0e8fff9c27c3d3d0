-- Client backends pinning the xmin horizon: a snapshot (backend_xmin) or a write (backend_xid).
-- An idle READ COMMITTED writer has only backend_xid; a read-only idle one has neither.
-- Oldest first by XID age; bounded by LIMIT.
SELECT a.pid,
       a.datname AS database,
       a.usename AS "user",
       a.application_name AS application,
       host(a.client_addr) AS client_addr,
       a.backend_start,
       a.xact_start,
       a.state,
       a.wait_event_type,
       a.backend_xid::text AS backend_xid,
       a.backend_xmin::text AS backend_xmin,
       greatest(age(a.backend_xid), age(a.backend_xmin)) AS xid_age,
       extract(epoch FROM now() - a.xact_start)::float8 AS xact_seconds,
       extract(epoch FROM now() - a.query_start)::float8 AS query_seconds,
       extract(epoch FROM now() - a.state_change)::float8 AS state_seconds,
       left(a.query, 2048) AS query
FROM pg_stat_activity a
WHERE a.pid <> pg_backend_pid()
  AND a.backend_type = 'client backend'
  AND (a.backend_xid IS NOT NULL OR a.backend_xmin IS NOT NULL)
  AND NOT (a.application_name = 'dbwatch' AND a.state = 'active')
ORDER BY greatest(age(a.backend_xid), age(a.backend_xmin)) DESC
LIMIT %(limit)s
