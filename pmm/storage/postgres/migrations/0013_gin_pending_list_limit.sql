-- GIN pending lists of 256 kB instead of 4 MB (issue 21; measured in
-- docs/benchmarks/erase-stall.md, 2026-11-26). A GIN index with fastupdate (PostgreSQL's
-- default) gathers new entries in a pending list and merges them into its tree when the
-- list outgrows gin_pending_list_limit (4 MB): the insert that overflows it does the merge,
-- on its own time. Right after a 1,000,000-event load, with no erasure running, appends
-- waited 237-260 ms for it, and during erasures 314-482 ms, their backends on a CPU with no
-- lock waited for. A list of 256 kB keeps the batching (a turn's entries are still written
-- to the list, not into the tree) and bounds a merge to a sixteenth: the longest append of
-- the same probe took 36 ms. A partitioned index takes no storage parameters, so each
-- partition's index is set here, and an erasure's copy of a partition sets its own
-- (pmm/storage/postgres/swap.py). The lists gathered so far are merged now, not by the
-- next append that finds one over the new limit.
DO $$
DECLARE
    idx REGCLASS;
BEGIN
    FOR idx IN
        SELECT i.indexrelid::regclass FROM pg_index AS i
          JOIN pg_class AS c ON c.oid = i.indexrelid
          JOIN pg_am AS a ON a.oid = c.relam
          JOIN pg_class AS t ON t.oid = i.indrelid
          JOIN pg_namespace AS n ON n.oid = t.relnamespace
         WHERE a.amname = 'gin' AND c.relkind = 'i' AND n.nspname = current_schema()
    LOOP
        EXECUTE format('ALTER INDEX %s SET (gin_pending_list_limit = 256)', idx);
        PERFORM gin_clean_pending_list(idx);
    END LOOP;
END $$;
