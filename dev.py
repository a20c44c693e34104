#!/usr/bin/env python3
"""The project's two commands, each setting itself up on a fresh machine.

    python3 dev.py demo    a short showcase of qdarray on the default device
    python3 dev.py test    the whole test suite

Both create a virtual environment in `.venv/` (once) and install qdarray into it. `test` also
installs the Debian packages the device tests need (PoCL for OpenCL, lavapipe and spirv-tools
for Vulkan) when run as root on a machine with apt-get, and otherwise says what is missing.
Extra arguments after `test` go to pytest. The whole suite (`test` alone) also runs the tests
of `qd.jit`'s tracer and of tapes under each newer CPython on this machine (`python3.12`,
`python3.13`), which change the frames and bytecode the tracer reads.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
PYTHON = VENV / "bin" / "python"
STAMP = VENV / ".qdarray-installed"


def _run(*cmd: str | os.PathLike[str], **kwargs: object) -> None:
    subprocess.run([str(c) for c in cmd], check=True, **kwargs)  # type: ignore[call-overload]


def _make_venv() -> None:
    if PYTHON.exists():
        return
    try:
        _run(sys.executable, "-m", "venv", VENV)
    except subprocess.CalledProcessError:
        # Debian's python3 without python3-venv: fall back to virtualenv from PyPI.
        _run(sys.executable, "-m", "pip", "install", "--user", "--quiet", "virtualenv")
        _run(sys.executable, "-m", "virtualenv", "--quiet", VENV)


# The Debian packages the device tests need, and why. PyPI's PoCL wheel (LLVM 14) cannot build
# kernels for some newer CPUs, so the OpenCL tests use Debian's PoCL where PyPI's fails; the
# Vulkan tests run on lavapipe (Mesa's CPU Vulkan) and check SPIR-V with spirv-val.
SYSTEM_PACKAGES = {
    "OpenCL (PoCL, the CPU's OpenCL)": ("pocl-opencl-icd", "ocl-icd-libopencl1"),
    "Vulkan (lavapipe, the CPU's Vulkan; spirv-val)": ("mesa-vulkan-drivers", "libvulkan1",
                                                       "spirv-tools"),
}


def _missing_packages() -> dict[str, list[str]]:
    """The SYSTEM_PACKAGES not installed, by what needs them (empty without dpkg)."""
    if shutil.which("dpkg") is None:
        return {}
    missing = {}
    for need, packages in SYSTEM_PACKAGES.items():
        absent = [p for p in packages if subprocess.run(
            ["dpkg", "-s", p], capture_output=True).returncode != 0]
        if absent:
            missing[need] = absent
    return missing


def system_packages() -> None:
    """Install the Debian packages the device tests need, where this machine allows it (root
    and apt-get); otherwise say which are missing, what they are for, and how to install them.
    Set QDARRAY_NO_APT=1 to skip this step."""
    if os.environ.get("QDARRAY_NO_APT") or sys.platform != "linux":
        return
    missing = _missing_packages()
    if not missing:
        return
    packages = [p for absent in missing.values() for p in absent]
    if shutil.which("apt-get") and os.geteuid() == 0:
        print(f"dev.py: installing Debian packages for the device tests: {' '.join(packages)}")
        env = dict(os.environ, DEBIAN_FRONTEND="noninteractive")
        ok = subprocess.run(["apt-get", "update", "-qq"], env=env).returncode == 0 and \
            subprocess.run(["apt-get", "install", "-y", "-qq", *packages], env=env,
                           stdout=subprocess.DEVNULL).returncode == 0
        if ok:
            return
        print("dev.py: warning: apt-get could not install them.")
    for need, absent in missing.items():
        print(f"dev.py: the {need} tests need {', '.join(absent)}, which are not installed; "
              "they are skipped (or run on PyPI's PoCL, where it builds kernels) without them.")
    print(f"dev.py: to test every device, run as root: apt-get install {' '.join(packages)}")


def setup() -> None:
    """Create .venv and install qdarray with its test extras, when pyproject.toml changed."""
    _make_venv()
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if STAMP.exists() and STAMP.read_text() == wanted:
        return
    _run(PYTHON, "-m", "pip", "install", "--quiet", "--upgrade", "pip")
    _run(PYTHON, "-m", "pip", "install", "--quiet", "-e", f"{ROOT}[test]")
    STAMP.write_text(wanted)


# The tests of code that reads the interpreter's own structures (qd.jit's tracer follows
# frames and their bytecode, which each CPython release changes), run once more under every
# newer CPython present here, in `.venv-<version>/` with what those tests need.
NEWER_PYTHONS = ("3.12", "3.13")
INTERPRETER_TESTS = ("tests/jit", "tests/ad/tape")
INTERPRETER_EXTRAS = ("pytest>=8", "pytest-xdist>=3", "hypothesis>=6.100")


def _newer_interpreters() -> list[tuple[str, str]]:
    """(version, path) of each CPython in NEWER_PYTHONS newer than this one that runs here."""
    found = []
    for version in NEWER_PYTHONS:
        if tuple(map(int, version.split("."))) <= sys.version_info[:2]:
            continue
        pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
        candidates = [shutil.which(f"python{version}"),  # pyenv's shims run only when chosen
                      *sorted(map(str, pyenv.glob(f"{version}.*/bin/python{version}")))]
        for path in filter(None, candidates):
            if subprocess.run([path, "-c", "import venv"], capture_output=True).returncode == 0:
                found.append((version, path))
                break
    return found


def interpreter_tests(version: str, interpreter: str, env: dict[str, str]) -> int:
    """INTERPRETER_TESTS under CPython `version` (set up once per pyproject.toml)."""
    venv = ROOT / f".venv-{version}"
    python = venv / "bin" / "python"
    stamp = venv / ".qdarray-installed"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if not (stamp.exists() and stamp.read_text() == wanted):
        print(f"dev.py: setting up {venv.name} for the tests under Python {version}")
        try:
            _run(interpreter, "-m", "venv", venv)
            _run(python, "-m", "pip", "install", "--quiet", "-e", str(ROOT),
                 *INTERPRETER_EXTRAS)
        except subprocess.CalledProcessError:
            print(f"dev.py: warning: could not set up Python {version}; its tests did not run")
            return 1
        stamp.write_text(wanted)
    print(f"dev.py: {' and '.join(INTERPRETER_TESTS)} under Python {version}")
    return subprocess.call([str(python), "-m", "pytest", "-n", "2", "-q", "-p",
                            "no:cacheprovider", *INTERPRETER_TESTS], cwd=ROOT, env=env)


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("demo", "test"):
        print(__doc__)
        return 2
    setup()
    if argv[0] == "test":
        system_packages()
    env = dict(os.environ)
    if argv[0] == "demo":
        return subprocess.call([str(PYTHON), str(ROOT / "examples" / "showcase.py")], env=env)
    cmd = [str(PYTHON), "-m", "pytest", "-n", "2", "-q", *argv[1:]]
    status = subprocess.call(cmd, cwd=ROOT, env=env)
    if len(argv) == 1:  # the whole suite: the interpreter-sensitive tests on newer CPythons
        for version, interpreter in _newer_interpreters():
            status = interpreter_tests(version, interpreter, env) or status
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
