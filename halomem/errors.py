"""The error classes, defined once in the client distribution (halomem_client.errors): the kernel
raises the very classes a remote caller catches."""
from halomem_client.errors import *  # noqa: F401,F403
