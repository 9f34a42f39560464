"""What leaves the log and when, as policy: erasure, compaction and compression rules,
their checks, reports and marker events. No SQL: each storage backend drives them.
"""
