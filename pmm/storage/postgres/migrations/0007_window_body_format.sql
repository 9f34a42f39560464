-- Window keys from capped bodies (as SQLite's migrations/0011 and 0012): a window's tsvector
-- is built from pmm.text.window_keys.window_bodies (each turn's first characters, each term
-- at most twice, no stopwords), no longer from the whole text of its turns. body_format
-- records which body rules built the index; a store opened by code with other rules (and
-- every database migrated here, '' matching none) rebuilds the keys, as for a new radius.
ALTER TABLE window_state ADD COLUMN body_format TEXT NOT NULL DEFAULT '';
