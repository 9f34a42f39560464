"""The event log's records and rules, independent of any database: the hash chain,
the kinds that hold turns, and who said them.
"""
