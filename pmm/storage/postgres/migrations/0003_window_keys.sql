-- Window and date keys (as SQLite's migrations/0007): each turn (prompt/response) is also
-- indexed by its own text plus its neighbouring turns of the same session (never across a
-- session or a `clear` marker), weight A, and by its conversation date in words ("2024
-- January 14 Sunday"), weight B, so that a query can weigh the date (ts_rank_cd weights).
-- Rows are written in the same transaction as the appends, redactions, erasures and
-- compactions that change them (pmm/storage/postgres/windows.py). window_state.radius = -1
-- here, so an existing database gets window keys for all its old turns when it is opened.
CREATE TABLE event_windows (
    event_id   BIGINT   PRIMARY KEY REFERENCES events (id) ON DELETE CASCADE,
    session_id TEXT,
    kind       TEXT     NOT NULL,
    search     TSVECTOR NOT NULL
);
CREATE INDEX event_windows_by_session ON event_windows (session_id, event_id);
CREATE INDEX event_windows_search ON event_windows USING GIN (search);

CREATE TABLE window_state (
    only_row BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (only_row),
    radius   INTEGER NOT NULL
);
INSERT INTO window_state VALUES (TRUE, -1);
