-- Full-text index over summary, keywords and content.
-- New rows are indexed in batches (EventStore.sync_search_index, run before every search
-- and by the background worker), not by an insert trigger: an FTS5 insert per append
-- would triple the cost of an append. Rows already indexed are kept in step by triggers.
-- The `tags` column holds one token per session ('s' + hex(session_id) + '0'), so a search
-- within one session reads only that session's postings.
CREATE VIEW events_fts_source AS
SELECT id, summary, keywords, content,
       's' || hex(coalesce(session_id, '')) || '0' AS tags
FROM events;
CREATE VIRTUAL TABLE events_fts USING fts5(
    summary, keywords, content, tags,
    content = 'events_fts_source', content_rowid = 'id',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
CREATE TABLE fts_state (
    singleton    INTEGER PRIMARY KEY CHECK (singleton = 1),
    indexed_upto INTEGER NOT NULL
);
INSERT INTO fts_state(singleton, indexed_upto) VALUES (1, 0);
CREATE TRIGGER events_fts_delete AFTER DELETE ON events
WHEN old.id <= (SELECT indexed_upto FROM fts_state) BEGIN
    INSERT INTO events_fts(events_fts, rowid, summary, keywords, content, tags)
    VALUES ('delete', old.id, old.summary, old.keywords, old.content,
            's' || hex(coalesce(old.session_id, '')) || '0');
END;
CREATE TRIGGER events_fts_update AFTER UPDATE OF summary, keywords, content ON events
WHEN old.id <= (SELECT indexed_upto FROM fts_state) BEGIN
    INSERT INTO events_fts(events_fts, rowid, summary, keywords, content, tags)
    VALUES ('delete', old.id, old.summary, old.keywords, old.content,
            's' || hex(coalesce(old.session_id, '')) || '0');
    INSERT INTO events_fts(rowid, summary, keywords, content, tags)
    VALUES (new.id, new.summary, new.keywords, new.content,
            's' || hex(coalesce(new.session_id, '')) || '0');
END;
