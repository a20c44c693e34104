"""The Vulkan runtime: device order, features, the buffer pool, batched submission, timestamp
queries, and errors that name the device."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import qdarray as qd
from qdarray.backends.vulkan import _instance, _memory, _stream
from qdarray.backends.vulkan._array import VkArray


def test_devices_are_listed_in_the_documented_order(device):
    devices = _instance.physical_devices()
    ranks = [{2: 0, 1: 1, 3: 2, 4: 3}.get(p.type, 4) for p in devices]
    assert ranks == sorted(ranks)
    listed = [d for d in qd.__array_namespace_info__().devices() if d.kind == "vulkan"]
    assert listed == [qd.Device(f"vulkan:{i}") for i in range(len(devices))]
    with pytest.raises(ValueError, match=r"no Vulkan device vulkan:99; present: vulkan:0 \("):
        qd.zeros(3, device="vulkan:99")


def test_device_state_reports_limits_features_and_memory(device):
    st = _instance.state(0)
    assert st.label.startswith("vulkan:0 (") and st.name in st.label
    assert st.limits["maxPushConstantsSize"] >= 128  # the minimum Vulkan guarantees
    assert st.limits["maxComputeWorkGroupInvocations"] >= 128
    assert set(st.features) >= {"int64", "float64", "int64_atomics", "float32_atomic_add"}
    assert st.heap_sizes and all(size > 0 for size in st.heap_sizes)
    assert st.timestamp_bits > 0 and st.timestamp_period > 0


def test_pool_rounds_sizes_and_reuses_released_buffers(device):
    assert [_memory.size_class(n) for n in (1, 256, 257, 4000, (1 << 20) + 1)] == [
        256, 256, 512, 4096, 2 << 20]
    st = _instance.state(0)
    pool = _memory.pool(st)
    _stream.stream(st).finish()
    gc.collect()
    gc.disable()  # no other array released in between
    try:
        a = pool.alloc(3000)
        assert a.size == 4096
        before = pool.active_bytes
        block = a.block
        del a  # back to the pool, which keeps it
        assert pool.active_bytes == before - 4096
        assert pool.free[(4096, False)][-1] is block
        b = pool.alloc(4000)  # the same size class: the same buffer again
        assert b.block is block
        del b  # and back again: every loan returns (not only the first)
        assert pool.active_bytes == before - 4096
        assert pool.free[(4096, False)][-1] is block
    finally:
        gc.enable()
    exact = pool.alloc(3000, exact=True)
    assert exact.size == 3000


def test_a_buffer_in_use_by_queued_work_is_not_recycled_early(device):
    st = _instance.state(0)
    s = _stream.stream(st)
    pool = _memory.pool(st)
    s.finish()
    src = VkArray.from_host(st, np.arange(1 << 16, dtype=np.float32))
    dst = VkArray.empty(st, (1 << 16,), np.float32)
    assert src.alloc is not None and dst.alloc is not None
    s.copy(src.alloc, 0, dst.alloc, 0, src.nbytes)
    held = src.alloc
    del src
    # The queued copy keeps the source: the pool has not been given it back yet.
    assert all(held.block is not b for bucket in pool.free.values() for b in bucket)
    np.testing.assert_array_equal(dst.to_host(), np.arange(1 << 16, dtype=np.float32))


def test_commands_are_ordered_and_submitted_in_batches(device):
    st = _instance.state(0)
    s = _stream.stream(st)
    s.finish()
    x = VkArray.from_host(st, np.zeros(1024, np.int32))
    assert x.alloc is not None
    submitted = s.submitted
    for value in range(1, 11):  # each fill overwrites the last: order matters
        s.fill(x.alloc, 0, 4096, value)
    assert s.submitted == submitted  # recorded, not yet submitted
    np.testing.assert_array_equal(x.to_host(), 10)
    assert s.submitted == submitted + 1  # one batch for all ten


def test_timer_measures_device_time(device):
    st = _instance.state(0)
    s = _stream.stream(st)
    x = VkArray.empty(st, (1 << 20,), np.float32)
    y = VkArray.empty(st, (1 << 20,), np.float32)
    assert x.alloc is not None and y.alloc is not None
    t = s.timer()
    t.start()
    for _ in range(4):
        s.copy(x.alloc, 0, y.alloc, 0, x.nbytes)
    t.stop()
    elapsed = t.elapsed_ns()
    assert 0 < elapsed < 60e9


def test_out_of_memory_is_a_memory_error_naming_the_device(device):
    st = _instance.state(0)
    too_big = 1 << 50
    with pytest.raises(MemoryError, match=r"vulkan:0 \(.*cannot allocate"):
        _memory.pool(st).alloc(too_big, exact=True)


def test_transfers_through_staging_buffers(device, monkeypatch):
    # Discrete GPUs keep arrays in memory the host cannot map: uploads and downloads go
    # through staging buffers and copy commands. Forced here on whatever device runs the tests.
    st = _instance.state(0)
    pool = _memory.pool(st)
    monkeypatch.setattr(pool, "mapped", False)
    values = np.arange(3 * 7 * 11, dtype=np.float64 if st.features["float64"]
                       else np.float32).reshape(3, 7, 11)
    # An exact size no pooled (mapped) buffer has: a fresh, unmapped allocation.
    x = VkArray.empty(st, values.shape, values.dtype)
    assert x.alloc is not None
    fresh = pool.alloc(x.alloc.size + 8, exact=True)
    assert fresh.host is None
    x = VkArray(st, fresh, values.dtype, values.shape,
                tuple(s for s in values.strides), 0)
    x.write_host(values)
    np.testing.assert_array_equal(x.to_host(), values)
    v = x.basic_view((slice(None), slice(1, None, 3), slice(None, None, -2)))
    v.write_host(-1.0)
    values[:, 1::3, ::-2] = -1.0
    np.testing.assert_array_equal(x.to_host(), values)


def test_memory_type_choice_maps_only_host_memory(device, monkeypatch):
    # A discrete GPU whose video memory the host can map (resizable BAR) still keeps arrays
    # in unmapped device memory, with staging transfers; a CPU implementation maps.
    from dataclasses import replace

    st = _instance.state(0)
    bar = 0x1 | 0x2 | 0x4  # device-local, host-visible, coherent
    types = [(0x1, 0), (bar, 0), (0x2 | 0x4 | 0x8, 1)]
    gpu = replace(st, type=2, memory_types=types, heap_sizes=[80 << 30, 64 << 30])
    assert _memory._device_type(gpu) == (0, False)
    cpu = replace(st, type=4, memory_types=types, heap_sizes=[80 << 30, 64 << 30])
    assert _memory._device_type(cpu) == (1, True)
    only_bar = replace(gpu, memory_types=[(bar, 0), (0x2 | 0x4, 1)])
    assert _memory._device_type(only_bar) == (0, True)
    assert _memory._staging_type(gpu) == 2  # host-visible, coherent and cached


def test_no_loader_means_no_devices_and_a_clear_error(device, monkeypatch):
    from qdarray.backends.vulkan import _binding

    monkeypatch.setattr(_binding, "vk", None)
    monkeypatch.setattr(_binding, "_LOAD_ERROR", "libvulkan.so.1: cannot open shared object")
    monkeypatch.setattr(_instance, "_physical", None)
    assert qd.Device("vulkan:0").backend.devices() == []
    with pytest.raises(_binding.VulkanUnavailableError, match=r"libvulkan\.so\.1.*apt-get"):
        _instance.physical_devices()


def test_a_driver_the_loader_cannot_use_means_no_vulkan_devices(tmp_path):
    # the loader is present but its only driver does not load (VkErrorIncompatibleDriver from
    # vkCreateInstance): the namespace lists no Vulkan device and a Vulkan array names why
    import json
    import os
    import subprocess
    import sys

    icd = tmp_path / "icd.json"
    icd.write_text(json.dumps({"file_format_version": "1.0.0", "ICD": {
        "library_path": str(tmp_path / "missing.so"), "api_version": "1.3.0"}}))
    code = ("import qdarray as qd\n"
            "print([str(d) for d in qd.__array_namespace_info__().devices()])\n"
            "try:\n    qd.zeros(2, device='vulkan:0')\n"
            "except RuntimeError as exc:\n    print(type(exc).__name__, exc)\n")
    env = dict(os.environ, VK_DRIVER_FILES=str(icd), VK_ICD_FILENAMES=str(icd))
    run = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         timeout=120, check=False)
    assert run.returncode == 0, run.stderr
    listed, error = run.stdout.splitlines()[:2]
    assert "vulkan" not in listed
    assert error.startswith("VulkanUnavailableError No usable Vulkan driver") and \
        "VkErrorIncompatibleDriver" in error and "VK_DRIVER_FILES" in error
