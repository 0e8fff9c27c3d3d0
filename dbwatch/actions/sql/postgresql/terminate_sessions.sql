-- Sessions for `dbwatch terminate`: every backend with its identity (pid, backend_start,
-- xact_start), age, horizon pin and lock waits; guards decide who may be touched. Scoped to
-- one database unless the database parameter is NULL (--all-databases).
SELECT a.pid,
       a.backend_start,
       a.xact_start,
       a.state,
       a.backend_type,
       a.usename AS "user",
       a.application_name AS application,
       coalesce(a.client_hostname, host(a.client_addr)) AS host,
       a.datname AS database,
       greatest(age(a.backend_xid), age(a.backend_xmin)) AS xid_age,
       extract(epoch FROM now() - a.xact_start)::float8 AS xact_seconds,
       extract(epoch FROM now() - a.state_change)::float8 AS state_seconds,
       left(a.query, 2048) AS query,
       r.rolsuper AS superuser,
       a.pid = pg_backend_pid() AS is_self,
       CASE WHEN a.wait_event_type = 'Lock' THEN pg_blocking_pids(a.pid) END AS blocked_by,
       pg_is_in_recovery() AS standby
FROM pg_stat_activity a
LEFT JOIN pg_roles r ON r.oid = a.usesysid
WHERE %(database)s::text IS NULL OR a.datname = %(database)s::text
ORDER BY a.xact_start NULLS LAST, a.pid
LIMIT %(limit)s
