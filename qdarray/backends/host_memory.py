"""How much memory the host can give now: the CPU device's figure, and the bound of devices that
share the host's memory (the adstack memory guard asks each backend, `available_bytes`).

Before a heap buffer grows, the launcher compares threads x capacity x bytes with this figure
and raises a MemoryError with the numbers rather than letting the allocation crash the
process (on Linux a huge `np.empty` may succeed and the process be killed later, when the
pages are touched).
"""

from __future__ import annotations

import os


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            text = f.read().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None


def _meminfo_available() -> int | None:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None


def _cgroup_available() -> int | None:
    """What the memory limit of this process's cgroup leaves (None: no limit)."""
    for limit_path, usage_path in (
            ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory.current"),
            ("/sys/fs/cgroup/memory/memory.limit_in_bytes",
             "/sys/fs/cgroup/memory/memory.usage_in_bytes")):
        limit = _read_int(limit_path)
        usage = _read_int(usage_path)
        if limit is not None and usage is not None and limit < (1 << 60):
            return max(limit - usage, 0)
    return None


def host_available_bytes() -> int | None:
    """Bytes the host can allocate now (None when the system does not say)."""
    figures = [f for f in (_meminfo_available(), _cgroup_available()) if f is not None]
    return min(figures) if figures else None
