-- read-compatible: a file without it holds no compressed text.
-- Lossless compression of old raw text (PMM_COMPRESS_AFTER, `pmm compress`): a compressed
-- turn keeps its text in `content` as a BLOB (see pmm/storage/text_codec.py: a 5-byte header
-- naming the codec and the dictionary, then zstd or zlib data), so `content IS NOT NULL`
-- still means "has text". Every read decodes it (pmm_text, registered by the store: the
-- full-text view below calls it, so only PMM reads that view).
-- The dictionaries, trained on the file's own text, live here: the file is self-contained.
-- trained_from/trained_upto: the ids of its first and last sample (erasing an event in
-- that range retrains it, see pmm/storage/sqlite/compression.py). AUTOINCREMENT: an id is
-- never given to a second dictionary, so a process that cached one never decodes with it.
CREATE TABLE text_dictionaries (
    id           INTEGER PRIMARY KEY AUTOINCREMENT,
    codec        TEXT    NOT NULL,
    format       INTEGER NOT NULL,
    samples      INTEGER NOT NULL,
    trained_from INTEGER NOT NULL,
    trained_upto INTEGER NOT NULL,
    created_at   TEXT    NOT NULL,
    data         BLOB    NOT NULL
);
-- How far compression has looked at the log (ids up to here were considered).
CREATE TABLE text_state (
    singleton    INTEGER PRIMARY KEY CHECK (singleton = 1),
    scanned_upto INTEGER NOT NULL
);
INSERT INTO text_state(singleton, scanned_upto) VALUES (1, 0);
DROP VIEW events_fts_source;
CREATE VIEW events_fts_source AS
SELECT id, summary, keywords, pmm_text(content) AS content,
       's' || hex(coalesce(session_id, '')) || '0' AS tags
FROM events;
-- The triggers never decode (so that any SQLite tool can still edit plain rows): they skip
-- rows whose text is compressed. PMM keeps those rows' index entries itself: compressing
-- changes no word; set_digests re-indexes a compressed row through the view; erasure and
-- compaction rebuild the index.
DROP TRIGGER events_fts_delete;
CREATE TRIGGER events_fts_delete AFTER DELETE ON events
WHEN old.id <= (SELECT indexed_upto FROM fts_state) AND typeof(old.content) != 'blob' BEGIN
    INSERT INTO events_fts(events_fts, rowid, summary, keywords, content, tags)
    VALUES ('delete', old.id, old.summary, old.keywords, old.content,
            's' || hex(coalesce(old.session_id, '')) || '0');
END;
DROP TRIGGER events_fts_update;
CREATE TRIGGER events_fts_update AFTER UPDATE OF summary, keywords, content ON events
WHEN old.id <= (SELECT indexed_upto FROM fts_state)
     AND typeof(old.content) != 'blob' AND typeof(new.content) != 'blob' BEGIN
    INSERT INTO events_fts(events_fts, rowid, summary, keywords, content, tags)
    VALUES ('delete', old.id, old.summary, old.keywords, old.content,
            's' || hex(coalesce(old.session_id, '')) || '0');
    INSERT INTO events_fts(rowid, summary, keywords, content, tags)
    VALUES (new.id, new.summary, new.keywords, new.content,
            's' || hex(coalesce(new.session_id, '')) || '0');
END;
-- Compressing a text (TEXT -> BLOB, same words) changes no window.
DROP TRIGGER events_window_dirty;
CREATE TRIGGER events_window_dirty AFTER UPDATE OF content ON events
WHEN old.id <= (SELECT indexed_upto FROM window_state)
     AND old.content IS NOT new.content
     AND NOT (typeof(old.content) = 'text' AND typeof(new.content) = 'blob') BEGIN
    INSERT OR IGNORE INTO window_dirty(event_id) VALUES (old.id);
END;
