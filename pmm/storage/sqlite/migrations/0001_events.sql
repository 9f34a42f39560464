-- The append-only, hash-chained event log (see DESIGN.md, "The event log").
-- Chained columns: id, ts, kind, session_id, role, content_sha256, meta, prev_hash -> hash.
-- Derived columns (not hashed, recomputable): summary, keywords, digest_method.
CREATE TABLE events (
    id             INTEGER PRIMARY KEY,
    ts             TEXT    NOT NULL,
    kind           TEXT    NOT NULL,
    session_id     TEXT,
    role           TEXT,
    content        TEXT,
    content_sha256 TEXT    NOT NULL,
    meta           TEXT    NOT NULL DEFAULT '{}',
    prev_hash      TEXT,
    hash           TEXT    NOT NULL,
    hash_version   INTEGER NOT NULL DEFAULT 1,
    summary        TEXT,
    keywords       TEXT,
    digest_method  TEXT
);
CREATE INDEX events_by_session ON events(session_id, id);
CREATE INDEX events_by_kind ON events(kind, id);
