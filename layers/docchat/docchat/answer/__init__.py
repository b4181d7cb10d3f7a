"""Answering: agent.py runs the tool loop (the model searches and reads through tools.py's
tools), citations.py quotes and cites the retrieved sentences (the extractive answer when no
model is configured), events.py is the chat stream, conversations.py what a saved conversation
holds, backend.py what the chat API runs on.
"""
