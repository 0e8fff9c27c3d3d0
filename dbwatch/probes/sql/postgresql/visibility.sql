-- Can this role see other users' sessions in pg_stat_activity (superuser or pg_read_all_stats)?
SELECT r.rolsuper OR pg_has_role(current_user, 'pg_read_all_stats', 'MEMBER') AS sees_all
FROM pg_roles r
WHERE r.rolname = current_user
