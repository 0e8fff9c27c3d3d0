-- What the clients of the open InnoDB transactions at least min_age seconds old say they are
-- (performance_schema.session_connect_attrs): program name, driver, its version, client pid.
-- Only those threads, only these attributes, values cut to 200 characters, bounded.
SELECT a.PROCESSLIST_ID AS thread_id, a.ATTR_NAME AS name, LEFT(a.ATTR_VALUE, 200) AS value
FROM information_schema.INNODB_TRX t
JOIN performance_schema.session_connect_attrs a ON a.PROCESSLIST_ID = t.trx_mysql_thread_id
WHERE t.trx_started <= NOW() - INTERVAL %(min_age)s SECOND
  AND t.trx_mysql_thread_id <> CONNECTION_ID()
  AND a.ATTR_NAME IN ('program_name', '_client_name', '_client_version', '_pid',
                      'application_name', '_program_name')
ORDER BY t.trx_started, a.PROCESSLIST_ID, a.ATTR_NAME
LIMIT %(limit)s
