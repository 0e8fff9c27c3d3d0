-- Accounts with SUPER (by user name: a session shows its user, not the matching account).
SELECT DISTINCT User AS user FROM mysql.user WHERE Super_priv = 'Y' LIMIT 1000
