"""The cold tier (L3 concepts): path rules. Concept writes go through halomem.write, reads through
halomem.index, so the write path and the ACL each stay in one place."""
from .paths import CONCEPT_PATH, check_concept_path

__all__ = ["CONCEPT_PATH", "check_concept_path"]
