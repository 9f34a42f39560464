-- read-compatible: queries are plain tokens (no phrases), which an older index answers alike.
-- Lean rows (issue 11): the turn index drops token positions (detail=column: which column
-- of which row holds a term, not where), half its size. Positions only serve phrase and
-- NEAR queries; PMM's queries are single tokens (a word FTS5 splits, like "don't", is an
-- AND of its tokens: pmm/storage/sqlite/search.py). bm25() ranks exactly as before: with
-- detail=column FTS5 re-reads the matched rows' text (through events_fts_source) to count
-- each term's occurrences. The view now decodes only compressed (BLOB) texts: that re-read
-- runs on every matched row of a search, and a call into Python per row slowed it by
-- a tenth (p90: a quarter) at 100,000 events.
-- The window/date index keeps detail=full: it is contentless, and without positions and
-- text FTS5 has no term counts, so bm25() scores every row 0. Its body is indexed as the
-- window's terms with each term at most twice and without one-word stopwords instead
-- (pmm.text.window_keys.window_body): a third of the size, about the same recall@10 (within
-- 0.8 points on bench/recall.py's three datasets; once per window lost 1.4).
-- Both indexes are rebuilt lazily: indexed_upto = 0 re-indexes every event on the next
-- search (the triggers skip rows above indexed_upto).
DROP TABLE events_fts;
DROP VIEW events_fts_source;
CREATE VIEW events_fts_source AS
SELECT id, summary, keywords,
       CASE WHEN typeof(content) = 'blob' THEN pmm_text(content) ELSE content END AS content,
       's' || hex(coalesce(session_id, '')) || '0' AS tags
FROM events;
CREATE VIRTUAL TABLE events_fts USING fts5(
    summary, keywords, content, tags,
    content = 'events_fts_source', content_rowid = 'id',
    detail = column,
    tokenize = 'porter unicode61 remove_diacritics 2'
);
UPDATE fts_state SET indexed_upto = 0;
DROP TABLE events_window_fts;
CREATE VIRTUAL TABLE events_window_fts USING fts5(
    body, dates, tags,
    content = '',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
DELETE FROM window_dirty;
UPDATE window_state SET indexed_upto = 0;
