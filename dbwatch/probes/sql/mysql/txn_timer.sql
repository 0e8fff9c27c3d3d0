-- The timer of dbwatch's own running statement (the performance_schema clock "now"), to
-- date the statements of txn_statements.sql.
SELECT MAX(c.TIMER_START) AS timer_start
FROM performance_schema.events_statements_current c
WHERE c.THREAD_ID = %(self)s
