"""The checks: make check's steps, mutate, sparse, checkpatch."""
