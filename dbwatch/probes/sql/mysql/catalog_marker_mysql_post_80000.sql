-- Has any schema's catalog changed (DDL) since the last look? (MySQL 8 keeps the status in
-- performance_schema.) The server's DDL statement counters, O(1): a CREATE/ALTER/DROP/RENAME of
-- a table, index or database counts here (failed ones too: an extra re-read only).
SELECT VARIABLE_NAME AS name, VARIABLE_VALUE AS value
FROM performance_schema.global_status
WHERE VARIABLE_NAME IN ('Com_alter_table', 'Com_create_table', 'Com_drop_table',
                        'Com_rename_table', 'Com_create_index', 'Com_drop_index',
                        'Com_create_db', 'Com_drop_db', 'Com_alter_db')
