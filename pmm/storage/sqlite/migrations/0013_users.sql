-- read-compatible: an archive without this column is read as a log whose rows have no user
-- (pmm/storage/sqlite/readonly.py adds the column in a temporary view, writing nothing).
-- Users (issue 20): a user (tenant) owns sessions (threads). Each event stores its user
-- (NULL: a log without users, and every row written before this migration), never parsed
-- from a session name. Rows of a user are hashed with it (hash_version 2, pmm/hashing.py);
-- a session written without a user can be assigned one once, recorded as a chained
-- `user_assigned` event (EventStore.assign_user).
ALTER TABLE events ADD COLUMN user_id TEXT;
-- One user's events in id order (user-scoped history, counts, vector candidates, erasure).
CREATE INDEX events_by_user ON events(user_id, id) WHERE user_id IS NOT NULL;
-- The turn index's tags also hold one token per user ('u' + hex(user_id) + '0'), so a
-- search within one user reads only her postings, whatever the rest of the log holds.
-- Rows without a user keep the tags they were indexed with (hex(NULL) is '', hence the
-- CASE): nothing is re-indexed here.
DROP VIEW events_fts_source;
CREATE VIEW events_fts_source AS
SELECT id, summary, keywords,
       CASE WHEN typeof(content) = 'blob' THEN pmm_text(content) ELSE content END AS content,
       's' || hex(coalesce(session_id, '')) || '0'
       || CASE WHEN user_id IS NULL THEN '' ELSE ' u' || hex(user_id) || '0' END AS tags
FROM events;
DROP TRIGGER events_fts_delete;
CREATE TRIGGER events_fts_delete AFTER DELETE ON events
WHEN old.id <= (SELECT indexed_upto FROM fts_state) AND typeof(old.content) != 'blob' BEGIN
    INSERT INTO events_fts(events_fts, rowid, summary, keywords, content, tags)
    VALUES ('delete', old.id, old.summary, old.keywords, old.content,
            's' || hex(coalesce(old.session_id, '')) || '0'
            || CASE WHEN old.user_id IS NULL THEN ''
                 ELSE ' u' || hex(old.user_id) || '0' END);
END;
DROP TRIGGER events_fts_update;
CREATE TRIGGER events_fts_update AFTER UPDATE OF summary, keywords, content ON events
WHEN old.id <= (SELECT indexed_upto FROM fts_state)
     AND typeof(old.content) != 'blob' AND typeof(new.content) != 'blob' BEGIN
    INSERT INTO events_fts(events_fts, rowid, summary, keywords, content, tags)
    VALUES ('delete', old.id, old.summary, old.keywords, old.content,
            's' || hex(coalesce(old.session_id, '')) || '0'
            || CASE WHEN old.user_id IS NULL THEN ''
                 ELSE ' u' || hex(old.user_id) || '0' END);
    INSERT INTO events_fts(rowid, summary, keywords, content, tags)
    VALUES (new.id, new.summary, new.keywords, new.content,
            's' || hex(coalesce(new.session_id, '')) || '0'
            || CASE WHEN new.user_id IS NULL THEN ''
                 ELSE ' u' || hex(new.user_id) || '0' END);
END;
