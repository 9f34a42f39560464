-- The event log on PostgreSQL: the same columns, chain rule and meaning as SQLite's
-- migrations/0001-0005 (see DESIGN.md, "The event log"). ts, meta and keywords stay text:
-- the chain hashes their exact spelling, which jsonb or timestamptz would rewrite.
CREATE TABLE events (
    id             BIGINT   PRIMARY KEY,
    ts             TEXT     NOT NULL,
    kind           TEXT     NOT NULL,
    session_id     TEXT,
    role           TEXT,
    content        TEXT,
    content_sha256 TEXT     NOT NULL,
    meta           TEXT     NOT NULL DEFAULT '{}',
    prev_hash      TEXT,
    hash           TEXT     NOT NULL UNIQUE,
    hash_version   SMALLINT NOT NULL DEFAULT 1,
    summary        TEXT,
    keywords       TEXT,
    digest_method  TEXT,
    -- Keyword search keys: the digest weighs more than the raw text (like SQLite's BM25
    -- column weights 2/3/1 over summary/keywords/content).
    search         TSVECTOR GENERATED ALWAYS AS (
        setweight(to_tsvector('english', coalesce(summary, '')), 'A')
        || setweight(to_tsvector('english', coalesce(keywords, '')), 'A')
        || setweight(to_tsvector('english', coalesce(content, '')), 'B')
    ) STORED
);
CREATE INDEX events_by_session ON events (session_id, id);
CREATE INDEX events_by_kind ON events (kind, id);
CREATE INDEX events_undigested ON events (id) WHERE digest_method IS NULL AND content IS NOT NULL;
CREATE INDEX events_search ON events USING GIN (search);

-- Vectors as float32 bytes (exact search in Python, as on SQLite); pgvector is optional.
CREATE TABLE embeddings (
    event_id BIGINT  NOT NULL REFERENCES events (id),
    model    TEXT    NOT NULL,
    dim      INTEGER NOT NULL,
    vector   BYTEA   NOT NULL,
    PRIMARY KEY (event_id, model)
);

CREATE TABLE edges (
    src  BIGINT NOT NULL REFERENCES events (id),
    dst  BIGINT NOT NULL REFERENCES events (id),
    kind TEXT   NOT NULL,
    PRIMARY KEY (src, dst, kind)
);
CREATE INDEX edges_by_dst ON edges (dst, kind);

-- Bumped by every write (one row): caches ask "did anything change?" in one cheap read.
CREATE TABLE data_version (
    only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row),
    version  BIGINT  NOT NULL
);
INSERT INTO data_version VALUES (TRUE, 0);
