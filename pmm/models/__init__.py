"""Model plumbing shared by every model-backed step: devices, quiet loading, the JSON in
an LLM's reply, and keeping API keys out of the log.
"""
