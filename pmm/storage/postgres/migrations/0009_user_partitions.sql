-- Tables partitioned by user (issue 21): erasing one user rewrites only her partition of
-- events, embeddings and event_windows (pmm/storage/postgres/swap.py copies it beside the
-- live one and swaps them in one short transaction), so no other user's append waits for
-- a rewrite of the whole tables. shard = pmm_shard(user_id): 0 for the rows without a
-- user, 1..32 by a hash of the user id; a row keeps its shard when an erasure removes its
-- user id (it stays in the partition that the erasure rewrites). The tables are copied with
-- whatever columns they have now (LIKE ... INCLUDING), the non-unique indexes recreated
-- from their definitions (those of earlier migrations included), and the primary keys get
-- the partition key (PostgreSQL requires it). Foreign keys to events(id) go (a partitioned
-- table's unique keys must hold its partition key); PMM never deletes an event row.

-- Each session's user, read by every append (is the session new? whose is it? which
-- partition holds its turns?) with one index probe instead of one per partition; written
-- by the append that starts a session and by assign_user.
CREATE TABLE session_owners (
    session_id TEXT PRIMARY KEY,
    user_id    TEXT
);
INSERT INTO session_owners
    SELECT DISTINCT ON (session_id) session_id, user_id FROM events
    WHERE session_id IS NOT NULL ORDER BY session_id, id DESC;

CREATE FUNCTION pmm_shard(user_id TEXT) RETURNS SMALLINT
    LANGUAGE sql IMMUTABLE PARALLEL SAFE
    RETURN CASE WHEN user_id IS NULL THEN 0
                ELSE 1 + (hashtextextended(user_id, 0) & 2147483647) % 32 END;

CREATE TEMPORARY TABLE pmm_old_indexes (def TEXT NOT NULL) ON COMMIT DROP;

DO $$
DECLARE
    t TEXT;
    cols TEXT;
    i INTEGER;
BEGIN
    FOREACH t IN ARRAY ARRAY['events', 'embeddings', 'event_windows'] LOOP
        EXECUTE format('ALTER TABLE %I RENAME TO %I', t, t || '_unpartitioned');
        INSERT INTO pmm_old_indexes
            SELECT pg_get_indexdef(x.indexrelid) FROM pg_index x
            WHERE x.indrelid = (t || '_unpartitioned')::regclass AND NOT x.indisunique;
        EXECUTE format(
            'CREATE TABLE %I (LIKE %I INCLUDING DEFAULTS INCLUDING GENERATED'
            ' INCLUDING STORAGE INCLUDING COMPRESSION, shard SMALLINT NOT NULL)'
            ' PARTITION BY LIST (shard)', t, t || '_unpartitioned');
        FOR i IN 0..32 LOOP
            EXECUTE format('CREATE TABLE %I PARTITION OF %I FOR VALUES IN (%s)',
                           t || '_s' || lpad(i::text, 2, '0'), t, i);
        END LOOP;
        SELECT string_agg(quote_ident(attname), ', ' ORDER BY attnum) INTO cols
            FROM pg_attribute
            WHERE attrelid = (t || '_unpartitioned')::regclass AND attnum > 0
              AND NOT attisdropped AND attgenerated = '';
        IF t = 'events' THEN
            EXECUTE format('INSERT INTO events (%s, shard) SELECT %s, pmm_shard(user_id)'
                           ' FROM events_unpartitioned', cols, cols);
        ELSE
            EXECUTE format('INSERT INTO %I (%s, shard) SELECT %s, e.shard FROM %I o'
                           ' JOIN events e ON e.id = o.event_id', t, cols,
                           (SELECT string_agg('o.' || c, ', ')
                              FROM unnest(string_to_array(cols, ', ')) AS c),
                           t || '_unpartitioned');
        END IF;
        EXECUTE format('DROP TABLE %I CASCADE', t || '_unpartitioned');
    END LOOP;
