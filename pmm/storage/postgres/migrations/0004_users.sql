-- Users (issue 20, as SQLite's migrations/0013): each event stores the user (tenant) its
-- session belongs to; NULL for a log without users and every row written before this.
-- Rows of a user are hashed with it (hash_version 2); a session written without a user
-- can be assigned one once, recorded as a chained `user_assigned` event.
ALTER TABLE events ADD COLUMN user_id TEXT;
-- One user's events in id order: user-scoped reads, keyword search (the user's rows are
-- read first, as for a session), vector candidates and erasure.
CREATE INDEX events_by_user ON events (user_id, id) WHERE user_id IS NOT NULL;
