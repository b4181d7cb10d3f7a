"""Evaluation, run locally only: retrieval quality on BEIR datasets and answer hit rates on
SQuAD-style QA, over a temporary SQLite index searched as the chat searches; `docchat eval`
(docchat.cli.evaluate) runs it.
"""
