-- Full-text index over summary, keywords and content.
-- New rows are indexed in batches (EventStore.sync_search_index, run before every search
-- and by the background worker), not by an insert trigger: an FTS5 insert per append
-- would triple the cost of an append. Rows already indexed are kept in step by triggers.
CREATE VIRTUAL TABLE events_fts USING fts5(
    summary, keywords, content,
    content = 'events', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE fts_state (
    singleton    INTEGER PRIMARY KEY CHECK (singleton = 1),
    indexed_upto INTEGER NOT NULL
);
INSERT INTO fts_state(singleton, indexed_upto) VALUES (1, 0);
CREATE TRIGGER events_fts_delete AFTER DELETE ON events
WHEN old.id <= (SELECT indexed_upto FROM fts_state) BEGIN
    INSERT INTO events_fts(events_fts, rowid, summary, keywords, content)
    VALUES ('delete', old.id, old.summary, old.keywords, old.content);
END;
CREATE TRIGGER events_fts_update AFTER UPDATE OF summary, keywords, content ON events
WHEN old.id <= (SELECT indexed_upto FROM fts_state) BEGIN
    INSERT INTO events_fts(events_fts, rowid, summary, keywords, content)
    VALUES ('delete', old.id, old.summary, old.keywords, old.content);
    INSERT INTO events_fts(rowid, summary, keywords, content)
    VALUES (new.id, new.summary, new.keywords, new.content);
END;
