"""Recall: the rankers (keys), their fusion, and the in-memory index of one session."""
