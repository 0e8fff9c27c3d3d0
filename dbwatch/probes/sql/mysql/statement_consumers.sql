-- The statement consumers of performance_schema (read only when it is ON): history needs
-- global -> thread -> events_statements_current -> events_statements_history(_long).
SELECT NAME AS name, ENABLED AS enabled
FROM performance_schema.setup_consumers
WHERE NAME IN ('global_instrumentation', 'thread_instrumentation', 'statements_digest',
               'events_statements_current', 'events_statements_history',
               'events_statements_history_long')
ORDER BY NAME
