"""Which devices are present, found cheaply: per kind, on first use, remembered across processes.

Listing OpenCL devices means loading every ICD and building a probe kernel on each device (the
test that leaves out devices whose compiler cannot work); listing Vulkan devices means creating
an instance, which loads every driver; listing CUDA devices means importing CuPy or numba.cuda.
That costs seconds in a fresh process, so `devices(kind)` answers from a small JSON file in the
cache directory (`kernels/cache_dir.py`, checked as for compiled kernels) when its key still
matches, and otherwise runs the backend's own discovery and writes the file for the next
process.

The key of a kind is a hash of what decides its listing without loading a driver: the
driver manifests (OpenCL `.icd` files, Vulkan `icd.d/*.json`) with the size and modification
time of the libraries they name, the environment variables the loaders and qdarray read, the
versions of the Python bindings, the GPU device nodes (`/dev/dri`, `/dev/nvidia*`), the host
and qdarray's version. A driver installed, upgraded or removed, or another GPU, changes the
key. Anything unexpected (an unreadable file, a malformed cache) falls back to discovering;
`QDARRAY_DEVICE_CACHE=0` turns the file off. A device is only opened when used: the cache
never opens one, and an index the cache listed that has gone away raises the backend's usual
"no such device" error at first use.
"""

from __future__ import annotations

import glob
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import platform
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .._devices import Device
from .._version import __version__

_FORMAT = 1
_lock = threading.Lock()
_listed: dict[str, list[str]] = {}  # kind -> descriptions of its devices, in index order

_LIB_DIRS = ("/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu", "/usr/lib64", "/usr/lib",
             "/usr/local/lib")
_ENV = {
    "opencl": ("OCL_ICD_VENDORS", "OPENCL_VENDOR_PATH", "OCL_ICD_FILENAMES", "POCL_DEVICES",
               "QDARRAY_OPENCL_PLATFORM", "LD_LIBRARY_PATH"),
    "vulkan": ("VK_ICD_FILENAMES", "VK_DRIVER_FILES", "VK_ADD_DRIVER_FILES",
               "VK_LOADER_DRIVERS_SELECT", "VK_LOADER_DRIVERS_DISABLE", "XDG_DATA_DIRS",
               "QDARRAY_VULKAN_DEVICE", "LD_LIBRARY_PATH"),
    "cuda": ("CUDA_VISIBLE_DEVICES", "NUMBA_ENABLE_CUDASIM", "LD_LIBRARY_PATH"),
}
_PACKAGES = {"opencl": ("pyopencl", "pocl-binary-distribution"), "vulkan": ("vulkan",),
             "cuda": ("cupy-cuda12x", "cupy-cuda13x", "cupy", "numba", "numba-cuda")}


def devices(kind: str) -> list[Device]:
    """The present devices of `kind`, in index order (none when its backend cannot load)."""
    return [Device(kind if kind == "cpu" else f"{kind}:{i}") for i in range(len(_listing(kind)))]


def description(device: Device) -> str:
    """What `device` is: its platform or driver and its name, from the same listing."""
    found = _listing(device.kind)
    if device.index < len(found):
        return found[device.index]
    return f"{device} (not present)"


def _listing(kind: str) -> list[str]:
    found = _listed.get(kind)
    if found is not None:
        return found
    with _lock:
        found = _listed.get(kind)
        if found is None:
            found = _listed[kind] = _cached_or_discovered(kind)
    return found


def _cached_or_discovered(kind: str) -> list[str]:
    if kind == "cpu":
        return [_cpu_description()]
    if kind == "cuda" and not os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" and \
            importlib.util.find_spec("cupy") is None:
        return []  # no CuPy and no simulator: no CUDA device, without importing numba.cuda
    use_file = os.environ.get("QDARRAY_DEVICE_CACHE", "1") != "0"
    key = _key(kind) if use_file else None
    if key is not None:
        entry = _read().get(kind)
        if isinstance(entry, dict) and entry.get("key") == key and isinstance(
                entry.get("devices"), list):
            return [str(d) for d in entry["devices"]]
    found = _discover(kind)
    if key is not None:
        _write(kind, key, found)
    return found


def _discover(kind: str) -> list[str]:
    try:
        backend = Device(kind).backend
        listed = backend.devices()
        return [str(backend.description(d)) for d in listed]
    except Exception:  # noqa: BLE001 - a missing or broken driver means no devices
        return []


# -- the cache file --------------------------------------------------------------------------


def _path() -> Path:
    from ..kernels.cache_dir import checked_dir

    return checked_dir() / "devices.json"


