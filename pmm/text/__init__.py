"""Words, stems and window keys: the pure text functions that search and digests share."""
