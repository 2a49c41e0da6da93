-- Pauses, delists or reactivates server $1 behind the directory's back (no event, no reason).
UPDATE servers SET status = $2 WHERE slug = $1 RETURNING id;
