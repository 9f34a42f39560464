""" "Dream deep": digesting, embedding and consolidating what was remembered, and when."""
