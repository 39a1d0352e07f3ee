"""The result types and their JSON shapes, defined once in the client distribution
(halomem_client.results): what the kernel returns is what a remote caller reads back."""
from halomem_client.results import *  # noqa: F401,F403
