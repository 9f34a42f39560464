-- read-compatible: hex text digests are read as they are.
-- Lean rows (issue 11): content_sha256, prev_hash and hash hold the 32 bytes of each
-- SHA-256 as a BLOB instead of 64 hex characters (96 B less per row). Only values that
-- are exactly 64 lower-case hex digits are converted (pmm_unhex, registered by the
-- store); anything else (a damaged or foreign legacy value) stays as it was, so that an
-- export reads back exactly what was stored. The chain rule is unchanged: it is computed
-- over the hex text, and the store converts on the way in and out. Free pages left by
-- the rewrite are reused by new rows (or returned by `pmm compact`/VACUUM).
UPDATE events SET
    content_sha256 = pmm_unhex(content_sha256),
    prev_hash      = pmm_unhex(prev_hash),
    hash           = pmm_unhex(hash);
