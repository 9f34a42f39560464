-- An append in one statement when the client already knows what pmm_append_open would
-- return (issue 21; pmm/storage/postgres/append_cache.py). The client remembers, from its
-- own earlier appends, each chain's secret and head, its sessions' owners and their newest
-- turns; it hashes the rows against the remembered heads and sends this one call in
-- autocommit (one implicit transaction: no BEGIN and COMMIT round trips). Under the same
-- locks as the two-call path, taken in the same order, the function compares every value
-- the two-call path would have read (the chains' rows, the sessions' owners, the windowed
-- sessions' newest turns, the unique_meta pairs) with the client's; only when all are
-- equal does it take the ids and write exactly what pmm_append_rows writes. Otherwise it
-- changes nothing and answers {"stale": what differed}, and the client appends through
-- the two calls. Equal inputs make equal rows: the chain rule runs in Python either way.
--
-- p: {"sessions": [...] ('' for none), "named": [sessions with a name],
--     "owners": [[session, user], ...] the named sessions that hold events, as the client
--     believes (the others it believes new), "chains": [[key, secret hex, head_id,
--     head_hash], ...], "tails": [[session, [[session, id, kind, ts, text], ...] or null],
--     ...] (pmm_session_tail's answer for each windowed session the client believes holds
--     events), "kinds", "tail", "chars", "unique": {"field": name, "pairs": [[session,
--     value], ...]} or null, "base": the first placeholder id, "rows", "heads", "windows",
--     "begun": as pmm_append_rows takes them, with ids >= base standing for the n-th new id}.
-- Answer: {"ids": [...]} (ascending: row n got the n-th) or {"stale": "..."}.
CREATE FUNCTION pmm_append_fast(p JSONB) RETURNS JSONB
LANGUAGE plpgsql SET plan_cache_mode = auto AS $$
DECLARE
    keys TEXT[] := ARRAY(SELECT c ->> 0 FROM jsonb_array_elements(p -> 'chains') AS c);
    kinds TEXT[];
    base BIGINT := (p ->> 'base')::BIGINT;
    ids BIGINT[];
    got JSONB;
    want JSONB;
    t JSONB;
    dup BOOLEAN;
BEGIN
    -- The locks, in pmm_append_open's and pmm_open_chains' order.
    PERFORM pg_advisory_xact_lock_shared(1347243265);  -- APPEND_LOCK
    IF jsonb_array_length(p -> 'sessions') = 1 THEN
        PERFORM pg_advisory_xact_lock(1347243266, hashtext(p -> 'sessions' ->> 0));
    ELSE
        PERFORM pg_advisory_xact_lock(1347243266, h)  -- SESSION_LOCK
           FROM (SELECT DISTINCT hashtext(k) AS h
                   FROM jsonb_array_elements_text(p -> 'sessions') AS k ORDER BY 1) AS sorted;
    END IF;
    IF cardinality(keys) = 1 THEN
        PERFORM pg_advisory_xact_lock(1347243267, hashtext(keys[1]));  -- CHAIN_LOCK
    ELSE
        PERFORM pg_advisory_xact_lock(1347243267, h)
           FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest(keys) AS k ORDER BY 1) AS sorted;
    END IF;

    -- Each chain's secret and head (a replaced secret, another writer's append, an
    -- erasure that moved the head: all differ here).
    SELECT coalesce(jsonb_agg(jsonb_build_array(c.chain, encode(c.secret, 'hex'), c.head_id,
                                                c.head_hash) ORDER BY c.chain), '[]')
      INTO got FROM chains AS c WHERE c.chain = ANY(keys);
    SELECT coalesce(jsonb_agg(c ORDER BY c ->> 0), '[]') INTO want
      FROM jsonb_array_elements(p -> 'chains') AS c;
    IF got IS DISTINCT FROM want THEN
        RETURN '{"stale": "chains"}';
    END IF;

    -- The named sessions' owners: which hold events, and whose they are (assign_user).
    SELECT coalesce(jsonb_agg(jsonb_build_array(o.session_id, o.user_id) ORDER BY o.session_id),
                    '[]')
      INTO got FROM session_owners AS o
     WHERE o.session_id IN (SELECT jsonb_array_elements_text(p -> 'named'));
    SELECT coalesce(jsonb_agg(o ORDER BY o ->> 0), '[]') INTO want
      FROM jsonb_array_elements(p -> 'owners') AS o;
    IF got IS DISTINCT FROM want THEN
        RETURN '{"stale": "owners"}';
    END IF;

    -- The newest turns the window keys were built from (another writer's turns, a
    -- redaction, an erasure or a compaction of one of them: all differ here). The owners
    -- are the client's, checked above.
    IF jsonb_array_length(p -> 'tails') > 0 THEN
        kinds := ARRAY(SELECT jsonb_array_elements_text(p -> 'kinds'));
        FOR t IN SELECT jsonb_array_elements(p -> 'tails') LOOP
            SELECT coalesce(pmm_session_tail(pmm_shard(o.user_id), t ->> 0, kinds,
                                             (p ->> 'tail')::INTEGER, (p ->> 'chars')::INTEGER),
                            '[]')
              INTO got FROM session_owners AS o WHERE o.session_id = t ->> 0;
            IF NOT FOUND OR got IS DISTINCT FROM coalesce(nullif(t -> 1, 'null'), '[]') THEN
                RETURN '{"stale": "tails"}';
            END IF;
        END LOOP;
    END IF;

    -- unique_meta: any pair the log holds already is for the two-call path to leave out.
    IF jsonb_typeof(p -> 'unique') = 'object' THEN
        EXECUTE format(
            'SELECT EXISTS (SELECT 1 FROM jsonb_array_elements($1) AS t(v) WHERE EXISTS'
            ' (SELECT 1 FROM events WHERE session_id = t.v ->> 0'
            ' AND (meta::jsonb ->> %L) = t.v ->> 1))', p -> 'unique' ->> 'field')
           INTO dup USING p -> 'unique' -> 'pairs';
        IF dup THEN
            RETURN '{"stale": "unique"}';
        END IF;
    END IF;

    ids := ARRAY(SELECT i FROM (SELECT nextval('events_id_seq') AS i
                                  FROM generate_series(1, jsonb_array_length(p -> 'rows')))
                             AS taken ORDER BY i);
    PERFORM pmm_append_rows(jsonb_build_object(
        'rows', (SELECT jsonb_agg(jsonb_set(r, '{0}', to_jsonb(ids[n])) ORDER BY n)
                   FROM jsonb_array_elements(p -> 'rows') WITH ORDINALITY AS x(r, n)),
        'heads', (SELECT coalesce(jsonb_agg(jsonb_set(h, '{1}', to_jsonb(CASE
                      WHEN (h ->> 1)::BIGINT >= base THEN ids[(h ->> 1)::BIGINT - base + 1]
                      ELSE (h ->> 1)::BIGINT END))), '[]')
                    FROM jsonb_array_elements(p -> 'heads') AS h),
        'windows', (SELECT coalesce(jsonb_agg(jsonb_set(w, '{0}', to_jsonb(CASE
                        WHEN (w ->> 0)::BIGINT >= base THEN ids[(w ->> 0)::BIGINT - base + 1]
                        ELSE (w ->> 0)::BIGINT END))), '[]')
                      FROM jsonb_array_elements(p -> 'windows') AS w),
        'owners', p -> 'begun'));
    RETURN jsonb_build_object('ids', to_jsonb(ids));
END $$;
