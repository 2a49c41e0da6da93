-- Server $1's next check time: what a claim of it read, as a spooled result carries it.
SELECT next_check_at FROM servers WHERE id = $1;
