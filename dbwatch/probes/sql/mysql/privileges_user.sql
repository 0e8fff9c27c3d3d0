-- The account this session is authenticated as ('user@host'), for exact GRANT statements.
SELECT CURRENT_USER() AS account
