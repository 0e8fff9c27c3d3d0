-- dbwatch on MariaDB: the least privileges. Privilege spellings checked on MariaDB 10.11
-- (SHOW GRANTS prints them so); verified by tests/live/test_terminate_live.py and
-- tests/live/test_scope_live.py (a user made with exactly this file).
CREATE USER 'dbwatch'@'%' IDENTIFIED BY 'change-me';

-- Monitoring: PROCESS shows every thread (information_schema.PROCESSLIST), the InnoDB
-- transaction and lock tables (INNODB_TRX, INNODB_LOCKS, INNODB_LOCK_WAITS: MY001, MY002,
-- MY101) and SHOW ENGINE INNODB STATUS (MY102, MY201).
GRANT PROCESS ON *.* TO 'dbwatch'@'%';

-- Queue tables (QU001-QU004, QU301): SELECT on each application schema, one line per schema
-- (replace `app`). Without it the tables are invisible and dbwatch reports DW001 with this
-- GRANT; a URL without a schema (every schema) needs SELECT ON *.* or DW002 lists the gap.
GRANT SELECT ON `app`.* TO 'dbwatch'@'%';

-- Terminating other users' threads (KILL / KILL QUERY):
--   MariaDB 10.5.2 and later: the CONNECTION ADMIN privilege (two words, no underscore).
GRANT CONNECTION ADMIN ON *.* TO 'dbwatch'@'%';
--   Before 10.5.2 it was part of SUPER:
-- GRANT SUPER ON *.* TO 'dbwatch'@'%';

-- So that dbwatch recognises superusers' sessions and leaves them alone (it reads which
-- users have SUPER). Without it only `root` is assumed to be one.
GRANT SELECT (User, Super_priv) ON mysql.user TO 'dbwatch'@'%';

-- Optional, only where performance_schema is ON (it is OFF by default on MariaDB): client
-- program names, so sessions of other dbwatch processes and of mysqldump are recognised.
-- GRANT SELECT ON performance_schema.* TO 'dbwatch'@'%';
