"""The launch path on Vulkan: descriptor sets written once per list of buffers and kept,
bindings not repeated within a batch, the cache emptied when the pool destroys buffers, and
results that stay right through all of it."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.vulkan import _descriptors, _instance, _memory, _stream


@qd.kernel
def axpy(s: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = s * x[i] + y[i]


@qd.kernel
def scale(s: qd.float32, x: qd.Array[qd.float32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        y[i] = s * y[i]


def _arrays(device: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray, qd.Array, qd.Array]:
    rng = np.random.default_rng(seed)
    hx, hy = rng.random(n, dtype=np.float32), rng.random(n, dtype=np.float32)
    return hx, hy, qd.asarray(hx, device=device, copy=True), qd.asarray(hy, device=device,
                                                                         copy=True)


def test_a_launch_on_arrays_seen_before_writes_no_descriptor_set(device):
    s = _stream.stream(_instance.state(0))
    hx, hy, x, y = _arrays(device, 100, 0)
    axpy(2.0, x, y)
    scale(0.5, x, y)  # another kernel: a set of its own (its carry and error record too)
    written = s.descriptors.written
    for _ in range(5):
        axpy(2.0, x, y)
        scale(0.5, x, y)
    assert s.descriptors.written == written
    want = hy.copy()
    for _ in range(6):
        want = np.float32(0.5) * (np.float32(2.0) * hx + want)
    np.testing.assert_allclose(y.to_device("cpu"), want, rtol=1e-6)
    _, _, x2, y2 = _arrays(device, 100, 1)
    axpy(2.0, x2, y2)  # other buffers: a set of their own
    assert s.descriptors.written == written + 1


def test_views_of_one_buffer_share_its_set_and_get_their_own_offsets(device):
    s = _stream.stream(_instance.state(0))
    hx, hy, x, y = _arrays(device, 64, 2)
    axpy(1.0, x[:32], y[:32])
    written = s.descriptors.written
    axpy(3.0, x[32:], y[32:])
    axpy(-1.0, x[::2], y[1::2])
    assert s.descriptors.written == written
    want = hy.copy()
    want[:32] += hx[:32]
    want[32:] += np.float32(3.0) * hx[32:]
    want[1::2] += np.float32(-1.0) * hx[::2]
    np.testing.assert_allclose(y.to_device("cpu"), want, rtol=1e-6)


def test_releasing_the_pools_buffers_forgets_their_sets(device):
    st = _instance.state(0)
    s = _stream.stream(st)
    hx, hy, x, y = _arrays(device, 50, 3)
    axpy(1.0, x, y)
    del x, y
    s.finish()
    _memory.pool(st).release_cached()  # destroys kept buffers: no set may name them
    assert not s.descriptors.sets
    hx2, hy2, x2, y2 = _arrays(device, 50, 4)
    axpy(1.0, x2, y2)
    np.testing.assert_allclose(y2.to_device("cpu"), hy2 + hx2, rtol=1e-6)


@pytest.mark.parametrize("queued", [False, True])
def test_a_full_cache_starts_over_and_its_pools_outlive_queued_work(device, monkeypatch,
                                                                    queued):
    st = _instance.state(0)
    s = _stream.stream(st)
    s.finish()
    monkeypatch.setattr(_descriptors, "CAPACITY", 3)
    monkeypatch.setattr(_descriptors, "SETS_PER_POOL", 2)
    pairs = [_arrays(device, 40, 10 + k) for k in range(8)]
    for _, _, x, y in pairs:
        axpy(2.0, x, y)
        if not queued:
            s.finish()
    assert len(s.descriptors.sets) <= 3
    for hx, hy, _, y in pairs:
        np.testing.assert_allclose(y.to_device("cpu"), np.float32(2.0) * hx + hy, rtol=1e-6)
    assert not any(b.pools for b in s.in_flight)  # all destroyed once their work ran


@pytest.mark.parametrize("spin", [0.0, 1.0], ids=["block-at-once", "poll-then-block"])
def test_waits_that_poll_the_timeline_first_see_every_result(device, monkeypatch, spin):
    # On a GPU a wait polls the stream's timeline semaphore for up to SPIN_SECONDS before blocking
    # (on a
    # CPU implementation it blocks at once); the device is taken for a GPU here, so both
    # ways of waiting run, with polls that outlast the work (1 s) and none at all.
    st = _instance.state(qd.Device(device).index)
    monkeypatch.setitem(_instance.TYPE_NAMES, st.type, "discrete GPU")
    monkeypatch.setattr(_stream, "SPIN_SECONDS", spin)
    hx, hy, x, y = _arrays(device, 200_000, 3)
    s = _stream.stream(st)
    s.finish()
    waits, blocked = s.waits, s.blocked
    for _ in range(3):
        axpy(np.float32(2.0), x, y)
        hy = np.float32(2.0) * hx + hy
        np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), hy)
    assert s.waits >= waits + 3  # one wait per read at least
    # No poll: a wait blocks unless its first read of the timeline shows the work done; a
    # poll that outlasts the work: none does.
    assert 0 <= s.blocked - blocked <= (s.waits - waits if spin == 0.0 else 0)


@qd.kernel
def sum5(a: qd.Array[qd.float32, 1], b: qd.Array[qd.float32, 1], c: qd.Array[qd.float32, 1],
         d: qd.Array[qd.float32, 1], out: qd.Array[qd.float32, 1]):
    for i in range(out.shape[0]):
        out[i] = a[i] + b[i] + c[i] + d[i]


def test_narrow_programs_keep_offsets_and_strides_in_4_bytes(device):
    # Five arrays: 5 x (offset, shape, stride) of 8 bytes and the loop's 3 slots are 144
    # bytes, past the 128 bytes of push constants every device has; with the offsets and
    # strides in 4 bytes the block is 104 and goes in push constants, and it still is right.
    from qdarray.kernels.codegen.spirv.render import render_spirv
    from qdarray.kernels.launch import build_ir, signature

    hs = [np.random.default_rng(k).random(50, dtype=np.float32) for k in range(4)]
    arrays = [qd.asarray(h, device=device) for h in hs]
    out = qd.zeros(50, dtype=qd.float32, device=device)
    ir = build_ir(sum5, signature(sum5, [*arrays, out])[0], debug=False, lower=True)[0]
    caps = {"max_push": 128, "int64_atomics": True, "float32_atomic_add": False}
    wide, narrow = render_spirv(ir, caps=caps), render_spirv(ir, caps=caps, narrow=True)
    assert (wide.block_bytes, wide.push) == (144, False)
    assert (narrow.block_bytes, narrow.push) == (104, True)
    assert sorted(narrow.offsets) == list(range(0, 64, 8)) + list(range(64, 104, 4))
    sum5(*arrays, out)
    np.testing.assert_array_equal(out.to_device("cpu"), hs[0] + hs[1] + hs[2] + hs[3])


def test_a_stride_past_32_bits_runs_the_64_bit_program(device):
    # A view of one element at a stride of 2**40: its stride does not fit the narrow
    # program's 4-byte slot, so the launch runs the 64-bit program (once: the written
    # array's generation moves by one).
    hx = np.arange(10, dtype=np.float32) + 1
    x = qd.asarray(hx, device=device)
    y = qd.zeros(3, dtype=qd.float32, device=device)
    gen = y._buffer.generation
    axpy(np.float32(2.0), x[3::2**40], y[:1])
    np.testing.assert_array_equal(y.to_device("cpu"), [8.0, 0.0, 0.0])
    assert y._buffer.generation == gen + 1
    axpy(np.float32(2.0), x[3:9:2], y)  # and the narrow program again after it
    np.testing.assert_array_equal(y.to_device("cpu"), [16.0, 12.0, 16.0])


@qd.kernel
def blend7(s: qd.float32, a: qd.Array[qd.float32, 1], b: qd.Array[qd.float32, 1],
           c: qd.Array[qd.float32, 1], d: qd.Array[qd.float32, 1], e: qd.Array[qd.float32, 1],
           f: qd.Array[qd.float32, 1], out: qd.Array[qd.float32, 1]):
    for i in range(out.shape[0]):
        out[i] = out[i] * s + a[i] + b[i] + c[i] + d[i] + e[i] + f[i]


def test_parameter_blocks_past_push_constants_are_written_in_the_stream(device):
    # Seven arrays and a scalar: 140 bytes even narrow, past 128 bytes of push constants
    # (lavapipe's limit): the block goes in the launcher's own buffer, rewritten in the
    # stream before each dispatch. Launches queued in one batch each see their own scalar,
    # and launches on the same arrays write no descriptor set (nothing is allocated).
    from qdarray.kernels.codegen.spirv.render import render_spirv
    from qdarray.kernels.launch import build_ir, signature

    s = _stream.stream(_instance.state(qd.Device(device).index))
    hs = [np.random.default_rng(k).random(300, dtype=np.float32) for k in range(7)]
    arrays = [qd.asarray(h, device=device) for h in hs]
    args = [np.float32(1.0), *arrays[:6], arrays[6]]
    ir = build_ir(blend7, signature(blend7, args)[0], debug=False, lower=True)[0]
    prog = render_spirv(ir, caps={"max_push": 128, "int64_atomics": True}, narrow=True)
    assert (prog.block_bytes, prog.push) == (140, False)
    blend7(*args)
    s.finish()
    want = hs[6] + sum(hs[:6])
    written = s.descriptors.written
    submitted = s.submitted
    for k in range(2, 6):  # recorded into one batch
        blend7(np.float32(k), *arrays[:6], arrays[6])
        want = want * np.float32(k) + sum(hs[:6])
    assert s.submitted == submitted
    np.testing.assert_allclose(arrays[6].to_device("cpu"), want, rtol=1e-6)
    assert s.descriptors.written == written


def test_a_batch_submitted_before_replays_its_recording(device):
    # A launch and a finish, repeated: the second batch holds the same commands as the
    # first, so the command buffer recorded for the first is submitted again (and runs
    # again: y accumulates). Other push constants are other commands; the descriptor cache
    # starting over drops every kept recording (they name its sets).
    s = _stream.stream(_instance.state(qd.Device(device).index))
    hx, want, x, y = _arrays(device, 1000, 5)
    axpy(np.float32(0.0), x, y)  # the first launch also compiles and sets up its launcher
    s.finish()
    replayed, submitted = s.replayed, s.submitted
    for _ in range(4):
        axpy(np.float32(2.0), x, y)
        s.finish()
        want = np.float32(2.0) * hx + want
    assert s.submitted - submitted == 4
    assert s.replayed - replayed == 3
    np.testing.assert_allclose(y.to_device("cpu"), want, rtol=1e-6)
    replayed = s.replayed
    axpy(np.float32(3.0), x, y)
    s.finish()
    assert s.replayed == replayed
    want = np.float32(3.0) * hx + want
    np.testing.assert_allclose(y.to_device("cpu"), want, rtol=1e-6)
    assert s.replays
    s._forget_sets()
    assert not s.replays
    replayed = s.replayed  # (a device whose reads copy through staging replayed that copy)
    axpy(np.float32(2.0), x, y)
    s.finish()
    assert s.replayed == replayed
    np.testing.assert_allclose(y.to_device("cpu"), np.float32(2.0) * hx + want, rtol=1e-6)


def test_replayed_reverse_launches_report_overflow_at_their_read(device):
    # The reverse launch's batch (its stages and the overflow flags' read) replays from the
    # second call on; gradients stay right, and an overflow is still raised at the read.
    from qdarray.ad.sizing import at_launch as sizer

    @qd.kernel
    def walk(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
        for i in range(x.shape[0]):
            v = x[i]
            for _ in range(a[i]):
                v = v - 0.1 * v * v + 0.01
            y[0] += v

    s = _stream.stream(_instance.state(qd.Device(device).index))
    rng = np.random.default_rng(1)
    hx = rng.random(300, dtype=np.float32)
    ha = rng.integers(0, 16, 300).astype(np.int32)
    x = qd.asarray(hx, device=device, requires_grad=True)
    a = qd.asarray(ha, device=device)
    y = qd.zeros(1, dtype=qd.float32, device=device, requires_grad=True)
    y.grad[...] = 1.0
    d = np.ones(300)
    v = hx.astype(np.float64)
    for k in range(16):
        live = k < ha
        d = np.where(live, d * (1 - 0.2 * v), d)
        v = np.where(live, v - 0.1 * v * v + 0.01, v)
    walk(x, a, y)
    replayed = s.replayed
    for n in range(1, 4):
        walk.grad(x, a, y)
        np.testing.assert_allclose(x.grad.to_device("cpu"), n * d, rtol=1e-4)
    assert s.replayed > replayed
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(sizer, "_TEST_CAPACITY_OVERRIDE", 2)
        for _ in range(2):  # the second time replayed, and raised all the same
            with pytest.raises(qd.ad.AdStackOverflowError, match="capacity 2"):
                walk.grad(x, a, y)
    x.grad[...] = 0.0
    walk.grad(x, a, y)  # no overflow left over from the launches before
    np.testing.assert_allclose(x.grad.to_device("cpu"), d, rtol=1e-4)


def test_a_narrow_block_in_push_constants_of_a_larger_limit_validates(device, spirv_val,
                                                                       tmp_path):
    # On a device with 256 bytes of push constants (NVIDIA's) the 140-byte block above is
    # push constants; lavapipe builds no pipeline from that module, so spirv-val checks it.
    import subprocess

    from qdarray.kernels.codegen.spirv.render import render_spirv
    from qdarray.kernels.launch import build_ir, signature

    arrays = [qd.zeros(8, dtype=qd.float32, device=device) for _ in range(7)]
    args = [np.float32(1.0), *arrays]
    ir = build_ir(blend7, signature(blend7, args)[0], debug=False, lower=True)[0]
    prog = render_spirv(ir, caps={"max_push": 256, "int64_atomics": True}, narrow=True)
    assert (prog.block_bytes, prog.push) == (140, True)
    for k, stage in enumerate(prog.stages):
        path = tmp_path / f"stage{k}.spv"
        path.write_bytes(stage.spirv)
        done = subprocess.run([spirv_val, "--target-env", "vulkan1.2", str(path)],
                              capture_output=True, text=True)
        assert done.returncode == 0, done.stderr


def test_barriers_name_only_accesses_their_stages_perform(device):
    # VUID-vkCmdPipelineBarrier-srcAccessMask-02815 / dstAccessMask-02816: a barrier
    # between two commands (compute and transfer stages) cannot name the host's writes;
    # those made between batches are visible to a submission without one.
    vk = _stream.api()
    s = _stream.stream(_instance.state(qd.Device(device).index))
    host = vk.VK_ACCESS_HOST_READ_BIT | vk.VK_ACCESS_HOST_WRITE_BIT
    assert not s._stages & vk.VK_PIPELINE_STAGE_HOST_BIT
    assert s._barrier.srcAccessMask & host == 0
    assert s._barrier.dstAccessMask & host == 0
    assert s._end_barrier.srcAccessMask & host == 0  # (its destination holds the host stage)


def test_a_batch_ends_with_a_barrier_for_the_host_and_later_batches(device):
    # Submission order makes no write visible: the barrier ending a batch has the host's reads
    # and the compute and transfer work of later submissions in its second scope (NVIDIA's
    # driver returned stale data to a later batch's reads without a dependency).
    vk = _stream.api()
    s = _stream.stream(_instance.state(qd.Device(device).index))
    assert s._end_stages & vk.VK_PIPELINE_STAGE_HOST_BIT
    assert s._end_stages & s._stages == s._stages
    reads = (vk.VK_ACCESS_HOST_READ_BIT | vk.VK_ACCESS_SHADER_READ_BIT
             | vk.VK_ACCESS_TRANSFER_READ_BIT)
    assert s._end_barrier.dstAccessMask & reads == reads
    writes = vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT
    assert s._end_barrier.srcAccessMask & writes == writes


VALIDATION = Path("/usr/share/vulkan/explicit_layer.d/VkLayer_khronos_validation.json")
LAUNCHES = """
import numpy as np
import qdarray as qd

