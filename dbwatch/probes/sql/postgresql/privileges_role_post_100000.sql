-- PostgreSQL 10+: superuser, or membership of pg_read_all_stats / pg_monitor.
SELECT current_user AS "user",
       r.rolsuper AS superuser,
       pg_has_role(current_user, 'pg_read_all_stats', 'USAGE') AS read_all_stats,
       pg_has_role(current_user, 'pg_monitor', 'USAGE') AS monitor
FROM pg_roles r
WHERE r.rolname = current_user
