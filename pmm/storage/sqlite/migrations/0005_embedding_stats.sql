-- Per-model vector counts, kept by triggers, so a vector cache can tell in constant time
-- whether vectors were added out of order, deleted (count, id_sum) or replaced in place
-- (replaced) since it last looked: counting at read time scans every vector of the model.
CREATE TABLE embedding_stats (
    model    TEXT    PRIMARY KEY,
    vectors  INTEGER NOT NULL,
    id_sum   INTEGER NOT NULL,
    replaced INTEGER NOT NULL DEFAULT 0
);
INSERT INTO embedding_stats(model, vectors, id_sum)
SELECT model, count(*), sum(event_id) FROM embeddings GROUP BY model;
CREATE TRIGGER embeddings_stats_insert AFTER INSERT ON embeddings BEGIN
    INSERT INTO embedding_stats(model, vectors, id_sum) VALUES (new.model, 1, new.event_id)
    ON CONFLICT(model) DO UPDATE SET vectors = vectors + 1, id_sum = id_sum + new.event_id;
END;
CREATE TRIGGER embeddings_stats_delete AFTER DELETE ON embeddings BEGIN
    UPDATE embedding_stats SET vectors = vectors - 1, id_sum = id_sum - old.event_id
    WHERE model = old.model;
END;
CREATE TRIGGER embeddings_stats_update AFTER UPDATE ON embeddings BEGIN
    UPDATE embedding_stats SET replaced = replaced + 1 WHERE model = new.model;
END;
