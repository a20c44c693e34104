"""The disk cache under damage, races and hostile directories (issue 18).

- Every kind of file the cache holds (generated module, numba index and code, reverse plan,
  kernel entry), damaged, is discarded with a warning and compiled again; the run after that
  is clean.
- Eight threads making the first launch of one kernel together (forward and reverse, cold and
  warm cache, CPU and the CUDA simulator) all succeed.
- A cache directory another user could write to is refused with a clear message, and nothing
  is written into it.

Oracles: NumPy results of the same computation, closed-form gradients, and the files on disk.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from qdarray.kernels import cache, cache_dir

SCRIPT = '''
import json, sys, threading
import numpy as np
import qdarray as qd

@qd.kernel
def poly(x: qd.Array[qd.float64, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float64, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v * 0.5 + 1.0
        y[i] += v * v

def run():
    x = qd.asarray(np.linspace(0.1, 0.9, 6), requires_grad=True)
    a = qd.asarray(np.array([0, 1, 2, 3, 4, 5], np.int32))
    y = qd.zeros(6, dtype=qd.float64, requires_grad=True)
    poly(x, a, y)
    y.grad[...] = 1.0
    poly.grad(x, a, y)
    return (np.asarray(y.to_device("cpu")).tolist(),
            np.asarray(x.grad.to_device("cpu")).tolist())

threads = int(sys.argv[1])
results, errors = [], []
barrier = threading.Barrier(threads)
def worker():
    barrier.wait()
    try:
        results.append(run())
    except BaseException as e:
        errors.append(f"{type(e).__name__}: {e}")
ts = [threading.Thread(target=worker) for _ in range(threads)]
for t in ts: t.start()
for t in ts: t.join()
stats = qd.kernels.cache_stats()
print(json.dumps({"results": results, "errors": errors,
                  "stats": {k: v for k, v in stats.items() if k != "directory"}}))
'''


def _expected() -> tuple[list[float], list[float]]:
    import numpy as np

    ys, gs = [], []
    for x0, n in zip(np.linspace(0.1, 0.9, 6), range(6), strict=True):
        v, d = x0, 1.0
        for _ in range(n):
            v, d = v * 0.5 + 1.0, d * 0.5
        ys.append(v * v)
        gs.append(2 * v * d)
    return ys, gs


def _run(script: Path, directory: Path, threads: int = 1, env: dict[str, str] | None = None
         ) -> tuple[dict, str]:
    full = {**os.environ, "QDARRAY_CACHE_DIR": str(directory), "QDARRAY_DEBUG": "0",
            **(env or {})}
    done = subprocess.run([sys.executable, str(script), str(threads)], env=full,
                          capture_output=True, text=True, check=False, timeout=600)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def _check(out: dict, threads: int) -> None:
    import numpy as np

    assert out["errors"] == []
    assert len(out["results"]) == threads
    ys, gs = _expected()
    for y, g in out["results"]:
        np.testing.assert_allclose(y, ys, rtol=1e-13)
        np.testing.assert_allclose(g, gs, rtol=1e-13)


@pytest.fixture(scope="module")
def script(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("script") / "use_cache.py"
    path.write_text(SCRIPT)
    return path


def test_eight_threads_make_the_first_launch_together_cold_and_warm(script, tmp_path):
    cold, _ = _run(script, tmp_path / "cache", threads=8)
    _check(cold, 8)
    warm, _ = _run(script, tmp_path / "cache", threads=8)
    _check(warm, 8)
    assert warm["stats"]["numba_compiled"] == 0 and warm["stats"]["damaged_files"] == 0


def test_eight_threads_make_the_first_launch_together_on_opencl(script, tmp_path):
    import qdarray as qd

    if "opencl:0" not in [str(d) for d in qd.__array_namespace_info__().devices()]:
        pytest.skip("no OpenCL device (install pocl-opencl-icd for one on the CPU)")
    env = {"QDARRAY_DEFAULT_DEVICE": "opencl:0"}
    cold, _ = _run(script, tmp_path / "cache", threads=8, env=env)
    _check(cold, 8)
    warm, _ = _run(script, tmp_path / "cache", threads=8, env=env)
    _check(warm, 8)


def _damage(directory: Path, kind: str) -> list[Path]:
    """Damage every cache file of `kind`; the files damaged."""
    files = {
        "module": sorted(directory.glob("qdarray_kernel_*.py")),
        "numba index": sorted((directory / "__pycache__").glob("*.nbi")),
        "numba code": sorted((directory / "__pycache__").glob("*.nbc")),
        "reverse plan": sorted(directory.glob("qdarray_reverse_*.json")),
    }[kind]
    assert files, f"no {kind} file to damage"
    for path in files:
        data = path.read_bytes()
        if kind == "module":
            path.write_bytes(b"\xff\xfe\x00garbage" + data[: len(data) // 3])
        elif kind == "numba index":
            path.write_bytes(b"")
        else:
            path.write_bytes(data[: len(data) // 2])
    return files


@pytest.mark.parametrize("kind", ["module", "numba index", "numba code", "reverse plan"])
def test_a_damaged_cache_file_is_discarded_with_a_warning_and_compiled_again(
        script, tmp_path, kind):
    directory = tmp_path / "cache"
    first, _ = _run(script, directory)
    _check(first, 1)
    _damage(directory, kind)
    second, stderr = _run(script, directory)
    _check(second, 1)
    assert "is damaged" in stderr and second["stats"]["damaged_files"] >= 1, stderr
    third, stderr = _run(script, directory)
    _check(third, 1)
    assert "is damaged" not in stderr and third["stats"]["damaged_files"] == 0, stderr
    assert third["stats"]["numba_compiled"] == 0


# -- unsafe directories ---------------------------------------------------------------------


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A temporary directory of its own for the fallback, and directories checked afresh."""
    tmp = tmp_path / "tmp"
    tmp.mkdir(mode=0o755)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    cache_dir.forget()
    yield tmp
    cache_dir.forget()


