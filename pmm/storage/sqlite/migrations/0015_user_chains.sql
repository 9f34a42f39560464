-- read-compatible: a file without it holds no version-3 rows (verify reads it as before).
-- One hash chain per user (issue 21, pmm/events/chains.py): rows written from now on are
-- hash_version 3, linked to the previous row of the same user (events without a user form
-- one chain of their own). Their hash covers keyed digests of the user and session ids
-- (HMAC-SHA256 under the chain's secret), stored here so that a row whose ids a future
-- erasure removes still verifies: user_digest NULL = the chain without a user.
ALTER TABLE events ADD COLUMN user_digest BLOB;
ALTER TABLE events ADD COLUMN session_digest BLOB;
-- Each chain's secret (random, 32 bytes) and head. chain = the user id, '' for the events
-- without a user (a user id is never empty). The head is what the next append links to:
-- the user index cannot find it, because assigning a session to a user later moves rows
-- that were hashed into the chain without a user.
CREATE TABLE chains (
    chain     TEXT    PRIMARY KEY,
    secret    BLOB    NOT NULL,
    head_id   INTEGER NOT NULL DEFAULT 0,
    head_hash BLOB
) WITHOUT ROWID;
