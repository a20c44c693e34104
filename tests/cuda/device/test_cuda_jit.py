"""qd.jit on CUDA: the calls replay eagerly for now (no fused kernels: docs/jit.md says why),
with the eager results, on the device."""

from __future__ import annotations

import numpy as np

import qdarray as qd
from qdarray.jit.fusion import Fused


def test_a_chain_replays_its_calls_with_the_eager_results(device):
    def f(a, x, b):
        return ((a * x + b) * x - a) * 0.5 + b

    rng = np.random.default_rng(3)
    jf = qd.jit(f)
    for _ in range(4):  # the trace, then replays
        a, x, b = (qd.asarray(rng.standard_normal(256).astype(np.float32), device=device)
                   for _ in range(3))
        got = jf(a, x, b)
        assert got.device == qd.Device(device)
        np.testing.assert_array_equal(np.asarray(got.to_device("cpu")),
                                      np.asarray(f(a, x, b).to_device("cpu")))
    (program,) = jf.programs.values()
    assert jf.traces == 1 and not [s for s in program.steps if type(s) is Fused]
