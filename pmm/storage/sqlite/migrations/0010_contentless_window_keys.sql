-- read-compatible: the window index with its text is searched the same way.
-- Lean rows (issue 11): the window/date key index kept a copy of every window's text
-- (each turn with its neighbours: about five times the raw text, 63% of a raw-only
-- file). It is now contentless (content=''): only the index is stored. Rows are
-- rewritten with FTS5's 'delete' command and the window text they were indexed with,
-- which the store recomputes from the log; a changed text (erasure, compaction) rebuilds
-- the index ('delete-all'). indexed_upto = 0: the next search indexes every turn again.
DROP TABLE events_window_fts;
CREATE VIRTUAL TABLE events_window_fts USING fts5(
    body, dates, tags,
    content = '',
    tokenize = 'porter unicode61 remove_diacritics 2'
);
DELETE FROM window_dirty;
UPDATE window_state SET indexed_upto = 0;
