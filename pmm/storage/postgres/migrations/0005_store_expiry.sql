-- LangGraph store TTL (as SQLite's migrations/0014): when each store_put event's item
-- expires, refreshed by reads without a chained event; erasing an event drops its row.
-- ttl_minutes: the item's TTL; expires_at: Unix seconds (UTC).
CREATE TABLE store_expiry (
    event_id    BIGINT           PRIMARY KEY REFERENCES events (id),
    ttl_minutes DOUBLE PRECISION NOT NULL,
    expires_at  DOUBLE PRECISION NOT NULL
);
CREATE INDEX store_expiry_by_time ON store_expiry (expires_at);
