-- Horizon pins that are not client sessions: never ended automatically, only shown with
-- the statement that ends them.
SELECT 'prepared_xact' AS kind, p.gid AS name, p.database, p.owner AS "user", NULL::text AS host,
       age(p.transaction)::bigint AS xid_age,
       extract(epoch FROM now() - p.prepared)::float8 AS age_seconds
FROM pg_prepared_xacts p
UNION ALL
SELECT 'replication_slot', s.slot_name::text, s.database::text, NULL, NULL,
       age(s.xmin)::bigint, NULL
FROM pg_replication_slots s
WHERE s.xmin IS NOT NULL
UNION ALL
SELECT 'standby_feedback', r.application_name, NULL, r.usename::text, host(r.client_addr),
       age(r.backend_xmin)::bigint, NULL
FROM pg_stat_replication r
WHERE r.backend_xmin IS NOT NULL
ORDER BY 6 DESC
LIMIT 200
