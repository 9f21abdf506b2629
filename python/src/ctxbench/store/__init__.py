"""The store of runs: the database, its schema and dialects, references, run choice."""
