-- Is pg_stat_statements installed in this database (never created by dbwatch), where, and
-- may this role read every session's query text (else other roles' show as hidden)?
SELECT n.nspname AS schema, e.extversion AS version,
       (SELECT r.rolsuper FROM pg_roles AS r WHERE r.rolname = current_user)
         OR pg_has_role('pg_read_all_stats', 'USAGE') AS sees_all
FROM pg_extension AS e
JOIN pg_namespace AS n ON n.oid = e.extnamespace
WHERE e.extname = 'pg_stat_statements'
