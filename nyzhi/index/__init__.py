"""The workspace's semantic index: local embeddings, chunks in SQLite (with FTS5) and an
hnswlib graph, hybrid retrieval, and the ``/services/index`` actor.

Modules: ``embed`` (local MiniLM or a remote /embeddings API), ``chunking``, ``store``,
``indexer`` (incremental, resumable builds), ``search`` (vector + BM25 by reciprocal rank),
``service`` (the actor), ``tool`` (``semantic_search``). Nothing heavy is imported here, so
importing the package costs nothing; numpy, onnxruntime, tokenizers and hnswlib load on use.
"""
