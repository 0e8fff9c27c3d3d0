-- Safety settings: the value the server gives new sessions, and per-role / per-database overrides.
-- reset_val, not setting: dbwatch SETs its own timeouts on its session (targets/postgres.py),
-- which changes `setting` but not the reset value (config file, command line, ALTER SYSTEM,
-- built-in default). When an override in pg_db_role_setting applies to this very session
-- (its login role or database), reset_val is that override and the server-wide value is not
-- visible: NULL, and the check says nothing about the server-wide value.
SELECT 'server' AS scope, NULL::text AS role, NULL::text AS database, s.name,
       CASE WHEN EXISTS (
              SELECT 1
              FROM pg_db_role_setting o CROSS JOIN LATERAL unnest(o.setconfig) AS c
              WHERE split_part(c, '=', 1) = s.name
                AND o.setrole IN (0, (SELECT oid FROM pg_roles WHERE rolname = session_user))
                AND o.setdatabase IN (0, (SELECT oid FROM pg_database
                                          WHERE datname = current_database())))
            THEN NULL ELSE s.reset_val END AS setting,
       s.unit
FROM pg_settings s
WHERE s.name = ANY(%(names)s)
UNION ALL
SELECT 'override', r.rolname, d.datname, split_part(cfg, '=', 1), split_part(cfg, '=', 2), NULL
FROM pg_db_role_setting s
LEFT JOIN pg_roles r ON r.oid = s.setrole
LEFT JOIN pg_database d ON d.oid = s.setdatabase
CROSS JOIN LATERAL unnest(s.setconfig) AS cfg
WHERE split_part(cfg, '=', 1) = ANY(%(names)s)
