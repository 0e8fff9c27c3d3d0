-- Amazon RDS / Aurora MySQL and RDS for MariaDB: the master user cannot hold SUPER or
-- CONNECTION_ADMIN on older engines, and KILL of another user's thread is refused
-- ("You are not owner of thread"). dbwatch then calls the RDS procedures itself:
--   CALL mysql.rds_kill(<thread id>);        -- dbwatch terminate
--   CALL mysql.rds_kill_query(<thread id>);  -- dbwatch terminate --cancel
-- (the thread id is bound as an integer; the thread and its trx are re-read first).
-- Run as the master user:
CREATE USER 'dbwatch'@'%' IDENTIFIED BY 'change-me';
GRANT PROCESS ON *.* TO 'dbwatch'@'%';
GRANT SELECT ON performance_schema.* TO 'dbwatch'@'%';          -- MySQL 8 engines
GRANT SELECT ON `app`.* TO 'dbwatch'@'%';                       -- each application schema
GRANT EXECUTE ON PROCEDURE mysql.rds_kill TO 'dbwatch'@'%';
GRANT EXECUTE ON PROCEDURE mysql.rds_kill_query TO 'dbwatch'@'%';
-- Newer RDS MySQL 8 engines allow CONNECTION_ADMIN for the master user; where it can be
-- granted, plain KILL is used and the procedures are not needed.

-- RDS for PostgreSQL: rds_superuser members can GRANT pg_monitor and pg_signal_backend as in
-- postgresql.sql; prepared transactions and slots as there.
