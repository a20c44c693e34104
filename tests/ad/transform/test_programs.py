"""Random kernels: reverse mode against central differences, and lower_exits against the
interpreter."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from gradcheck import Grad
from hypothesis import given, settings
from hypothesis import strategies as st
from programs import load_program, program_sources

from qdarray.ad.transform.exits import lower_exits
from qdarray.kernels import interp
from qdarray.kernels.emit import Emitter
from qdarray.kernels.ir import Break, Continue, walk
from qdarray.kernels.verify import verify


@pytest.fixture(scope="module")
def program_dir(tmp_path_factory: pytest.TempPathFactory) -> Any:
    return tmp_path_factory.mktemp("ad_programs")


def _make(seed: int) -> Any:
    rng = np.random.default_rng(seed)
    x, z = rng.uniform(-1, 1, 4), rng.uniform(-1, 1, 4)
    a = rng.integers(0, 5, 4).astype(np.int32)
    return lambda: {"x": x.copy(), "z": z.copy(), "a": a, "y": np.zeros(4)}


@settings(max_examples=30)
@given(source=program_sources(), seed=st.integers(0, 2**16))
def test_random_programs_interp(program_dir, source, seed):
    kern = load_program(source, program_dir)
    Grad("interp").check(kern, _make(seed), ("x", "z"), ("y",), seed=seed, rtol=1e-4, atol=1e-6)


@settings(max_examples=4)
@given(source=program_sources(), seed=st.integers(0, 2**16))
def test_random_programs_cpu(program_dir, source, seed):
    kern = load_program(source, program_dir)
    Grad("cpu").check(kern, _make(seed), ("x", "z"), ("y",), seed=seed, rtol=1e-4, atol=1e-6)


@settings(max_examples=30)
@given(source=program_sources(), seed=st.integers(0, 2**16))
def test_lower_exits_keeps_results(program_dir, source, seed):
    kern = load_program(source, program_dir)
    args = _make(seed)()
    ir = kern.ir(*args.values())
    lowered = verify(lower_exits(ir, Emitter.after(ir)))
    for stmt in walk(lowered.body):
        assert not isinstance(stmt, Continue)
        if isinstance(stmt, Break):   # only exit tests remain: `if brk: break`
            pass
    outs = []
    for code in (ir, lowered):
        y = np.zeros(4)
        native = [args["x"], args["z"], args["a"], y]
        interp.run(code, interp.typed_arguments(code, native))
        outs.append(y)
    np.testing.assert_array_equal(outs[1], outs[0], err_msg=source)
