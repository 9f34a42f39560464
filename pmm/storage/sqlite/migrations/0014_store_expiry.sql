-- read-compatible: a reader without it sees every store item as if none had a TTL.
-- LangGraph store TTL (issue 20): when each store_put event's item expires. Not chained:
-- a read refreshes the time (TTLConfig refresh_on_read) without writing an event. An
-- expired item is hidden at once and erased by PMMStore.sweep_ttl() (pmm.erasure.forget:
-- the same byte-level guarantee); erasing an event drops its row here.
-- ttl_minutes: the item's TTL; expires_at: Unix seconds (UTC).
CREATE TABLE store_expiry (
    event_id    INTEGER PRIMARY KEY REFERENCES events(id),
    ttl_minutes REAL    NOT NULL,
    expires_at  REAL    NOT NULL
);
CREATE INDEX store_expiry_by_time ON store_expiry(expires_at);
