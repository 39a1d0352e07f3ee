"""Benchmarks: retrieval quality, latency, ingest, CLI start-up."""