END
$$;

ALTER TABLE events ADD PRIMARY KEY (id, shard);
ALTER TABLE events ADD UNIQUE (hash, shard);
ALTER TABLE embeddings ADD PRIMARY KEY (event_id, model, shard);
ALTER TABLE event_windows ADD PRIMARY KEY (event_id, shard);

DO $$
DECLARE
    d TEXT;
BEGIN
    FOR d IN SELECT def FROM pmm_old_indexes LOOP
        EXECUTE replace(d, '_unpartitioned USING ', ' USING ');
    END LOOP;
END
$$;

-- The rewrite's change log (pmm/storage/postgres/swap.py): while a partition is copied
-- beside the live one, a trigger on the live partition records the key of every row
-- written there, and the copy replays those rows before the swap. Unlogged: a crash ends
-- the rewrite, whose copy is dropped by the next one.
CREATE UNLOGGED TABLE pmm_swap_log (
    part     TEXT   NOT NULL,
    event_id BIGINT NOT NULL
);
CREATE INDEX pmm_swap_log_by_part ON pmm_swap_log (part);

CREATE FUNCTION pmm_swap_capture() RETURNS TRIGGER
LANGUAGE plpgsql AS $$
BEGIN
    -- TG_ARGV[0]: the key column (id for events, event_id for the others).
    INSERT INTO pmm_swap_log
    VALUES (TG_TABLE_NAME, (to_jsonb(coalesce(NEW, OLD)) ->> TG_ARGV[0])::BIGINT);
    RETURN NULL;
END $$;

-- The append's functions (migrations/0008) read no partition but their users': a session's
-- user comes from session_owners, its newest turns from its user's partition. A plpgsql
-- statement is a prepared statement: with a generic plan it would lock (and so wait for)
-- every partition; plan_cache_mode = force_custom_plan plans each call for its values, so
-- the planner prunes to the one partition named by a variable.
CREATE OR REPLACE FUNCTION pmm_append_open(p JSONB) RETURNS JSONB
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
DECLARE
    kinds TEXT[] := ARRAY(SELECT jsonb_array_elements_text(p -> 'kinds'));
    tail INTEGER := (p ->> 'tail')::INTEGER;
    chars INTEGER := (p ->> 'chars')::INTEGER;
    tails JSONB := '[]';
    got JSONB;
    sid TEXT;
    sh SMALLINT;
    result JSONB;
BEGIN
    PERFORM pg_advisory_xact_lock_shared(1347243265);  -- APPEND_LOCK, 0x504D4D01
    PERFORM pg_advisory_xact_lock(1347243266, h)  -- SESSION_LOCK, 0x504D4D02
       FROM (SELECT DISTINCT hashtext(k) AS h
               FROM jsonb_array_elements_text(p -> 'sessions') AS k ORDER BY 1) AS sorted;
    FOR sid IN SELECT v #>> '{}'
                 FROM jsonb_array_elements(jsonb_build_array() || (p -> 'windowed')) AS v LOOP
        IF sid IS NULL THEN
            -- Rows without a session: any user's (rare; reads every partition).
            SELECT jsonb_agg(jsonb_build_array(NULL, r.id, r.kind, r.ts, r.body)) INTO got
              FROM (SELECT e.id, e.kind, e.ts, left(coalesce(e.content, e.summary), chars) AS body
                      FROM events AS e WHERE e.session_id IS NULL AND e.kind = ANY(kinds)
                     ORDER BY e.id DESC LIMIT tail) AS r;
        ELSE
            SELECT pmm_shard(o.user_id) INTO sh FROM session_owners AS o WHERE o.session_id = sid;
            CONTINUE WHEN NOT FOUND;  -- a new session: no turns before
            SELECT jsonb_agg(jsonb_build_array(sid, r.id, r.kind, r.ts, r.body)) INTO got
              FROM (SELECT e.id, e.kind, e.ts, left(coalesce(e.content, e.summary), chars) AS body
                      FROM events AS e
                     WHERE e.shard = sh AND e.session_id = sid AND e.kind = ANY(kinds)
                     ORDER BY e.session_id DESC, e.id DESC LIMIT tail) AS r;
        END IF;
        tails := tails || coalesce(got, '[]');
    END LOOP;
    SELECT jsonb_build_object(
               'owners', (SELECT jsonb_agg(jsonb_build_array(o.session_id, o.user_id))
                            FROM session_owners AS o
                           WHERE o.session_id IN (SELECT jsonb_array_elements_text(p -> 'owned'))),
               'tails', CASE WHEN jsonb_array_length(tails) > 0 THEN tails END)
      INTO result;
    IF jsonb_typeof(p -> 'keys') = 'array' THEN
        result := result || pmm_open_chains(p);
    END IF;
    RETURN result;
