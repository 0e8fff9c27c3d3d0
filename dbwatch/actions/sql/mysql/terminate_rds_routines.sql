-- RDS-style managed servers: KILL of other users' threads goes through these procedures.
SELECT ROUTINE_NAME AS name FROM information_schema.ROUTINES
WHERE ROUTINE_SCHEMA = 'mysql' AND ROUTINE_NAME IN ('rds_kill', 'rds_kill_query')
