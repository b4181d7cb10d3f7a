"""Search: what the chat reads. hybrid.py fuses k-NN and BM25 candidates, rerank.py reorders
them by their best sentence (sentences.py splits them, terms.py gives the words compared),
library.py is the catalog the agent searches and reads through. The same code runs locally and
in the cloud; only the index and the embedder behind the ports differ.
"""
