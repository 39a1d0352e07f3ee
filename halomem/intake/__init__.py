"""Intake: what an organisation already has (documents, conversations) turned into memories.

Intake decides *what* to write (one memory per document, one per turn, their keys, sources,
provenance and structure); the write path (halomem.write) decides *how*, consolidation included.
"""
