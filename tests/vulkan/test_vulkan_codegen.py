"""The shape of the SPIR-V that kernels launch with (spirv-dis): no buffer is NonWritable (a
driver may read such buffers through a cache that is not coherent with earlier writes), a
parameter block in a storage buffer is read once at the top of each stage, and arrays whose
last stride is one element are indexed without multiplying by it (a variant of their own,
chosen at launch), with results against NumPy on every variant."""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile

import numpy as np
import pytest

import qdarray as qd


def _disassembly(variant) -> list[str]:  # type: ignore[no-untyped-def]
    dis = shutil.which("spirv-dis")
    if dis is None:
        pytest.skip("spirv-dis is not installed (Debian: apt-get install spirv-tools)")
    out = []
    for stage in variant.program.stages:
        with tempfile.NamedTemporaryFile(suffix=".spv") as fh:
            fh.write(stage.spirv)
            fh.flush()
            out.append(subprocess.run([dis, "--raw-id", fh.name], capture_output=True,
                                      text=True, check=True).stdout)
    return out


def _binding_vars(text: str) -> dict[int, str]:
    """Binding number -> the id of the variable decorated with it."""
    return {int(b): v for v, b in re.findall(r"OpDecorate (%\d+) Binding (\d+)", text)}


@qd.kernel
def smooth(w: qd.float32, x: qd.Array[qd.float32, 1], k: qd.Array[qd.int32, 1],
           y: qd.Array[qd.float32, 1]):
    for i in range(y.shape[0]):
        acc = 0.0
        for j in range(k[i]):
            acc += w * x[i + j]
        y[i] = acc


def _launcher(kernel):  # type: ignore[no-untyped-def]
    return next(iter(kernel._launchers[False].values()))


def test_no_buffer_is_nonwritable_even_one_the_kernel_only_reads(device):
    rng = np.random.default_rng(0)
    hx = rng.random(70, dtype=np.float32)
    hk = rng.integers(0, 8, 60).astype(np.int32)
    x, k = qd.asarray(hx, device=device), qd.asarray(hk, device=device)
    y = qd.zeros(60, dtype=qd.float32, device=device)
    smooth(np.float32(0.5), x, k, y)
    want = [0.5 * hx[i:i + hk[i]].astype(np.float64).sum() for i in range(60)]
    np.testing.assert_allclose(np.asarray(y.to_device("cpu")), want, rtol=1e-6)
    variant = next(iter(_launcher(smooth).variants.values()))
    for text in _disassembly(variant):
        var = _binding_vars(text)
        assert {0, 1, 2} <= set(var)  # x, k and y are bound
        # x and k are only read; NonWritable made NVIDIA's driver return stale values
        assert "NonWritable" not in text


class _Variant:
    def __init__(self, program):  # type: ignore[no-untyped-def]
        self.program = program


def test_a_parameter_block_in_a_buffer_is_read_once_at_the_top(device):
    # A block past the device's push constants lives in a storage buffer (binding n + 2):
    # every slot read once at the top of the stage, none in the loops.
    from qdarray.kernels.codegen.spirv.render import render_spirv
    from qdarray.kernels.launch import build_ir, signature

    args = (np.float32(0.5), qd.zeros(4, dtype=qd.float32, device=device),
            qd.zeros(4, dtype=qd.int32, device=device), qd.zeros(4, dtype=qd.float32,
                                                                  device=device))
    ir = build_ir(smooth, signature(smooth, args)[0], debug=False, lower=True)[0]
    program = render_spirv(ir, caps={"max_push": 0, "int64_atomics": True}, narrow=True)
    assert not program.push
    for text in _disassembly(_Variant(program)):
        block = _binding_vars(text)[3 + 2]
        reads = re.findall(r"OpAccessChain %\d+ (%\d+) ", text)
        assert reads.count(block) == len(program.fields)


@qd.kernel
def copy2(x: qd.Array[qd.float32, 2], y: qd.Array[qd.float32, 2]):
    for i, j in qd.ndrange(y.shape[0], y.shape[1]):
        y[i, j] = x[i, j] * 2.0


def test_unit_last_strides_index_without_the_stride_and_others_get_their_own_variant(device):
    host = np.arange(12 * 10, dtype=np.float32).reshape(12, 10)
    x = qd.asarray(host, device=device)
    cases = [
        (x, (12, 10)),                 # contiguous: both arrays unit
        (x[::-2, ::3], (6, 4)),        # x strided in its last dimension
        (x[:, 4:5], (12, 1)),          # one element per row: unit whatever the stride
        (x.T, (10, 12)),               # transposed: a last stride of 10
    ]
    launcher = None
    for view, shape in cases:
        y = qd.zeros(shape, dtype=qd.float32, device=device)
        copy2(view, y)
        np.testing.assert_array_equal(np.asarray(y.to_device("cpu")),
                                      np.asarray(view.to_device("cpu")) * 2)
        launcher = _launcher(copy2)
    assert launcher is not None
    x_id, y_id = (p.value.id for p in launcher.kernel.params[:2])
    units = {key[2] for key in launcher.variants}
    assert units == {frozenset({x_id, y_id}), frozenset({y_id})}
    for key, variant in launcher.variants.items():
        text = "".join(_disassembly(variant))
        # the grid's step, a row stride for each array, and x's last stride only where it is
        # not one element
        assert text.count(" OpIMul ") == 3 + (x_id not in key[2])


@qd.kernel
def bump(a: qd.Array[qd.float32, 1], b: qd.Array[qd.float32, 1]):
    for i in range(b.shape[0]):
        b[i] = 1.0
        b[i] = a[i] + 1.0  # a read after a write: the same element when a is b


def test_arrays_sharing_a_buffer_are_declared_aliased(device):
    # SPIR-V takes distinct storage-buffer variables not to alias; a launch whose array
    # parameters share a buffer runs a variant declaring those Aliased, so the read of a[i]
    # cannot move before the write to b[i].
    x = qd.asarray(np.full(40, 5.0, np.float32), device=device)
    other = qd.asarray(np.full(40, 5.0, np.float32), device=device)
    y = qd.zeros(40, dtype=qd.float32, device=device)
    bump(other, y)
    np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), 6.0)
    bump(x, x)
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), 2.0)
    bump(x[:20], x[20:])  # views of one buffer: aliased too
    np.testing.assert_array_equal(np.asarray(x.to_device("cpu")), [2.0] * 20 + [3.0] * 20)
    launcher = _launcher(bump)
    a_id, b_id = (p.value.id for p in launcher.kernel.params)
    assert {key[3] for key in launcher.variants} == {frozenset(), frozenset({a_id, b_id})}
    for key, variant in launcher.variants.items():
        for text in _disassembly(variant):
            var = _binding_vars(text)
            aliased = set(re.findall(r"OpDecorate (%\d+) Aliased", text))
            assert aliased == ({var[0], var[1]} if key[3] else set())
            assert "NonWritable" not in text
