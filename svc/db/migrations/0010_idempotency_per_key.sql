-- An idempotency record belongs to the API key that made it: the key's id joins the primary
-- key (another key with the same Idempotency-Key is another request), the record keeps the
-- key's permissions when it was made (a replay needs them still) and its fingerprint covers
-- the key's id: sha256 over (length || key id || length || request fingerprint), lengths as
-- 8-byte big-endian integers, as svc.idempotency computes it.
ALTER TABLE idempotency_keys
    ADD COLUMN api_key_id   text,
    ADD COLUMN permissions  text[];

-- Records stored before this did not note their key. A record is given to a key only when
-- that key is the one key that can have made it: the only key, ever, of the record's
-- environment in its organisation or in the partner organisation it is connected to (keys
-- are revoked, never deleted, and an organisation's partner never changes, so the one
-- candidate left is the maker). Keys do not change permissions, so today's are the maker's.
WITH makers AS (
    SELECT i.org_id, i.env, i.key_digest, min(k.id) AS key_id, count(k.id) AS candidates
    FROM idempotency_keys AS i
    LEFT JOIN organisations AS o ON o.id = i.org_id
    LEFT JOIN api_keys AS k
      ON k.env = i.env AND (k.org_id = i.org_id OR k.org_id = o.partner_id)
    GROUP BY i.org_id, i.env, i.key_digest
)
UPDATE idempotency_keys AS i
SET api_key_id = k.id,
    permissions = k.permissions,
    fingerprint = encode(sha256(
        int8send(octet_length(convert_to(k.id, 'UTF8'))) || convert_to(k.id, 'UTF8')
        || int8send(octet_length(convert_to(i.fingerprint, 'UTF8')))
        || convert_to(i.fingerprint, 'UTF8')), 'hex')
FROM makers AS m
JOIN api_keys AS k ON k.id = m.key_id
WHERE m.candidates = 1
  AND (i.org_id, i.env, i.key_digest) = (m.org_id, m.env, m.key_digest);

-- Any other record could be any of several keys': it is kept under no key (''), so it never
-- replays to anyone, and until it expires (SVC_IDEMPOTENCY_TTL) its Idempotency-Key is
-- answered 422 idempotency_key_reused in its scope, whichever key sends it: neither another
-- key reads the stored answer nor does the maker's retry make a second payment.
UPDATE idempotency_keys SET api_key_id = '' WHERE api_key_id IS NULL;

ALTER TABLE idempotency_keys ALTER COLUMN api_key_id SET NOT NULL;
ALTER TABLE idempotency_keys DROP CONSTRAINT idempotency_keys_pkey;
-- A request looks up its own key's record and its scope's unattributed one in this index.
ALTER TABLE idempotency_keys ADD PRIMARY KEY (org_id, env, api_key_id, key_digest);
