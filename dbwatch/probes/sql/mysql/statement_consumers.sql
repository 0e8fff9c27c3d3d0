-- Is statement history collected? performance_schema itself, the consumer chain it needs
-- (global -> thread -> events_statements_current -> history / history_long) and the sizes.
SELECT @@GLOBAL.performance_schema AS performance_schema,
       @@GLOBAL.performance_schema_events_statements_history_long_size AS history_long_size,
       @@GLOBAL.performance_schema_events_statements_history_size AS history_size,
       @@GLOBAL.performance_schema_max_sql_text_length AS max_sql_text_length,
       c.NAME AS name, c.ENABLED AS enabled
FROM (SELECT 1 AS one) AS one
LEFT JOIN performance_schema.setup_consumers AS c
  ON c.NAME IN ('global_instrumentation', 'thread_instrumentation', 'statements_digest',
                'events_statements_current', 'events_statements_history',
                'events_statements_history_long')
ORDER BY c.NAME
