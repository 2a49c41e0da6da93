-- Statistics for the servers, as autovacuum would have them.
VACUUM (ANALYZE) servers;
