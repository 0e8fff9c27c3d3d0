-- Fallback without SELECT on mysql.user: the SUPER grantees this account may see.
SELECT DISTINCT GRANTEE AS grantee FROM information_schema.USER_PRIVILEGES
WHERE PRIVILEGE_TYPE = 'SUPER' LIMIT 1000
