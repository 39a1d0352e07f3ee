"""A third-party cartridge installed as a distribution with a `halomem.drivers` entry point."""
import textwrap
from pathlib import Path


def install_third_party(root: Path, ranking: str = "hybrid_rank(q)") -> Path:
    """Write `thirdparty_cartridge` (module + dist-info) under ``root``; put ``root`` on the path to use it.
    ``ranking``: the expression its plan() returns (a worse one for tests that need a worse arm)."""
    dist = root / "thirdparty_cartridge-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: thirdparty-cartridge\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[halomem.drivers]\nthirdparty = thirdparty_cartridge:Ranker\n")
    (root / "thirdparty_cartridge.py").write_text(textwrap.dedent('''
        from halomem.retrieval import hybrid_rank
        from halomem.types import Capabilities

        class Ranker:
            name = "thirdparty"

            def capabilities(self):
                return Capabilities()

            def plan(self, q):
                return RANKING
    ''').replace("RANKING", ranking))
    return root
