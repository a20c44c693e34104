"""Runs the CUDA test set (tests/cuda/device) under numba's CUDA simulator, in a subprocess.

The simulator is chosen when numba is imported (`NUMBA_ENABLE_CUDASIM=1`), so it cannot share
a process with the tests that use numba's CPU target: this test starts a pytest session of
its own for tests/cuda/device with the variable set. There the `cuda:0` device stores its
arrays as NumPy arrays and runs kernels through the simulator, so CI exercises the CUDA code
generator, launches, atomics, block reductions, debug mode, autodiff and the max-reducer
without a GPU. (On a machine with a GPU, tests/cuda/device also runs on it directly.)
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent


def test_cuda_test_set_passes_under_the_simulator(record_property):
    env = dict(os.environ)
    env["NUMBA_ENABLE_CUDASIM"] = "1"
    env.pop("PYTEST_XDIST_WORKER", None)
    cmd = [sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
           "-p", "no:xdist", str(HERE / "device")]
    done = subprocess.run(cmd, cwd=HERE.parent.parent, env=env, capture_output=True,
                          text=True, timeout=900)
    tail = (done.stdout + done.stderr)[-6000:]
    assert done.returncode == 0, f"the simulated CUDA test set failed:\n{tail}"
    assert " passed" in done.stdout and "error" not in done.stdout.splitlines()[-1], tail
    # The run's counts, for the devices-tested lines at the end of the session.
    counts = [line for line in done.stdout.splitlines() if " passed" in line][-1]
    record_property("simulated CUDA tests", counts.strip("= ").split(" in ")[0])
