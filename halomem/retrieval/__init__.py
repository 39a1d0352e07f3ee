"""Pure scoring helpers a driver may import: BM25 over a candidate pool, normalization, merging."""
from .bm25 import bm25_scores
from .hybrid import hybrid_rank
from .merge import hybrid_merge, reciprocal_rank_fusion
from .normalize import min_max
from .pool import gather

__all__ = ["bm25_scores", "hybrid_rank", "min_max", "gather", "hybrid_merge", "reciprocal_rank_fusion"]
