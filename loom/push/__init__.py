"""Stage 8: the only place with side effects — files written, processes started, fabrics changed."""
