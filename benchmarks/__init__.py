"""asv benchmark suite of qdarray (see asv.conf.json at the repository root)."""
