"""The standard's `fft` extension: discrete Fourier transforms and their helpers.

Transforms keep precision: float32 / complex64 input gives complex64 (or float32 for the
inverse real transforms), float64 / complex128 gives complex128 (or float64). Integer input is
rejected rather than converted silently. `norm` is "backward" (default: no scaling forward,
1/n inverse), "ortho" (1/sqrt(n) both ways) or "forward" (1/n forward).

Example::

    import qdarray as qd
    x = qd.asarray([0.0, 1.0, 0.0, -1.0])
    qd.fft.rfft(x)                      # [0, -2j, 0]
    qd.fft.fftfreq(4, d=0.5)            # [0, 0.5, -1, -0.5]
"""

from __future__ import annotations

import operator
from typing import Any

from .. import _dtypes
from .._array import Array
from .._autodiff import TAPES, defvjp, record
from .._axis import normalize_axes, normalize_axis
from .._creation_functions import full, zeros
from .._devices import Device, as_device
from .._dispatch import require_array
from .._elementwise_functions import conj
from .._manipulation_functions import concat, reshape

__all__ = [
    "fft", "ifft", "fftn", "ifftn", "rfft", "irfft", "rfftn", "irfftn", "hfft", "ihfft",
    "fftfreq", "rfftfreq", "fftshift", "ifftshift",
]

_NORMS = ("backward", "ortho", "forward")


def _check(arg: Any, func: str, category: str, norm: str) -> Device:
    x = require_array(arg, f"fft.{func}")
    _dtypes.check_category(x._dtype, category, f"fft.{func}")
    if x.ndim == 0:
        raise ValueError(f"fft.{func} needs an array of at least 1 dimension; got a 0-D array.")
    if norm not in _NORMS:
        raise ValueError(f"fft.{func} norm must be one of {_NORMS}; got {norm!r}.")
    return x._device


def _length(n: Any, func: str, name: str = "n") -> int:
    try:
        value = operator.index(n)
    except TypeError:
        raise TypeError(f"fft.{func} {name} must be an integer; got {n!r}.") from None
    if value < 1:
        raise ValueError(f"fft.{func} needs {name} >= 1; got {value}.")
    return value


def _one_axis(name: str, category: str, x: Array, n: int | None, axis: int,
              norm: str) -> Array:
    device = _check(x, name, category, norm)
    axis = normalize_axis(axis, x.ndim, f"fft.{name}")
    if n is not None:
        n = _length(n, name)
    elif name in ("irfft", "hfft"):
        # The default output length 2 * (m - 1) is 0 for a single input element.
        if x.shape[axis] < 2:
            raise ValueError(
                f"fft.{name} infers n = 2 * (m - 1) = 0 from {x.shape[axis]} element along "
                f"axis {axis}; pass n explicitly."
            )
    elif x.shape[axis] == 0:
        raise ValueError(f"fft.{name} got an empty axis {axis} (shape {x.shape}); pass n >= 1.")
    result = getattr(device.backend.xp.fft, name)(x._data, n=n, axis=axis, norm=norm)
    out = Array._new(device.backend.normalize(result), device)
    if TAPES:
        return record(f"fft.{name}", out, (x,),  # type: ignore[no-any-return]
                      {"axis": axis, "norm": norm, "n": x.shape[axis] if n is None else n})
    return out


def _many_axes(name: str, category: str, x: Array, s: Any, axes: Any, norm: str) -> Array:
    device = _check(x, name, category, norm)
    if axes is not None:
        axes = normalize_axes(axes, x.ndim, f"fft.{name}", "axes")
    if s is not None:
        s = tuple(_length(v, name, "each entry of s") for v in s)
        if axes is not None and len(s) != len(axes):
            raise ValueError(
                f"fft.{name} needs one size in s per axis; got s={s} and axes={axes}."
            )
        if axes is None:
            if len(s) > x.ndim:
                raise ValueError(
                    f"fft.{name} got {len(s)} sizes in s for an array of {x.ndim} dimensions."
                )
            axes = tuple(range(x.ndim - len(s), x.ndim))
    result = getattr(device.backend.xp.fft, name)(x._data, s=s, axes=axes, norm=norm)
    out = Array._new(device.backend.normalize(result), device)
    if TAPES:
        every = tuple(range(x.ndim - (x.ndim if s is None else len(s)), x.ndim))
        axes = every if axes is None else tuple(axes)
        sizes = tuple(x.shape[a] for a in axes) if s is None else s
        return record(f"fft.{name}", out, (x,),  # type: ignore[no-any-return]
                      {"axes": axes, "norm": norm, "s": sizes})
    return out


