-- This account's own grants (any user may read its own; MariaDB adds the current role's).
SHOW GRANTS
