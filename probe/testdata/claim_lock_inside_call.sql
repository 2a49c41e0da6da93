SELECT job_id, server_id FROM probe_claim_lock_inside($1, $2, $3);