def _read() -> dict[str, Any]:
    try:
        data = json.loads(_path().read_text())
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) and data.get("format") == _FORMAT else {}


def _write(kind: str, key: str, found: list[str]) -> None:
    try:
        data = _read() or {"format": _FORMAT}
        data[kind] = {"key": key, "devices": found}
        path = _path()
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".devices-", suffix=".json")
        with os.fdopen(fd, "w") as f:
            json.dump(data, f, indent=1)
        os.replace(tmp, path)  # atomic: a concurrent reader sees the old file or the new one
    except OSError:
        pass  # the next process discovers again


# -- keys --------------------------------------------------------------------------------------


def _key(kind: str) -> str | None:
    """The hash of everything that decides `kind`'s listing (module docstring); None when it
    cannot be computed (then the file is not used)."""
    makers: dict[str, Callable[[], list[Any]]] = {
        "opencl": _opencl_files, "vulkan": _vulkan_files, "cuda": _cuda_files}
    try:
        parts: list[Any] = [_FORMAT, __version__, platform.node(), platform.machine(),
                            [(v, os.environ.get(v)) for v in _ENV[kind]],
                            [(p, _version(p)) for p in _PACKAGES[kind]], _gpu_nodes(),
                            makers[kind]()]
    except Exception:  # noqa: BLE001 - no key, no cache: discover
        return None
    return hashlib.sha256(json.dumps(parts, default=str).encode()).hexdigest()


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def _stat(path: str) -> list[Any]:
    try:
        st = os.stat(path)
    except OSError:
        return [path, None]
    return [path, st.st_size, st.st_mtime_ns]


def _library(name: str, near: str) -> list[Any]:
    """The identity of a driver library named in a manifest (a path, or a name the dynamic
    loader searches for)."""
    if os.sep in name:
        return _stat(name if os.path.isabs(name) else os.path.join(near, name))
    dirs = [d for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep) if d]
    for d in (*dirs, *_LIB_DIRS):
        candidate = os.path.join(d, name)
        if os.path.exists(candidate):
            return _stat(os.path.realpath(candidate))
    return [name, None]


def _manifests(pattern_dirs: list[str], suffix: str) -> list[str]:
    found: list[str] = []
    for d in pattern_dirs:
        if os.path.isfile(d):
            found.append(d)
        else:
            found.extend(sorted(glob.glob(os.path.join(d, f"*{suffix}"))))
    return found


def _opencl_files() -> list[Any]:
    vendors = os.environ.get("OCL_ICD_VENDORS") or os.environ.get("OPENCL_VENDOR_PATH")
    dirs = [vendors] if vendors else ["/etc/OpenCL/vendors"]
    parts: list[Any] = []
    for icd in _manifests(dirs, ".icd"):
        text = Path(icd).read_text().strip()
        parts.append([_stat(icd), text, _library(text, os.path.dirname(icd))])
    spec = importlib.util.find_spec("pyopencl")
    if spec is not None and spec.submodule_search_locations:  # a wheel's own ICDs and PoCL
        root = list(spec.submodule_search_locations)[0]
        parts.append([_stat(p) for p in sorted(glob.glob(os.path.join(root, "..", "pocl*")))])
    return parts


def _vulkan_files() -> list[Any]:
    named = os.environ.get("VK_DRIVER_FILES") or os.environ.get("VK_ICD_FILENAMES")
    if named:
        dirs = named.split(os.pathsep)
    else:
        data = os.environ.get("XDG_DATA_DIRS", "/usr/local/share:/usr/share").split(os.pathsep)
        home = os.path.join(os.path.expanduser("~"), ".local", "share")
        dirs = [os.path.join(d, "vulkan", "icd.d") for d in ("/etc", *data, home)]
    extra = os.environ.get("VK_ADD_DRIVER_FILES")
    dirs += extra.split(os.pathsep) if extra else []
    parts: list[Any] = [_library("libvulkan.so.1", "")]
    for manifest in _manifests(dirs, ".json"):
        text = Path(manifest).read_text()
        library = str(json.loads(text).get("ICD", {}).get("library_path", ""))
        parts.append([_stat(manifest), text, _library(library, os.path.dirname(manifest))])
    return parts


def _cuda_files() -> list[Any]:
    return [_stat("/proc/driver/nvidia/version")]


def _gpu_nodes() -> list[str]:
    return sorted(glob.glob("/dev/dri/*") + glob.glob("/dev/nvidia*"))


def _cpu_description() -> str:
    import numpy as np

    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            model = next((line.split(":", 1)[1].strip() for line in f
                          if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{model} (NumPy {np.__version__})"

