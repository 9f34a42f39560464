-- pmm_append_fast (migrations/0011) writing its rows itself (issue 21; the measurements are
-- in docs/benchmarks/chains.md). 0011 resolved the placeholder ids by re-building the rows,
-- heads and windows with jsonb_set and jsonb_agg into a new document and passed it to
-- pmm_append_rows, which took it apart again field by field: a second function call, three
-- re-aggregations and a copy of the payload per append. Here each INSERT reads the client's
-- arrays once and puts ids[n] in place of a placeholder as it goes. The checks, the locks,
-- their order and every value written are 0011's (tests/storage/postgres/
-- test_append_fast.py compares the rows with the two-call path's byte for byte).
-- Every statement keeps one generic plan: under 0011's plan_cache_mode = auto two were
-- planned again on every call (pg_stat_statements.track_planning: 300 plans in 299 calls
-- for the read of chains by ANY(keys) and for the ids' generate_series, whose custom plans
-- know the array's and the series' sizes and so look cheaper than the generic ones), and
-- forcing the generic plans measured faster (468 against 373 appends/s, interleaved). No
-- statement here reads events through the parent: the newest turns are read by partition
-- name (pmm_session_tail), the unique_meta check is dynamic SQL (planned for its values),
-- and an INSERT locks a row's partition when it routes the row.
CREATE OR REPLACE FUNCTION pmm_append_fast(p JSONB) RETURNS JSONB
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
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
    -- Window rows without a session take their event's partition, a read of events that
    -- pmm_append_rows makes and this function does not: the client sends none (it appends
    -- those the two-call way); a document that holds one is sent back before any lock.
    IF jsonb_path_exists(p, 'strict $.windows[*] ? (@[1] == null)') THEN
        RETURN '{"stale": "windows"}';
    END IF;

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

    -- Each chain's secret and head, as 0011 compares them.
    SELECT coalesce(jsonb_agg(jsonb_build_array(c.chain, encode(c.secret, 'hex'), c.head_id,
                                                c.head_hash) ORDER BY c.chain), '[]')
      INTO got FROM chains AS c WHERE c.chain = ANY(keys);
    SELECT coalesce(jsonb_agg(c ORDER BY c ->> 0), '[]') INTO want
      FROM jsonb_array_elements(p -> 'chains') AS c;
    IF got IS DISTINCT FROM want THEN
        RETURN '{"stale": "chains"}';
    END IF;

    -- The named sessions' owners.
    SELECT coalesce(jsonb_agg(jsonb_build_array(o.session_id, o.user_id) ORDER BY o.session_id),
                    '[]')
      INTO got FROM session_owners AS o
     WHERE o.session_id IN (SELECT jsonb_array_elements_text(p -> 'named'));
    SELECT coalesce(jsonb_agg(o ORDER BY o ->> 0), '[]') INTO want
      FROM jsonb_array_elements(p -> 'owners') AS o;
    IF got IS DISTINCT FROM want THEN
        RETURN '{"stale": "owners"}';
    END IF;

    -- The newest turns the window keys were built from.
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

    -- pmm_append_rows' statements, each with ids[n] in place of the n-th placeholder.
    INSERT INTO events(id, ts, kind, session_id, role, content, content_sha256, meta,
                       prev_hash, hash, hash_version, user_id, user_digest, session_digest,
                       shard)
    SELECT ids[n], r ->> 1, r ->> 2, r ->> 3, r ->> 4, r ->> 5, r ->> 6, r ->> 7,
           r ->> 8, r ->> 9, (r ->> 10)::SMALLINT, r ->> 11, r ->> 12, r ->> 13,
           pmm_shard(r ->> 11)
      FROM jsonb_array_elements(p -> 'rows') WITH ORDINALITY AS x(r, n) ORDER BY n;
    IF jsonb_array_length(p -> 'begun') > 0 THEN
        INSERT INTO session_owners(session_id, user_id)
        SELECT o ->> 0, o ->> 1 FROM jsonb_array_elements(p -> 'begun') AS o
            ON CONFLICT (session_id) DO NOTHING;
    END IF;
    UPDATE chains SET head_id = CASE WHEN (v ->> 1)::BIGINT >= base
                                     THEN ids[(v ->> 1)::BIGINT - base + 1]
                                     ELSE (v ->> 1)::BIGINT END,
                      head_hash = v ->> 2
      FROM jsonb_array_elements(p -> 'heads') AS v
     WHERE chains.chain = v ->> 0;
    INSERT INTO event_windows(event_id, session_id, kind, search, shard)
    SELECT CASE WHEN (w ->> 0)::BIGINT >= base THEN ids[(w ->> 0)::BIGINT - base + 1]
                ELSE (w ->> 0)::BIGINT END,
           w ->> 1, w ->> 2,
           setweight(to_tsvector('english', w ->> 3), 'A')
           || setweight(to_tsvector('english', w ->> 4), 'B'), pmm_shard(o.user_id)
      FROM jsonb_array_elements(p -> 'windows') AS w
      JOIN session_owners AS o ON o.session_id = w ->> 1
        ON CONFLICT (event_id, shard) DO UPDATE SET search = excluded.search;
    RETURN jsonb_build_object('ids', to_jsonb(ids));
END $$;
