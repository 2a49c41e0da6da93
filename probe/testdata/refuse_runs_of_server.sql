-- Makes storing a run of server $1 fail, as a bad row would: a batch of finishes holding it fails.
CREATE FUNCTION refuse_run() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'this test refuses the runs of server %', NEW.server_id;
END
$$;
CREATE TRIGGER refuse_run BEFORE INSERT ON probe_runs
    FOR EACH ROW WHEN (NEW.server_id = 0) EXECUTE FUNCTION refuse_run();
