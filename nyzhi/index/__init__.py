"""Semantic index of the workspace (embeddings, auto-context). Filled by the knowledge issue."""
