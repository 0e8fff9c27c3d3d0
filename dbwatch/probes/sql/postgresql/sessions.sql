-- Client sessions with an open transaction or a running query; dbwatch's own excluded.
-- Scoped: only the named database's sessions when %(database)s is set (NULL: every database).
-- Bounded: oldest first, LIMIT bound by the caller; query text cut to 2 kB.
SELECT a.pid,
       a.backend_start,
       a.xact_start,
       a.query_start,
       a.state_change,
       a.state,
       a.wait_event_type,
       a.wait_event,
       a.usename AS "user",
       a.application_name AS application,
       host(a.client_addr) AS client_addr,
       a.datname AS database,
       a.backend_type,
       a.backend_xid::text AS backend_xid,
       a.backend_xmin::text AS backend_xmin,
       age(a.backend_xid) AS xid_age,
       age(a.backend_xmin) AS xmin_age,
       extract(epoch FROM now() - a.xact_start)::float8 AS xact_seconds,
       extract(epoch FROM now() - a.query_start)::float8 AS query_seconds,
       extract(epoch FROM now() - a.state_change)::float8 AS state_seconds,
       left(a.query, 2048) AS query,
       r.rolsuper AS superuser,
       CASE WHEN a.wait_event_type = 'Lock' THEN pg_blocking_pids(a.pid) END AS blocked_by
FROM pg_stat_activity a
LEFT JOIN pg_roles r ON r.oid = a.usesysid
WHERE a.pid <> pg_backend_pid()
  AND (%(database)s::text IS NULL OR a.datname = %(database)s::text)
  AND (a.xact_start IS NOT NULL OR a.state = 'active' OR a.backend_xmin IS NOT NULL)
  AND coalesce(a.backend_type, 'client backend') IN ('client backend', 'walsender', 'autovacuum worker', 'background worker')
ORDER BY a.xact_start NULLS LAST
LIMIT %(limit)s
