-- Find an event by a key in its meta without reading every row of its session: the
-- LangChain message id (PMMMiddleware stores each message exactly once) and the LangGraph
-- store key (PMMStore's get and put). Only events that have the key are in these indexes.
CREATE INDEX events_by_message_id ON events(session_id, json_extract(meta, '$.message_id'))
    WHERE json_extract(meta, '$.message_id') IS NOT NULL;
CREATE INDEX events_by_store_key ON events(session_id, json_extract(meta, '$.key'))
    WHERE json_extract(meta, '$.key') IS NOT NULL;