def _unusable_configured(monkeypatch, tmp_path) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")  # a file where the directory should be: mkdir fails
    monkeypatch.setenv("QDARRAY_CACHE_DIR", str(blocked / "sub"))


def _load_with_warning(match: str, tmp_path: Path) -> Path:
    # A source of its own (a module already loaded in this process is not loaded again).
    with pytest.warns(RuntimeWarning, match=match):
        module = cache.load_module(f"VALUE = 2  # {tmp_path}\n")
    assert module.VALUE == 2
    return Path(module.__file__).parent


def _private(directory: Path) -> None:
    st = os.stat(directory)
    assert st.st_uid == os.geteuid() and stat.S_IMODE(st.st_mode) & 0o077 == 0


def test_a_fallback_directory_is_created_private(monkeypatch, tmp_path, fresh):
    _unusable_configured(monkeypatch, tmp_path)
    used = _load_with_warning("is not usable", tmp_path)
    assert used == fresh / f"qdarray-{os.geteuid()}"
    _private(used)


@pytest.mark.parametrize("hostile", ["world-writable", "another owner", "a file", "a link"])
def test_an_unsafe_shared_fallback_is_refused(monkeypatch, tmp_path, fresh, hostile):
    _unusable_configured(monkeypatch, tmp_path)
    shared = fresh / f"qdarray-{os.geteuid()}"
    if hostile == "world-writable":
        shared.mkdir()
        os.chmod(shared, 0o777)
        why = "other users may write to it"
    elif hostile == "another owner":
        if os.geteuid() != 0:
            pytest.skip("giving a directory to another user needs root")
        shared.mkdir(mode=0o700)
        os.chown(shared, 12345, 12345)
        why = "belongs to user id 12345"
    elif hostile == "a file":
        shared.write_text("")
        why = "it is not a directory"
    else:
        target = tmp_path / "mine"
        target.mkdir(mode=0o700)
        shared.symlink_to(target)
        why = "it is a symbolic link"
    used = _load_with_warning(why, tmp_path)
    assert used.parent == fresh and used.name.startswith("qdarray-cache-")
    _private(used)
    if shared.is_dir() and not shared.is_symlink():
        assert list(shared.iterdir()) == []  # nothing written into it
    if hostile == "a link":
        assert list((tmp_path / "mine").iterdir()) == []


def test_a_configured_directory_others_can_write_is_refused(monkeypatch, tmp_path, fresh):
    open_dir = tmp_path / "open"
    open_dir.mkdir()
    os.chmod(open_dir, 0o775)
    monkeypatch.setenv("QDARRAY_CACHE_DIR", str(open_dir))
    used = _load_with_warning(r"other users may write to it \(mode 775\)", tmp_path)
    assert used == fresh / f"qdarray-{os.geteuid()}"
    assert list(open_dir.iterdir()) == []


def test_a_new_configured_directory_is_created_private(monkeypatch, tmp_path, fresh):
    monkeypatch.setenv("QDARRAY_CACHE_DIR", str(tmp_path / "new" / "cache"))
    module = cache.load_module(f"VALUE = 3  # {tmp_path}\n")
    assert Path(module.__file__).parent == tmp_path / "new" / "cache"
    _private(tmp_path / "new" / "cache")
