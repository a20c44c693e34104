"""A misspelt keyword argument of a kernel or func call names the keyword, the parameters and
the nearest one (Python's own `bind` reports a missing parameter first, naming another)."""

from __future__ import annotations

import re

import numpy as np
import pytest

import qdarray as qd


@qd.kernel
def scaled(x: qd.Array[qd.float32, 1], scale: qd.float32, out: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        out[i] = x[i] * scale


@qd.func
def times(a, b):
    return a * b


@qd.kernel
def calls_with_a_typo(x: qd.Array[qd.float32, 1]):
    for i in range(x.shape[0]):
        x[i] = times(x[i], bb=2.0)


X = np.ones(3, np.float32)


def test_kernel_keyword_typo():
    with pytest.raises(qd.KernelTypeError) as info:
        scaled(X, scael=2.0, out=X.copy())
    assert isinstance(info.value, TypeError)
    assert str(info.value) == ("scaled() got an unexpected keyword argument 'scael'; its "
                               "parameters are x, scale, out. Did you mean 'scale'?")


def test_unknown_keyword_without_a_near_name():
    with pytest.raises(qd.KernelTypeError, match=re.escape(
            "scaled() got an unexpected keyword argument 'zzz'; its parameters are x, scale, "
            "out.")):
        scaled(X, 2.0, X.copy(), zzz=1)


def test_reverse_keyword_typo():
    with pytest.raises(qd.KernelTypeError, match="unexpected keyword argument 'scael'"):
        scaled.grad(X, scael=2.0, out=X.copy())


def test_func_keyword_typo():
    with pytest.raises(qd.KernelSyntaxError) as info:
        calls_with_a_typo(X.copy())
    first = str(info.value).splitlines()[0]
    assert first == ("Cannot call func 'times': it got an unexpected keyword argument 'bb'; "
                     "its parameters are a, b. Did you mean 'b'?")
    assert str(info.value).endswith("Use the func's parameter names.")


def test_keywords_that_exist_still_bind():
    out = np.zeros(3, np.float32)
    scaled(X, out=out, scale=3.0)
    assert out.tolist() == [3.0, 3.0, 3.0]
