-- A servers row with every field chosen; created_at defaults to now().
INSERT INTO servers (slug, endpoint_url, kind, plan, check_interval, status, maintainer_claimed_at,
                     next_check_at, created_at)
VALUES (@slug, @endpoint_url, @kind, @plan, @check_interval::interval, @status, @maintainer_claimed_at,
        @next_check_at, coalesce(@created_at::timestamptz, now()))
RETURNING id;
