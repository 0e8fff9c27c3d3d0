-- dbwatch on MariaDB: the least privileges. Privilege spellings checked on MariaDB 10.11
-- (SHOW GRANTS prints them so); verified by tests/live/test_terminate_live.py.
CREATE USER 'dbwatch'@'%' IDENTIFIED BY 'change-me';

-- Monitoring: PROCESS shows every thread (information_schema.PROCESSLIST), the InnoDB
-- transaction and lock tables (INNODB_TRX, INNODB_LOCKS, INNODB_LOCK_WAITS: MY001, MY002,
-- MY101) and SHOW ENGINE INNODB STATUS (MY102, MY201).
GRANT PROCESS ON *.* TO 'dbwatch'@'%';

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
