-- Standbys connected to this server: hot_standby_feedback shows as backend_xmin here when the
-- standby uses no slot, as the slot's xmin when it does. Bounded.
SELECT r.pid,
       r.usename AS "user",
       r.application_name AS application,
       host(r.client_addr) AS client_addr,
       r.client_hostname,
       r.backend_start,
       r.state,
       r.sync_state,
       r.backend_xmin::text AS backend_xmin,
       age(r.backend_xmin) AS xid_age,
       s.slot_name
FROM pg_stat_replication r
LEFT JOIN pg_replication_slots s ON s.active_pid = r.pid
ORDER BY age(r.backend_xmin) DESC NULLS LAST
LIMIT %(limit)s
