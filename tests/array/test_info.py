"""The inspection API, __array_namespace_info__."""

from __future__ import annotations

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
