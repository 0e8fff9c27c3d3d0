-- Safety settings: server-wide values and per-role / per-database overrides.
SELECT 'server' AS scope, NULL::text AS role, NULL::text AS database, name, setting, unit
FROM pg_settings
WHERE name = ANY(%(names)s)
UNION ALL
SELECT 'override', r.rolname, d.datname, split_part(cfg, '=', 1), split_part(cfg, '=', 2), NULL
FROM pg_db_role_setting s
LEFT JOIN pg_roles r ON r.oid = s.setrole
LEFT JOIN pg_database d ON d.oid = s.setdatabase
CROSS JOIN LATERAL unnest(s.setconfig) AS cfg
WHERE split_part(cfg, '=', 1) = ANY(%(names)s)
