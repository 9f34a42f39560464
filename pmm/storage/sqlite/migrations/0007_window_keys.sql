-- Window and date keys (recall issue 8): each turn (prompt/response) is also indexed by
-- its own text plus its neighbouring turns of the same session (never across a session
-- or a `clear` marker) and by its conversation date in words ("2024 January 14 Sunday").
-- The table holds its own text (windows are derived, not stored in events). Rows are
-- written by EventStore.sync_search_index: new turns, the turns whose windows they extend,
-- and the neighbours of turns whose text changed (redaction, compaction) - found through
-- window_dirty, filled by a trigger. indexed_upto = 0 here, so an existing file gets
-- window keys for all its old turns on its first search.
CREATE VIRTUAL TABLE events_window_fts USING fts5(
    body, dates, tags,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE window_state (
    singleton    INTEGER PRIMARY KEY CHECK (singleton = 1),
    indexed_upto INTEGER NOT NULL,
    radius       INTEGER NOT NULL
);
INSERT INTO window_state(singleton, indexed_upto, radius) VALUES (1, 0, -1);
CREATE TABLE window_dirty (event_id INTEGER PRIMARY KEY);
CREATE TRIGGER events_window_dirty AFTER UPDATE OF content ON events
WHEN old.id <= (SELECT indexed_upto FROM window_state)
     AND old.content IS NOT new.content BEGIN
    INSERT OR IGNORE INTO window_dirty(event_id) VALUES (old.id);
END;
