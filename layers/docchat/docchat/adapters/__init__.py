"""The code that talks to outside systems, most of it implementing a Protocol of docchat/ports.py
(the Protocols are there, not here). What the package holds:

- a module per outside system: S3 (s3_objects, s3_uploads), DynamoDB (dynamodb_registry, the
  cloud's catalog, and dynamodb_conversations), Step Functions (step_functions), Bedrock
  (bedrock_embedder, bedrock_reranker, bedrock_models), the chat models (anthropic_model,
  openai_model), and local mode's files and engines (local_embedder, local_files,
  sqlite_conversations);
- a package per index: sqlite_index (`SqliteIndex`, local mode's catalog and chunk store) and
  opensearch_index (`OpenSearchIndex`, the cloud's chunk store);
- helpers the adapters share: embedding (for the embedders) and sqlite_errors (for the SQLite
  index and the saved conversations).

Adapters may import the domain; nothing in the domain imports an adapter
(tests/unit/test_layers.py).
"""
