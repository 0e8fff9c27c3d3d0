-- Client program names (connection attributes); empty where performance_schema is off.
SELECT PROCESSLIST_ID AS thread_id, ATTR_VALUE AS program
FROM performance_schema.session_connect_attrs
WHERE ATTR_NAME = 'program_name'
LIMIT 10000
