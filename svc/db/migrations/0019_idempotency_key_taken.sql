-- An idempotency record is claimed by its primary key, not by a lock: a request writes its
-- record in the statement that makes its change, and a record that is there already and
-- has not expired fails that statement as a unique violation of the primary key, which
-- the API answers by replaying the stored response. Called where an INSERT ... ON CONFLICT
-- would otherwise do nothing and let the rest of the statement run.
CREATE FUNCTION idempotency_key_taken() RETURNS boolean LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    RAISE EXCEPTION 'this Idempotency-Key already has an answer'
        USING ERRCODE = 'unique_violation', TABLE = 'idempotency_keys',
              CONSTRAINT = 'idempotency_keys_pkey';
END $$;
