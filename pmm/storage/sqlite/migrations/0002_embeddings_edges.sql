-- Vectors per (event, model): a model change never mixes two models' vectors in one search.
CREATE TABLE embeddings (
    event_id INTEGER NOT NULL REFERENCES events(id),
    model    TEXT    NOT NULL,
    dim      INTEGER NOT NULL,
    vector   BLOB    NOT NULL,
    PRIMARY KEY (event_id, model)
) WITHOUT ROWID;
CREATE INDEX embeddings_by_model ON embeddings(model, event_id);

-- Links between events, e.g. (session summary) -[SUMMARIZES]-> (turn).
CREATE TABLE edges (
    src  INTEGER NOT NULL REFERENCES events(id),
    dst  INTEGER NOT NULL REFERENCES events(id),
    kind TEXT    NOT NULL,
    PRIMARY KEY (src, dst, kind)
) WITHOUT ROWID;
CREATE INDEX edges_by_dst ON edges(dst, kind);
