-- What the clients of the given threads (txn_threads.sql: open transactions at least min_age
-- old) say they are (performance_schema.session_connect_attrs): program name, driver, its
-- version, client pid. The ids come as one bound comma-separated list (FIND_IN_SET): one
-- scan, no join. Values cut to 200 characters; bounded.
SELECT a.PROCESSLIST_ID AS thread_id, a.ATTR_NAME AS name, LEFT(a.ATTR_VALUE, 200) AS value
FROM performance_schema.session_connect_attrs a
WHERE FIND_IN_SET(a.PROCESSLIST_ID, %(ids)s) > 0
  AND a.ATTR_NAME IN ('program_name', '_client_name', '_client_version', '_pid',
                      'application_name', '_program_name')
ORDER BY a.PROCESSLIST_ID, a.ATTR_NAME
LIMIT %(limit)s
