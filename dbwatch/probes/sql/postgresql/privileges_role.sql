-- Before PostgreSQL 10 (no pg_read_all_stats / pg_monitor): only a superuser sees everything.
SELECT current_user AS "user",
       r.rolsuper AS superuser,
       false AS read_all_stats,
       false AS monitor
FROM pg_roles r
WHERE r.rolname = current_user
