"""Grids of CUDA launches (backends/cuda/target.py), without a GPU: a reverse kernel's
parallel stage that keeps adstacks gets one thread per iteration, every other parallel stage
at most SMs x 32 blocks with a grid stride."""

from __future__ import annotations

import numpy as np

import qdarray as qd
from qdarray.backends.cuda.target import stage_blocks, whole_grid_stages
from qdarray.kernels.passes import pipeline
from qdarray.kernels.passes.stages import plan_stages


@qd.kernel
def iterate(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    s = x[0] * 2.0  # a serial stage
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v + s


def _stages(ir):
    kernel = pipeline(ir, debug=False, lower=True)
    return whole_grid_stages(kernel, plan_stages(kernel)), plan_stages(kernel)


def test_only_the_parallel_stages_with_adstacks_take_whole_grids():
    x = qd.ones(8, dtype=qd.float32, requires_grad=True)
    y = qd.zeros(1, dtype=qd.float32, requires_grad=True)
    a = qd.asarray(np.arange(8, dtype=np.int32))
    forward, fplan = _stages(iterate.ir(x, a, y))
    assert not any(forward) and any(s.loops for s in fplan.stages)
    reverse, rplan = _stages(iterate.grad.ir(x, a, y).kernel)
    assert reverse == [bool(s.loops) for s in rplan.stages]   # the serial stage: one thread
    assert any(reverse)


def test_stage_blocks():
    assert stage_blocks(10_000_000, 256, 4224, whole=False) == 4224
    assert stage_blocks(10_000_000, 256, 4224, whole=True) == 39063
    assert stage_blocks(1000, 256, 4224, whole=False) == stage_blocks(1000, 256, 4224, True) == 4
    assert stage_blocks(0, 256, 4224, whole=True) == 0      # no iterations: nothing launched
    assert stage_blocks(None, 256, 4224, whole=True) == 4224  # unknown on the host
