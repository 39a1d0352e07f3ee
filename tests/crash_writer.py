"""A writer process for crash tests: supersedes one chain in a loop, printing each committed id."""
import sys
from pathlib import Path

from halomem.config import Settings
from halomem.kernel import Kernel

home, head = Path(sys.argv[1]), sys.argv[2]
kernel = Kernel.boot(Settings(home=home))  # the store's own embedder
i = 0
while True:
    i += 1
    head = kernel.supersede("crash", head, f"chain version {i}").id
    print(head, flush=True)  # reported only after the commit