END $$;

-- Rows go to their user's partition, window rows to their session's (or, without a
-- session, their event's); the sessions begun here get their owner.
CREATE OR REPLACE FUNCTION pmm_append_rows(p JSONB) RETURNS VOID
LANGUAGE plpgsql SET plan_cache_mode = force_custom_plan AS $$
BEGIN
    INSERT INTO events(id, ts, kind, session_id, role, content, content_sha256, meta,
                       prev_hash, hash, hash_version, user_id, user_digest, session_digest,
                       shard)
    SELECT (r ->> 0)::BIGINT, r ->> 1, r ->> 2, r ->> 3, r ->> 4, r ->> 5, r ->> 6, r ->> 7,
           r ->> 8, r ->> 9, (r ->> 10)::SMALLINT, r ->> 11, r ->> 12, r ->> 13,
           pmm_shard(r ->> 11)
      FROM jsonb_array_elements(p -> 'rows') WITH ORDINALITY AS t(r, n) ORDER BY n;
    INSERT INTO session_owners(session_id, user_id)
    SELECT DISTINCT ON (r ->> 3) r ->> 3, r ->> 11
      FROM jsonb_array_elements(p -> 'rows') AS r
     WHERE r ->> 3 IS NOT NULL
        ON CONFLICT (session_id) DO NOTHING;
    UPDATE chains SET head_id = (v ->> 1)::BIGINT, head_hash = v ->> 2
      FROM jsonb_array_elements(p -> 'heads') AS v
     WHERE chains.chain = v ->> 0;
    -- A statement is planned (and locks what it may read) when it first runs: the one
    -- that reads events (for rows without a session, any user's) runs only when needed.
    IF EXISTS (SELECT 1 FROM jsonb_array_elements(p -> 'windows') AS w WHERE w ->> 1 IS NULL) THEN
        INSERT INTO event_windows(event_id, session_id, kind, search, shard)
        SELECT (w ->> 0)::BIGINT, w ->> 1, w ->> 2,
               setweight(to_tsvector('english', w ->> 3), 'A')
               || setweight(to_tsvector('english', w ->> 4), 'B'), e.shard
          FROM jsonb_array_elements(p -> 'windows') AS w
          JOIN events AS e ON e.id = (w ->> 0)::BIGINT
         WHERE w ->> 1 IS NULL
            ON CONFLICT (event_id, shard) DO UPDATE SET search = excluded.search;
    END IF;
    INSERT INTO event_windows(event_id, session_id, kind, search, shard)
    SELECT (w ->> 0)::BIGINT, w ->> 1, w ->> 2,
           setweight(to_tsvector('english', w ->> 3), 'A')
           || setweight(to_tsvector('english', w ->> 4), 'B'), pmm_shard(o.user_id)
      FROM jsonb_array_elements(p -> 'windows') AS w
      JOIN session_owners AS o ON o.session_id = w ->> 1
        ON CONFLICT (event_id, shard) DO UPDATE SET search = excluded.search;
END $$;
