-- One hash chain per user (issue 21, as SQLite's migrations/0015; pmm/events/chains.py):
-- rows written from now on are hash_version 3, linked to the previous row of the same
-- user (events without a user form one chain of their own), their hash covering keyed
-- digests of the user and session ids, stored here so that a row whose ids a future
-- erasure removes still verifies (user_digest NULL: the chain without a user).
ALTER TABLE events ADD COLUMN user_digest TEXT, ADD COLUMN session_digest TEXT;
-- Each chain's secret (random, 32 bytes) and head, updated in the append's transaction
-- under the chain's advisory lock (pmm/storage/postgres/chains.py): reading the head
-- costs one primary-key lookup. chain = the user id, '' for the chain without a user.
CREATE TABLE chains (
    chain     TEXT   PRIMARY KEY,
    secret    BYTEA  NOT NULL,
    head_id   BIGINT NOT NULL DEFAULT 0,
    head_hash TEXT
);
-- Ids from a sequence: appends of different users no longer read one global head.
CREATE SEQUENCE events_id_seq;
SELECT setval('events_id_seq', (SELECT coalesce(max(id), 0) + 1 FROM events), false);
-- The change counter, sharded: one row bumped by every derived write of every user was a
-- row lock all writers queued on. A writer bumps the shard of its connection; readers
-- (caches polling data_version) sum them, a value that still changes on every write.
CREATE TABLE data_versions (
    shard   SMALLINT PRIMARY KEY,
    version BIGINT   NOT NULL
);
INSERT INTO data_versions SELECT g, 0 FROM generate_series(0, 63) AS g;
UPDATE data_versions SET version = (SELECT version FROM data_version) WHERE shard = 0;
DROP TABLE data_version;
