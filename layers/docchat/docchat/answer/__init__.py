"""Answering: agent.py answers a conversation, with a model through the tool loop (`Agent`, the
model searching and reading through tools.py's tools) or, without one, extractively
(`ExtractiveAnswerer`, quoting the sentences extractive.py chooses); citations.py turns a
model's `[n]` markers into cited sentences; events.py is the chat stream, conversations.py what
a saved conversation holds, backend.py what the chat API runs on.
"""
