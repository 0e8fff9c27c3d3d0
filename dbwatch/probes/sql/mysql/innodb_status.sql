-- The InnoDB monitor text (server-capped at 1 MB); parsed by dbwatch.parsers, never executed.
SHOW ENGINE INNODB STATUS
