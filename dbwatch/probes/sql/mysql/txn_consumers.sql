-- The consumers and the instrument the transaction detail needs (read only when
-- performance_schema is ON).
SELECT NAME AS name, ENABLED AS enabled
FROM performance_schema.setup_consumers
WHERE NAME IN ('global_instrumentation', 'thread_instrumentation',
               'events_statements_current', 'events_statements_history',
               'events_transactions_current')
UNION ALL
SELECT NAME, ENABLED
FROM performance_schema.setup_instruments
WHERE NAME = 'transaction'
ORDER BY 1
