-- Appends in two statements (issue 21; pmm/storage/postgres/chains.py): what an append sent
-- as about eleven statements (locks, owners, window tails, chain upsert and select, ids,
-- insert, heads, window keys), each one client-side work and a result to read, is two
-- function calls between BEGIN and COMMIT. The hashes stay in Python, so the append still
-- reads the heads (call 1) before it writes the rows (call 2). The locks, their order and
-- what each protects are unchanged: APPEND_LOCK shared, then the sessions' locks (sorted),
-- then the chains' (sorted). Arguments and results travel as one JSON document each:
-- cheaper for the client to build and read than a dozen typed arrays.

-- The chains' locks, a secret for each new chain, every chain's secret (hex) and head, and
-- `count` ids: {"keys": [...], "secrets": [hex, ...], "count": n}.
CREATE FUNCTION pmm_open_chains(p JSONB) RETURNS JSONB
LANGUAGE plpgsql AS $$
DECLARE
    keys TEXT[] := ARRAY(SELECT jsonb_array_elements_text(p -> 'keys'));
    result JSONB;
BEGIN
    PERFORM pg_advisory_xact_lock(1347243267, h)  -- CHAIN_LOCK, 0x504D4D03
       FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest(keys) AS k ORDER BY 1) AS sorted;
    INSERT INTO chains(chain, secret)
    SELECT k, decode(s, 'hex')
      FROM unnest(keys, ARRAY(SELECT jsonb_array_elements_text(p -> 'secrets'))) AS t(k, s)
        ON CONFLICT (chain) DO NOTHING;
    SELECT jsonb_build_object(
               'chains', (SELECT jsonb_agg(jsonb_build_array(c.chain, encode(c.secret, 'hex'),
                                                             c.head_id, c.head_hash))
                            FROM chains AS c WHERE c.chain = ANY(keys)),
               'ids', (SELECT jsonb_agg(nextval('events_id_seq'))
                         FROM generate_series(1, (p ->> 'count')::INTEGER)))
      INTO result;
    RETURN result;
END $$;

-- Call 1: {"sessions": [...] ('' for none), "owned": [named sessions], "windowed": [sessions
-- whose turns' window keys the append writes, null for none], "kinds": [...], "tail": n,
-- "chars": n, "keys": [...] or null, "secrets", "count"}. Takes the locks, reads each owned
-- session's user (its newest row's), the newest `tail` rows of `kinds` of each windowed
-- session (their first `chars` characters) and, when the keys are known, opens the chains.
-- With "keys" null (a user comes from a session's owner) the caller resolves the owners
-- and calls pmm_open_chains next, in the same transaction.
CREATE FUNCTION pmm_append_open(p JSONB) RETURNS JSONB
LANGUAGE plpgsql AS $$
DECLARE
    kinds TEXT[] := ARRAY(SELECT jsonb_array_elements_text(p -> 'kinds'));
    tail INTEGER := (p ->> 'tail')::INTEGER;
    chars INTEGER := (p ->> 'chars')::INTEGER;
    result JSONB;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1347243265);  -- APPEND_LOCK, 0x504D4D01
    PERFORM pg_advisory_xact_lock(1347243266, h)  -- SESSION_LOCK, 0x504D4D02
       FROM (SELECT DISTINCT hashtext(k) AS h
               FROM jsonb_array_elements_text(p -> 'sessions') AS k ORDER BY 1) AS sorted;
    SELECT jsonb_build_object(
               'owners', (SELECT jsonb_agg(jsonb_build_array(s, (
                              SELECT e.user_id FROM events AS e WHERE e.session_id = s
                               ORDER BY e.id DESC LIMIT 1)))
                            FROM jsonb_array_elements_text(p -> 'owned') AS s
                           WHERE EXISTS (SELECT 1 FROM events AS e WHERE e.session_id = s)),
               'tails', (SELECT jsonb_agg(jsonb_build_array(w.sid, r.id, r.kind, r.ts, r.body))
                           FROM (SELECT v #>> '{}' AS sid
                                   FROM jsonb_array_elements(
                                            jsonb_build_array() || (p -> 'windowed')) AS v)
                                AS w
                          CROSS JOIN LATERAL (
                                (SELECT e.id, e.kind, e.ts,
                                        left(coalesce(e.content, e.summary), chars) AS body
                                   FROM events AS e
                                  WHERE e.session_id = w.sid AND e.kind = ANY(kinds)
                                  ORDER BY e.id DESC LIMIT tail)
                                UNION ALL
                                (SELECT e.id, e.kind, e.ts,
                                        left(coalesce(e.content, e.summary), chars)
                                   FROM events AS e
                                  WHERE w.sid IS NULL AND e.session_id IS NULL
                                    AND e.kind = ANY(kinds)
                                  ORDER BY e.id DESC LIMIT tail)) AS r))
      INTO result;
    IF jsonb_typeof(p -> 'keys') = 'array' THEN
        result := result || pmm_open_chains(p);
    END IF;
    RETURN result;
END $$;

-- Call 2: {"rows": [[id, ts, kind, session_id, role, content, content_sha256, meta,
-- prev_hash, hash, hash_version, user_id, user_digest, session_digest], ...], "heads":
-- [[chain, head_id, head_hash], ...], "windows": [[event_id, session_id, kind, window text,
-- date words], ...]}: the rows, the chains' new heads, and the window keys the appended turns
-- call for (to_tsvector runs here, as before).
CREATE FUNCTION pmm_append_rows(p JSONB) RETURNS VOID
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO events(id, ts, kind, session_id, role, content, content_sha256, meta,
                       prev_hash, hash, hash_version, user_id, user_digest, session_digest)
    SELECT (r ->> 0)::BIGINT, r ->> 1, r ->> 2, r ->> 3, r ->> 4, r ->> 5, r ->> 6, r ->> 7,
           r ->> 8, r ->> 9, (r ->> 10)::SMALLINT, r ->> 11, r ->> 12, r ->> 13
      FROM jsonb_array_elements(p -> 'rows') WITH ORDINALITY AS t(r, n) ORDER BY n;
    UPDATE chains SET head_id = (v ->> 1)::BIGINT, head_hash = v ->> 2
      FROM jsonb_array_elements(p -> 'heads') AS v
     WHERE chains.chain = v ->> 0;
    INSERT INTO event_windows(event_id, session_id, kind, search)
    SELECT (w ->> 0)::BIGINT, w ->> 1, w ->> 2,
           setweight(to_tsvector('english', w ->> 3), 'A')
           || setweight(to_tsvector('english', w ->> 4), 'B')
      FROM jsonb_array_elements(p -> 'windows') AS w
        ON CONFLICT (event_id) DO UPDATE SET search = excluded.search;
END $$;
