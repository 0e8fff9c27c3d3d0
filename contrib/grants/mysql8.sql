-- dbwatch on MySQL 8.0 / 8.4: the least privileges. Not verified against a live MySQL 8
-- in the test suite (the local server is MariaDB); spellings from the MySQL 8.4 manual.
CREATE USER 'dbwatch'@'%' IDENTIFIED BY 'change-me';

-- Monitoring: PROCESS for the processlist, INNODB_TRX and SHOW ENGINE INNODB STATUS;
-- SELECT on performance_schema for data_locks / data_lock_waits (MY101: the
-- information_schema lock tables were removed in 8.0.1), global_variables, error_log and
-- session_connect_attrs (program names).
GRANT PROCESS ON *.* TO 'dbwatch'@'%';
GRANT SELECT ON performance_schema.* TO 'dbwatch'@'%';
-- Queue tables: SELECT on each application schema (replace `app`; one line per schema).
GRANT SELECT ON `app`.* TO 'dbwatch'@'%';

-- Terminating other users' threads (KILL / KILL QUERY): the CONNECTION_ADMIN dynamic
-- privilege (with an underscore on MySQL); SUPER also works but is deprecated.
GRANT CONNECTION_ADMIN ON *.* TO 'dbwatch'@'%';
-- Threads of accounts holding SYSTEM_USER can only be killed by SYSTEM_USER accounts; dbwatch
-- does not need it: it skips superusers unless --include-superusers.

-- So that superusers' sessions are recognised and skipped:
GRANT SELECT (User, Super_priv) ON mysql.user TO 'dbwatch'@'%';
