-- Databases this role may connect to, for per-database probes (all_databases = true). Bounded.
SELECT d.datname AS database
FROM pg_database d
WHERE d.datallowconn AND NOT d.datistemplate
  AND has_database_privilege(d.datname, 'CONNECT')
ORDER BY d.datname
LIMIT %(limit)s
