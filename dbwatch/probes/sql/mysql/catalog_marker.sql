-- Has any schema's catalog changed (DDL) since the last look? The server's DDL statement
-- counters, O(1) (no information_schema scan): a CREATE/ALTER/DROP/RENAME of a table, index or
-- database counts here (failed ones too: an extra re-read only). A restart resets them (a
-- change as well, unless by chance the counts come back the same: the max age bounds that).
SELECT VARIABLE_NAME AS name, VARIABLE_VALUE AS value
FROM information_schema.GLOBAL_STATUS
WHERE VARIABLE_NAME IN ('COM_ALTER_TABLE', 'COM_CREATE_TABLE', 'COM_DROP_TABLE',
                        'COM_RENAME_TABLE', 'COM_CREATE_INDEX', 'COM_DROP_INDEX',
                        'COM_CREATE_DB', 'COM_DROP_DB', 'COM_ALTER_DB')
