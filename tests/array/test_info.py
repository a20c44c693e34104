"""The inspection API, __array_namespace_info__."""

from __future__ import annotations

import json

import pytest

import qdarray as qd


def test_capabilities() -> None:
    caps = qd.__array_namespace_info__().capabilities()
    assert caps["boolean indexing"] is True
    assert caps["data-dependent shapes"] is True
    assert caps["max dimensions"] == 64


def test_default_device_and_devices() -> None:
    info = qd.__array_namespace_info__()
    assert info.default_device() == qd.Device("cpu")
    devices = info.devices()
    assert type(devices) is tuple  # a tuple since the standard's 2025.12 revision
    assert devices[0] == qd.Device("cpu")
    assert len(set(devices)) == len(devices)
    assert all(isinstance(d, qd.Device) for d in devices)
    for d in devices:  # only devices that can hold arrays are listed
        assert qd.zeros(2, device=d).device == d


def test_default_dtypes() -> None:
    info = qd.__array_namespace_info__()
    expected = {"real floating": qd.float64, "complex floating": qd.complex128,
                "integral": qd.int64, "indexing": qd.int64}
    assert info.default_dtypes() == expected
    assert info.default_dtypes(device="cpu") == expected
    assert info.default_dtypes(device=qd.Device("cpu")) == expected
    assert qd.zeros(1).dtype == expected["real floating"]
    assert qd.argmax(qd.zeros(2)).dtype == expected["indexing"]


@pytest.mark.parametrize(("kind", "names"), [
    (None, ["bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
            "float32", "float64", "complex64", "complex128"]),
    ("bool", ["bool"]),
    ("signed integer", ["int8", "int16", "int32", "int64"]),
    ("unsigned integer", ["uint8", "uint16", "uint32", "uint64"]),
    ("integral", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64"]),
    ("real floating", ["float32", "float64"]),
    ("complex floating", ["complex64", "complex128"]),
    ("numeric", ["int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
                 "float32", "float64", "complex64", "complex128"]),
    (("bool", "real floating"), ["bool", "float32", "float64"]),
])
def test_dtypes_by_kind(kind: str | tuple[str, ...] | None, names: list[str]) -> None:
    got = qd.__array_namespace_info__().dtypes(device="cpu", kind=kind)
    assert sorted(got) == sorted(names)
    for name, dtype in got.items():
        assert dtype == getattr(qd, name)


def test_dtypes_errors() -> None:
    info = qd.__array_namespace_info__()
    with pytest.raises(ValueError, match="Unknown dtype kind 'float'; use one of"):
        info.dtypes(kind="float")
    with pytest.raises(ValueError, match="Unknown device 'tpu'"):
        info.dtypes(device="tpu")


def test_devices_describe_themselves() -> None:
    devices = qd.__array_namespace_info__().devices()
    descriptions = [d.description for d in devices]
    assert all(type(text) is str and text for text in descriptions)
    assert "NumPy" in qd.Device("cpu").description
    assert repr(devices[-1]) == f"Device('{devices[-1]}')"  # eval-able, as before
    for d in devices:
        if d.kind == "opencl":  # the platform and the device
            assert " on " in d.description
    assert "not present" in qd.Device("opencl:99").description


@pytest.fixture
def fresh_listing(tmp_path, monkeypatch):  # type: ignore[no-untyped-def]
    """The device listing of a fresh process with its own cache directory, restored after."""
    from qdarray.backends import discovery
    from qdarray.kernels import cache_dir

    monkeypatch.setenv("QDARRAY_CACHE_DIR", str(tmp_path))
    monkeypatch.delenv("QDARRAY_DEVICE_CACHE", raising=False)
    cache_dir.forget()
    saved = dict(discovery._listed)
    calls: list[str] = []
    real = discovery._discover

    def counting(kind: str) -> list[str]:
        calls.append(kind)
        return real(kind)

    monkeypatch.setattr(discovery, "_discover", counting)
    discovery._listed.clear()
    yield discovery, tmp_path / "devices.json", calls
    discovery._listed.clear()
    discovery._listed.update(saved)
    cache_dir.forget()


def test_device_listing_is_cached_across_processes(fresh_listing) -> None:  # type: ignore[no-untyped-def]
    discovery, path, calls = fresh_listing
    first = qd.__array_namespace_info__().devices()
    assert first == qd.__array_namespace_info__().devices()  # in-process: listed once per kind
    assert calls.count("opencl") == calls.count("vulkan") == 1 and "cpu" not in calls
    assert path.exists() and json.loads(path.read_text())["format"] == 1
    discovery._listed.clear()  # a new process: the file answers, no driver is loaded
    calls.clear()
    assert qd.__array_namespace_info__().devices() == first
    assert calls == []
    # A changed driver key (another driver, bindings, device nodes) discovers again
    data = json.loads(path.read_text())
    for kind in ("opencl", "vulkan"):
        data[kind]["key"] = "stale"
    path.write_text(json.dumps(data))
    discovery._listed.clear()
    assert qd.__array_namespace_info__().devices() == first
    assert calls.count("opencl") == calls.count("vulkan") == 1
    assert json.loads(path.read_text())["opencl"]["key"] != "stale"


@pytest.mark.parametrize("content", ["{not json", '{"format": 0}', '{"format": 1, "opencl": 3}'])
def test_a_damaged_device_cache_falls_back_to_discovery(fresh_listing, content: str) -> None:  # type: ignore[no-untyped-def]
    discovery, path, calls = fresh_listing
    expected = qd.__array_namespace_info__().devices()
    path.write_text(content)
    discovery._listed.clear()
    calls.clear()
    assert qd.__array_namespace_info__().devices() == expected
    assert "opencl" in calls


def test_device_cache_can_be_turned_off(fresh_listing, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    discovery, path, calls = fresh_listing
    monkeypatch.setenv("QDARRAY_DEVICE_CACHE", "0")
    qd.__array_namespace_info__().devices()
    assert not path.exists() and "opencl" in calls
