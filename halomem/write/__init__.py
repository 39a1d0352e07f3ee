"""The write path: the only code that changes memories, concepts, entities and policies."""
from ..results import IngestReport
from .ingest import parse_ingest_bytes, parse_ingest_file
from .writer import Writer

__all__ = ["Writer", "IngestReport", "parse_ingest_bytes", "parse_ingest_file"]