@qd.kernel
def walk(x: qd.Array[qd.float32, 1], a: qd.Array[qd.int32, 1], y: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(a[i]):
            v = v - 0.1 * v * v + 0.01
        y[0] += v

for n in (70, 300):
    x = qd.asarray(np.linspace(0.1, 0.9, n, dtype=np.float32), device=DEVICE,
                   requires_grad=True)
    a = qd.asarray(np.arange(n, dtype=np.int32) % 9, device=DEVICE)
    y = qd.zeros(1, dtype=qd.float32, device=DEVICE, requires_grad=True)
    for _ in range(3):  # uploads, launches, replays, reverse launches, reads
        walk(x, a, y)
        y.grad[...] = 1.0
        walk.grad(x, a, y)
        x[1:5] = x[0:4] * 2.0
    print(float(qd.sum(x.grad)))
"""


@pytest.mark.skipif(not VALIDATION.exists(),
                    reason="the Khronos validation layer is not installed "
                           "(apt-get install vulkan-validationlayers)")
def test_launches_pass_the_validation_layer(device, tmp_path):
    import os
    import subprocess
    import sys

    script = tmp_path / "launches.py"
    script.write_text(f"DEVICE = {device!r}\n" + LAUNCHES)
    env = dict(os.environ, VK_INSTANCE_LAYERS="VK_LAYER_KHRONOS_validation")
    done = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                          env=env, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout + done.stderr
    assert "Validation Error" not in out, out[:3000]
    assert "VUID" not in out, out[:3000]


@qd.kernel
def put(s: qd.float32, y: qd.Array[qd.float32, 1]):
    for i in range(y.shape[0]):
        y[i] = s


def test_a_launch_packing_like_the_last_repeats_its_dispatches(device):
    # A launch whose arguments pack as the variant's last launch did (the same scalars bit
    # for bit, every array on the same buffer with the same offset, shape and strides)
    # issues the same dispatches without evaluating or packing anything; any difference
    # (a sign of zero, a view's offset, a shape, another buffer) packs afresh.
    y = qd.ones(64, dtype=qd.float32, device=device)
    put(np.float32(1.0), y)
    launcher = next(iter(put._launchers[False].values()))
    calls = []
    evaluate = launcher.plan.evaluate_host

    def counted(env):
        calls.append(1)
        evaluate(env)

    launcher.plan.evaluate_host = counted
    try:
        gen = y._buffer.generation
        for value in (1.0, 1.0, 0.0, -0.0, -0.0, float("nan"), float("nan")):
            put(np.float32(value), y)
            got = np.asarray(y.to_device("cpu"))
            np.testing.assert_array_equal(got, np.full(64, value, np.float32))
            assert np.signbit(got).all() == np.signbit(value)
        assert y._buffer.generation == gen + 7  # every launch counts as a write
        assert len(calls) == 3  # 0.0, -0.0 and nan pack once each (1.0 was packed before)
        put(np.float32(5.0), y[:32])
        put(np.float32(6.0), y[32:])  # same shape, another offset
        put(np.float32(7.0), y[32:48])  # same offset, another shape
        put(np.float32(7.0), y[32:48])
        want = np.array([5.0] * 32 + [7.0] * 16 + [6.0] * 16, np.float32)
        np.testing.assert_array_equal(np.asarray(y.to_device("cpu")), want)
        assert len(calls) == 6
        z = qd.zeros(64, dtype=qd.float32, device=device)
        put(np.float32(7.0), z[32:48])  # another buffer
        np.testing.assert_array_equal(np.asarray(z.to_device("cpu"))[32:48], 7.0)
        assert not np.asarray(z.to_device("cpu"))[:32].any()
        assert len(calls) == 7
    finally:
        del launcher.plan.evaluate_host


def test_waits_read_the_timeline_and_retire_every_batch_it_covers(device, monkeypatch):
    # Each submission signals the next value of the stream's timeline semaphore; a wait
    # for a later batch retires the earlier ones, and at most five batches are in flight.
    s = _stream.stream(_instance.state(qd.Device(device).index))
    monkeypatch.setattr(_stream, "BATCH_COMMANDS", 3)
    hx, want, x, y = _arrays(device, 5000, 6)
    s.finish()
    ticket = s.ticket
    for _ in range(40):
        axpy(np.float32(0.5), x, y)
        want = np.float32(0.5) * hx + want
        assert len(s.in_flight) <= 5
    assert s.ticket - ticket >= 13
    s.finish()
    assert not s.in_flight and s.reached == s.ticket
    np.testing.assert_allclose(y.to_device("cpu"), want, rtol=1e-5)
