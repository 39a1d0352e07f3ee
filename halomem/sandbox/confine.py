"""What the operating system enforces on a cartridge worker, applied before any cartridge code runs.

- rlimits: address space, CPU seconds, open files, no file writes (RLIMIT_FSIZE 0), no core dumps;
- Landlock (landlockpy; this machine's ABI 7): read-only access to the interpreter, its
  site-packages, halomem's package and the cartridge's own files, nothing else (not the data
  dir, not /proc, not /tmp, no execution, no writes anywhere); TCP bind/connect denied except
  connect to the ports a cartridge declared; abstract unix sockets and signals to processes
  outside the sandbox denied (scopes);
- seccomp (pyseccomp over libseccomp): socket() denied (or limited to AF_INET/AF_INET6 for a
  cartridge that declared network), no socketpair, fork, exec, ptrace, process_vm_*,
  kill/tkill, namespace or mount changes, raising its own rlimits, bpf, perf, io_uring, keyrings,
  userfaultfd; only threads may be cloned.

Fails closed: if Landlock or seccomp cannot be applied, ``confine`` raises and the worker never
loads the cartridge.
"""
from __future__ import annotations

import errno
import os
import resource
import site
import sys
from pathlib import Path
from typing import Sequence

CLONE_THREAD = 0x00010000
DENIED_SYSCALLS = (
    "socketpair", "fork", "vfork", "execve", "execveat", "ptrace", "process_vm_readv", "process_vm_writev",
    "kill", "tkill", "setrlimit", "prlimit64", "mount", "umount2", "unshare", "setns", "chroot", "pivot_root",
    "bpf", "perf_event_open", "keyctl", "add_key", "request_key", "userfaultfd", "io_uring_setup",
    "io_uring_enter", "io_uring_register", "personality", "kexec_load", "init_module", "finit_module",
    "delete_module", "reboot", "swapon", "swapoff", "open_by_handle_at", "name_to_handle_at", "setuid", "setgid",
    "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "pidfd_open", "pidfd_getfd", "memfd_create",
)
INET_DOMAINS = (2, 10)  # AF_INET, AF_INET6
SYSTEM_READ = ("/usr/lib", "/usr/lib64", "/lib", "/lib64", "/etc/ld.so.cache", "/sys/devices/system/cpu")


class ConfinementError(Exception):
    """The sandbox could not be applied; the cartridge is not loaded."""


def interpreter_paths() -> list[str]:
    """What Python itself needs to read: prefixes, site-packages, halomem's own package."""
    import halomem

    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
             str(Path(halomem.__file__).resolve().parent), *site.getsitepackages()}
    paths.update(p for p in SYSTEM_READ)
    return sorted(p for p in paths if p and os.path.exists(p))


def set_limits(memory_bytes: int, cpu_seconds: int) -> None:
    for limit, value in ((resource.RLIMIT_AS, memory_bytes), (resource.RLIMIT_CPU, cpu_seconds),
                         (resource.RLIMIT_NOFILE, 64), (resource.RLIMIT_FSIZE, 0), (resource.RLIMIT_CORE, 0)):
        resource.setrlimit(limit, (value, value))


def apply_landlock(read_paths: Sequence[str], net_ports: Sequence[int], list_paths: Sequence[str] = ()) -> int:
    """Returns the Landlock ABI applied. ``list_paths`` may be listed (names only), not read."""
    import landlockpy as ll

    abi = ll.abi_version()
    if abi < 1:
        raise ConfinementError("Landlock is not available on this kernel")
    scopes = ll.Scope.ABSTRACT_UNIX_SOCKET | ll.Scope.SIGNAL
    with ll.Ruleset(scoped=scopes) as ruleset:
        read = ll.AccessFS.READ_FILE | ll.AccessFS.READ_DIR
        for path in read_paths:
            if os.path.exists(path):
                ruleset.allow_path(path, read if os.path.isdir(path) else ll.AccessFS.READ_FILE)
        for path in list_paths:
            if os.path.isdir(path):
                ruleset.allow_path(path, ll.AccessFS.READ_DIR)
        for port in net_ports:
            ruleset.allow_port(int(port), ll.AccessNet.CONNECT_TCP)
        ruleset.restrict()
    return abi


def apply_seccomp(network: bool) -> None:
    import pyseccomp as sc

    deny = sc.ERRNO(errno.EPERM)
    rules = sc.SyscallFilter(defaction=sc.ALLOW)
    for name in DENIED_SYSCALLS:
        try:
            rules.add_rule(deny, name)
        except (OSError, RuntimeError, ValueError):  # a syscall this architecture does not have
            pass
    # threads only: a clone without CLONE_THREAD is a new process
    rules.add_rule(deny, "clone", sc.Arg(0, sc.MASKED_EQ, CLONE_THREAD, 0))
    rules.add_rule(sc.ERRNO(errno.ENOSYS), "clone3")  # libc falls back to clone(), filtered above
    for domain in range(0, 64):
        if not (network and domain in INET_DOMAINS):
            rules.add_rule(deny, "socket", sc.Arg(0, sc.EQ, domain))
    rules.load()


def confine(read_paths: Sequence[str], net_ports: Sequence[int], memory_bytes: int, cpu_seconds: int, *,
            list_paths: Sequence[str] = ()) -> str:
    """Apply every layer, in an order where each still can be applied; a one-line summary."""
    try:
        # the bindings find their C libraries now (ctypes may run ldconfig and use temp files),
        # before the limits and Landlock take both away; seccomp comes last, as it forbids setrlimit
        import landlockpy  # noqa: F401
        import pyseccomp  # noqa: F401

        paths = [*interpreter_paths(), *read_paths]
        set_limits(memory_bytes, cpu_seconds)
        abi = apply_landlock(paths, net_ports, list_paths)
        apply_seccomp(bool(net_ports))
    except ConfinementError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure means no sandbox: fail closed
        raise ConfinementError(f"{type(exc).__name__}: {exc}") from None
    return (f"landlock abi {abi} (read-only interpreter and cartridge files; tcp connect only to "
            f"{list(net_ports) or 'nothing'}), seccomp, rlimits (as {memory_bytes >> 20} MiB, cpu {cpu_seconds} s)")
