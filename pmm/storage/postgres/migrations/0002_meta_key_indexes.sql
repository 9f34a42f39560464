-- Find an event by a key in its meta without reading every row of its session (as SQLite's
-- migrations/0006): the LangChain message id (PMMMiddleware stores each message once) and
-- the LangGraph store key (PMMStore's get and put). Only events with the key are indexed.
CREATE INDEX events_by_message_id ON events (session_id, (meta::jsonb ->> 'message_id'))
    WHERE (meta::jsonb ->> 'message_id') IS NOT NULL;
CREATE INDEX events_by_store_key ON events (session_id, (meta::jsonb ->> 'key'))
    WHERE (meta::jsonb ->> 'key') IS NOT NULL;
