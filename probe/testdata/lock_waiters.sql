-- Sessions of this database waiting for a lock (heavyweight, row or advisory).
SELECT count(*) FROM pg_stat_activity
 WHERE datname = current_database() AND wait_event_type = 'Lock';
