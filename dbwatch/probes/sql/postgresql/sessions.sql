-- Every backend of the server, read once per cycle for all its consumers: PG001/PG002, the
-- lock graph (PG101, terminate --blocking), the horizon's backend holders (PG201/PG202) and
-- `dbwatch terminate` (identity pid + backend_start + xact_start, guards, is_self, standby).
-- Cluster-wide: the daemon shares one read between the targets of a server; each target's
-- checks keep their own database's rows. Bounded: open transactions first (oldest first),
-- LIMIT bound by the caller (hitting it is a DW002 gap); query text cut to 2 kB. dbwatch's own
-- other sessions (%(own)s: their pids, by connection id, never by name) are left out.
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
       coalesce(a.client_hostname, host(a.client_addr)) AS host,
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
       CASE WHEN a.wait_event_type = 'Lock' THEN pg_blocking_pids(a.pid) END AS blocked_by,
       a.pid = pg_backend_pid() AS is_self,
       pg_is_in_recovery() AS standby
FROM pg_stat_activity a
LEFT JOIN pg_roles r ON r.oid = a.usesysid
WHERE a.pid = pg_backend_pid() OR a.pid <> ALL(%(own)s::int[])
ORDER BY a.xact_start NULLS LAST, a.pid
LIMIT %(limit)s
