-- performance_schema on/off and its statement buffer sizes; SHOW returns only the variables
-- this server has (older MariaDB lacks max_sql_text_length), so no version switch is needed.
SHOW GLOBAL VARIABLES WHERE Variable_name IN (
  'performance_schema', 'performance_schema_events_statements_history_long_size',
  'performance_schema_events_statements_history_size', 'performance_schema_max_sql_text_length')
