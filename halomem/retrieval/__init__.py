"""Pure scoring helpers a driver may import: BM25 over a candidate pool, normalization, merging."""
from .bm25 import bm25_scores
from .context import with_neighbour_context, with_source_context
from .hybrid import hybrid_rank
from .merge import hybrid_merge, reciprocal_rank_fusion
from .normalize import min_max
from .pool import Pool, gather, gather_pool
from .subjects import subject_scores

__all__ = ["bm25_scores", "hybrid_rank", "min_max", "gather", "hybrid_merge", "reciprocal_rank_fusion",
           "Pool", "gather_pool", "subject_scores", "with_neighbour_context", "with_source_context"]
