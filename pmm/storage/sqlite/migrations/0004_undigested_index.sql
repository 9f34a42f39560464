-- Finds events still waiting for a digest without scanning the log.
CREATE INDEX events_undigested ON events(id) WHERE digest_method IS NULL;
