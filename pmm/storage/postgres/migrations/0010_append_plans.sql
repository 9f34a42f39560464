-- The append's functions without planning every statement on every call (issue 21; the
-- breakdown is in docs/benchmarks/chains.md). Migration 0009 made each plpgsql statement
-- plan for its values (plan_cache_mode = force_custom_plan) so that a read of events would
-- prune to one partition instead of locking all of them; but only the reads of events
-- need that, and the other dozen statements (locks, session_owners, chains, the INSERTs,
-- whose partitions PostgreSQL locks when it routes a row, not when it plans) spent about
-- as much server time planning as running. Now the functions keep PostgreSQL's default
-- (a cached generic plan after five calls), and a session's newest turns are read from its
-- user's partition by name (`events_sNN`, a name that stays the live partition's through
-- an erasure's swap, pmm/storage/postgres/swap.py: a cached plan is checked against the
-- catalog before each use and replanned, the name looked up again, after a swap).

-- The newest `tail` rows of `kinds` of session `sid` in partition `sh` (the first `chars`
-- characters of each), as [[sid, id, kind, ts, body], ...] or null: one static statement
-- per partition, each planned once per connection and cached (generated below). The rows
-- are read by walking the (session_id, id) index backwards: with bitmap scans allowed, a
-- partition whose statistics were older than its rows (a new one, or a session that grew
-- fast) got a bitmap of all the session's rows, sorted, a cost that grew with the session.
-- It locks the parent first, as a read through the parent would: an erasure's swap locks
-- the parent and then the partition, so a reader that held the partition alone and then
-- waited for the parent (the append's INSERT) would block the swap until lock_timeout, and
-- the swap could not begin while one user kept appending.
DO $$
DECLARE
    body TEXT := '';
BEGIN
    FOR i IN 0..32 LOOP
        body := body || format(
            ' WHEN %s THEN RETURN (SELECT jsonb_agg(jsonb_build_array(sid, r.id, r.kind, r.ts, r.body))'
            ' FROM (SELECT e.id, e.kind, e.ts, left(coalesce(e.content, e.summary), chars) AS body'
            ' FROM %I AS e WHERE e.session_id = sid AND e.kind = ANY(kinds)'
            ' ORDER BY e.session_id DESC, e.id DESC LIMIT tail) AS r);',
            i, 'events_s' || lpad(i::TEXT, 2, '0'));
    END LOOP;
    EXECUTE format(
        'CREATE FUNCTION pmm_session_tail(sh SMALLINT, sid TEXT, kinds TEXT[], tail INTEGER,'
        ' chars INTEGER) RETURNS JSONB LANGUAGE plpgsql'
        ' SET plan_cache_mode = force_generic_plan SET enable_bitmapscan = off'
        ' AS $f$ BEGIN LOCK TABLE ONLY events IN ACCESS SHARE MODE; CASE sh %s END CASE; END $f$',
        body);
END
$$;

CREATE OR REPLACE FUNCTION pmm_append_open(p JSONB) RETURNS JSONB
LANGUAGE plpgsql SET plan_cache_mode = auto AS $$
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
    IF jsonb_array_length(p -> 'sessions') = 1 THEN  -- the usual case, without a query
        PERFORM pg_advisory_xact_lock(1347243266, hashtext(p -> 'sessions' ->> 0));
    ELSE
        PERFORM pg_advisory_xact_lock(1347243266, h)  -- SESSION_LOCK, 0x504D4D02
           FROM (SELECT DISTINCT hashtext(k) AS h
                   FROM jsonb_array_elements_text(p -> 'sessions') AS k ORDER BY 1) AS sorted;
    END IF;
    FOR sid IN SELECT v #>> '{}'
                 FROM jsonb_array_elements(jsonb_build_array() || (p -> 'windowed')) AS v LOOP
        IF sid IS NULL THEN
            -- Rows without a session: any user's (rare; reads every partition).
            EXECUTE 'SELECT jsonb_agg(jsonb_build_array(NULL, r.id, r.kind, r.ts, r.body))'
                    ' FROM (SELECT e.id, e.kind, e.ts,'
                    '              left(coalesce(e.content, e.summary), $3) AS body'
                    '         FROM events AS e WHERE e.session_id IS NULL AND e.kind = ANY($1)'
                    '        ORDER BY e.id DESC LIMIT $2) AS r'
               INTO got USING kinds, tail, chars;
        ELSE
            SELECT pmm_shard(o.user_id) INTO sh FROM session_owners AS o WHERE o.session_id = sid;
            CONTINUE WHEN NOT FOUND;  -- a new session: no turns before
            got := pmm_session_tail(sh, sid, kinds, tail, chars);
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

-- As in 0009, with "owners": [[session, user], ...] of the sessions this append begins
-- (the caller knows them: the others are in call 1's "owners"), so that an append to a
-- known session runs no statement for them. The one statement that reads events (window
-- rows without a session take their event's partition) is dynamic SQL; the INSERTs into
-- the partitioned tables keep cached plans (a row's partition is locked when the row is
-- routed to it, not when the statement is planned).
CREATE OR REPLACE FUNCTION pmm_append_rows(p JSONB) RETURNS VOID
LANGUAGE plpgsql SET plan_cache_mode = auto AS $$
BEGIN
    INSERT INTO events(id, ts, kind, session_id, role, content, content_sha256, meta,
                       prev_hash, hash, hash_version, user_id, user_digest, session_digest,
                       shard)
    SELECT (r ->> 0)::BIGINT, r ->> 1, r ->> 2, r ->> 3, r ->> 4, r ->> 5, r ->> 6, r ->> 7,
           r ->> 8, r ->> 9, (r ->> 10)::SMALLINT, r ->> 11, r ->> 12, r ->> 13,
           pmm_shard(r ->> 11)
      FROM jsonb_array_elements(p -> 'rows') WITH ORDINALITY AS t(r, n) ORDER BY n;
    IF NOT p ? 'owners' THEN  -- a client from before 0010 (a rolling upgrade): as in 0009
        INSERT INTO session_owners(session_id, user_id)
        SELECT DISTINCT ON (r ->> 3) r ->> 3, r ->> 11
          FROM jsonb_array_elements(p -> 'rows') AS r
         WHERE r ->> 3 IS NOT NULL
            ON CONFLICT (session_id) DO NOTHING;
    ELSIF jsonb_array_length(p -> 'owners') > 0 THEN
        INSERT INTO session_owners(session_id, user_id)
        SELECT o ->> 0, o ->> 1 FROM jsonb_array_elements(p -> 'owners') AS o
            ON CONFLICT (session_id) DO NOTHING;
    END IF;
    UPDATE chains SET head_id = (v ->> 1)::BIGINT, head_hash = v ->> 2
      FROM jsonb_array_elements(p -> 'heads') AS v
     WHERE chains.chain = v ->> 0;
    IF jsonb_path_exists(p, 'strict $.windows[*] ? (@[1] == null)') THEN
        EXECUTE 'INSERT INTO event_windows(event_id, session_id, kind, search, shard)'
                ' SELECT (w ->> 0)::BIGINT, w ->> 1, w ->> 2,'
                '        setweight(to_tsvector(''english'', w ->> 3), ''A'')'
                '        || setweight(to_tsvector(''english'', w ->> 4), ''B''), e.shard'
                '   FROM jsonb_array_elements($1) AS w'
                '   JOIN events AS e ON e.id = (w ->> 0)::BIGINT'
                '  WHERE w ->> 1 IS NULL'
                '     ON CONFLICT (event_id, shard) DO UPDATE SET search = excluded.search'
           USING p -> 'windows';
    END IF;
    INSERT INTO event_windows(event_id, session_id, kind, search, shard)
    SELECT (w ->> 0)::BIGINT, w ->> 1, w ->> 2,
           setweight(to_tsvector('english', w ->> 3), 'A')
           || setweight(to_tsvector('english', w ->> 4), 'B'), pmm_shard(o.user_id)
      FROM jsonb_array_elements(p -> 'windows') AS w
      JOIN session_owners AS o ON o.session_id = w ->> 1
        ON CONFLICT (event_id, shard) DO UPDATE SET search = excluded.search;
END $$;

-- As in 0008, with one generic plan per statement (they read and write chains and the id
-- sequence only; a custom plan knows how many ids are asked for, which kept PostgreSQL's
-- default planning every call), one chain's lock without a query, and the INSERT of new
-- chains only when a chain is missing.
CREATE OR REPLACE FUNCTION pmm_open_chains(p JSONB) RETURNS JSONB
LANGUAGE plpgsql SET plan_cache_mode = force_generic_plan AS $$
DECLARE
    keys TEXT[] := ARRAY(SELECT jsonb_array_elements_text(p -> 'keys'));
    found JSONB;
BEGIN
    IF cardinality(keys) = 1 THEN
        PERFORM pg_advisory_xact_lock(1347243267, hashtext(keys[1]));  -- CHAIN_LOCK
    ELSE
        PERFORM pg_advisory_xact_lock(1347243267, h)  -- CHAIN_LOCK, 0x504D4D03
           FROM (SELECT DISTINCT hashtext(k) AS h FROM unnest(keys) AS k ORDER BY 1) AS sorted;
    END IF;
    SELECT jsonb_agg(jsonb_build_array(c.chain, encode(c.secret, 'hex'), c.head_id, c.head_hash))
      INTO found FROM chains AS c WHERE c.chain = ANY(keys);
    IF coalesce(jsonb_array_length(found), 0) < cardinality(keys) THEN
        INSERT INTO chains(chain, secret)
        SELECT k, decode(s, 'hex')
          FROM unnest(keys, ARRAY(SELECT jsonb_array_elements_text(p -> 'secrets'))) AS t(k, s)
            ON CONFLICT (chain) DO NOTHING;
        SELECT jsonb_agg(jsonb_build_array(c.chain, encode(c.secret, 'hex'), c.head_id,
                                           c.head_hash))
          INTO found FROM chains AS c WHERE c.chain = ANY(keys);
    END IF;
    RETURN jsonb_build_object(
        'chains', found,
        'ids', (SELECT jsonb_agg(nextval('events_id_seq'))
                  FROM generate_series(1, (p ->> 'count')::INTEGER)));
END $$;