def fft(x: Array, /, *, n: int | None = None, axis: int = -1, norm: str = "backward") -> Array:
    """The 1-D discrete Fourier transform along `axis`, zero-padded or cropped to `n`."""
    return _one_axis("fft", "floating-point", x, n, axis, norm)


def ifft(x: Array, /, *, n: int | None = None, axis: int = -1,
         norm: str = "backward") -> Array:
    """The 1-D inverse discrete Fourier transform along `axis`."""
    return _one_axis("ifft", "floating-point", x, n, axis, norm)


def fftn(x: Array, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Array:
    """The n-D discrete Fourier transform over `axes` (all when None), sizes `s`."""
    return _many_axes("fftn", "floating-point", x, s, axes, norm)


def ifftn(x: Array, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Array:
    """The n-D inverse discrete Fourier transform over `axes` (all when None)."""
    return _many_axes("ifftn", "floating-point", x, s, axes, norm)


def rfft(x: Array, /, *, n: int | None = None, axis: int = -1,
         norm: str = "backward") -> Array:
    """The 1-D transform of real input: the n // 2 + 1 non-negative frequency terms."""
    return _one_axis("rfft", "real floating", x, n, axis, norm)


def irfft(x: Array, /, *, n: int | None = None, axis: int = -1,
          norm: str = "backward") -> Array:
    """The inverse of `rfft`: real output of length `n` (default 2 * (m - 1))."""
    return _one_axis("irfft", "floating-point", x, n, axis, norm)


def rfftn(x: Array, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Array:
    """The n-D transform of real input; the last axis keeps s[-1] // 2 + 1 terms."""
    return _many_axes("rfftn", "real floating", x, s, axes, norm)


def irfftn(x: Array, /, *, s: Any = None, axes: Any = None, norm: str = "backward") -> Array:
    """The inverse of `rfftn`: real output; pass `s` to recover odd last-axis lengths."""
    return _many_axes("irfftn", "floating-point", x, s, axes, norm)


def hfft(x: Array, /, *, n: int | None = None, axis: int = -1,
         norm: str = "backward") -> Array:
    """The transform of a Hermitian-symmetric signal given by its first half: real output
    of length `n` (default 2 * (m - 1))."""
    return _one_axis("hfft", "floating-point", x, n, axis, norm)


def ihfft(x: Array, /, *, n: int | None = None, axis: int = -1,
          norm: str = "backward") -> Array:
    """The inverse of `hfft` for real input: n // 2 + 1 complex terms."""
    return _one_axis("ihfft", "real floating", x, n, axis, norm)


def _freq(name: str, n: Any, d: Any, dtype: Any, device: Any) -> Array:
    n = _length(n, name)
    if type(d) not in (int, float) or d == 0:
        raise ValueError(f"fft.{name} needs a non-zero real sample spacing d; got {d!r}.")
    target = as_device(device)
    dt = _dtypes.normalize_dtype(dtype) or _dtypes.float64
    _dtypes.check_category(dt, "real floating", f"fft.{name}")
    if not target.backend.supports_dtype(dt._np, target):
        raise TypeError(
            f"Device {target} does not support dtype {dt}; pass dtype=qd.float32."
        )
    result = getattr(target.backend.xp.fft, name)(n, d=d, dtype=dt._np,
                                                  **target.backend.placement(target))
    return Array._new(target.backend.normalize(result), target)


def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """Sample frequencies of an `n`-point `fft` with sample spacing `d`:
    [0, 1, ..., n//2 - 1 (or (n-1)//2), -(n//2), ..., -1] / (d * n).

    Args:
        n: the transform length.
        d: the sample spacing.
        dtype: a real floating dtype (default float64).
        device: where to create the result (default the default device).
    """
    return _freq("fftfreq", n, d, dtype, device)


def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> Array:
    """Sample frequencies of an `n`-point `rfft`: [0, 1, ..., n // 2] / (d * n)."""
    return _freq("rfftfreq", n, d, dtype, device)


def _shift(name: str, x: Array, axes: Any) -> Array:
    x = require_array(x, f"fft.{name}")
    if axes is not None:
        axes = normalize_axes(axes, x.ndim, f"fft.{name}", "axes")
    device = x._device
    result = getattr(device.backend.xp.fft, name)(x._data, axes=axes)
    out = Array._new(device.backend.normalize(result), device)
    if TAPES:
        return record(f"fft.{name}", out, (x,), {"axes": axes})  # type: ignore[no-any-return]
    return out


def fftshift(x: Array, /, *, axes: Any = None) -> Array:
    """`x` with the zero-frequency term moved to the centre along `axes` (all when None)."""
    return _shift("fftshift", x, axes)


def ifftshift(x: Array, /, *, axes: Any = None) -> Array:
    """The inverse of `fftshift`."""
    return _shift("ifftshift", x, axes)


# -- vector-Jacobian products (qdarray/_autodiff.py) ------------------------------------------
# The transforms are linear, and their matrices symmetric, so a transform's VJP is the same
# transform of the cotangent, with the zero-padding or cropping of `n` undone (a crop's
# transpose pads, a pad's crops). Cotangents of real inputs are the real parts (the tape takes
# them). JAX's convention: no conjugation.

_OPPOSITE = {"backward": "forward", "ortho": "ortho", "forward": "backward"}


def _resize(z: Array, m: int, axis: int) -> Array:
    """`z` cropped, or zero-padded at the end, to length `m` along `axis`."""
    n = z.shape[axis]
    if n == m:
        return z
    if n > m:
        return z[(slice(None),) * axis + (slice(0, m),)]
    shape = list(z.shape)
    shape[axis] = m - n
    pad = zeros(tuple(shape), dtype=z.dtype, device=z.device)
    return concat([z, pad], axis=axis)


def _irfft_rule(g: Array, axis: int, norm: str, shape: tuple[int, ...]) -> Array:
    # Each input term k (0 < k < n/2) stands for itself and its conjugate mirror: weight 2.
    n = g.shape[axis]
    d = conj(rfft(g, axis=axis, norm=_OPPOSITE[norm]))
    m = d.shape[axis]
    w = full(m, 2.0, dtype=_dtypes.float64 if g.dtype == _dtypes.float64 else _dtypes.float32,
             device=g.device)
    w[0] = 1.0
    if n % 2 == 0:
        w[m - 1] = 1.0
    where = [1] * g.ndim
    where[axis] = m
    return _resize(d * reshape(w, tuple(where)), shape[axis], axis)


def _rfft_rule(g: Array, n: int, axis: int, norm: str, shape: tuple[int, ...]) -> Array:
    return _resize(fft(_resize(g, n, axis), axis=axis, norm=norm), shape[axis], axis)


def _rfftn_rule(g: Array, axes: tuple[int, ...], norm: str, s: tuple[int, ...],
                shape: tuple[int, ...]) -> Array:
    # rfftn keeps the first s[-1] // 2 + 1 terms of fftn along the last axis: pad them back.
    return _resize_axes(fftn(_resize(g, s[-1], axes[-1]), axes=axes, norm=norm), shape, axes)


def _irfftn_rule(g: Array, axes: tuple[int, ...], norm: str, shape: tuple[int, ...]) -> Array:
    # irfftn is ifftn over the other axes, then irfft along the last: transposes reversed.
    d = _irfft_rule(g, axes[-1], norm, shape)
    if len(axes) > 1:
        d = _resize_axes(ifftn(d, axes=axes[:-1], norm=norm), shape, axes[:-1])
    return d


def _resize_axes(z: Array, shape: tuple[int, ...], axes: tuple[int, ...]) -> Array:
    for a in axes:
        z = _resize(z, shape[a], a)
    return z


defvjp("fft.fft", x=lambda g, axis, norm, shape: _resize(fft(g, axis=axis, norm=norm),
                                                        shape[axis], axis))
defvjp("fft.ifft", x=lambda g, axis, norm, shape: _resize(ifft(g, axis=axis, norm=norm),
                                                         shape[axis], axis))
defvjp("fft.rfft", x=_rfft_rule)
# hfft(x) is irfft(conj(x)) and ihfft(x) is conj(rfft(x)), each with the opposite norm.
defvjp("fft.hfft", x=lambda g, axis, norm, shape: conj(_irfft_rule(g, axis, _OPPOSITE[norm],
                                                                  shape)))
defvjp("fft.ihfft", x=lambda g, n, axis, norm, shape: _rfft_rule(conj(g), n, axis,
                                                                  _OPPOSITE[norm], shape))
defvjp("fft.rfftn", x=_rfftn_rule)
defvjp("fft.irfftn", x=_irfftn_rule)
defvjp("fft.irfft", x=_irfft_rule)
defvjp("fft.fftn", x=lambda g, axes, norm, shape: _resize_axes(
    fftn(g, axes=axes, norm=norm), shape, axes))
defvjp("fft.ifftn", x=lambda g, axes, norm, shape: _resize_axes(
    ifftn(g, axes=axes, norm=norm), shape, axes))
defvjp("fft.fftshift", x=lambda g, axes: ifftshift(g, axes=axes))
defvjp("fft.ifftshift", x=lambda g, axes: fftshift(g, axes=axes))
