"""Tapes inside tapes: what an inner tape may not record of arrays an enclosing one
differentiates (reverse mode over in-place writes and kernel launches is not supported)."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from ..._autodiff import TAPES


def check_nested(what: str, arrays: Sequence[Any], inner: Any = None) -> None:
    """Raise when one of `arrays` is differentiated by a tape recording in this thread
    (other than `inner`, the tape `what` is recorded on)."""
    me = threading.get_ident()
    for outer in TAPES:
        if outer is inner or outer.thread != me or not outer.recording:
            continue
        for x in arrays:
            if outer.owns(x):
                raise nested_error(what)


def nested_error(what: str) -> NotImplementedError:
    return NotImplementedError(
        f"{what} inside a nested qd.ad.Tape (or qd.ad.grad) uses an array that an enclosing "
        "tape differentiates (one it computed, or an argument of the enclosing qd.ad.grad). "
        "An enclosing tape differentiates the namespace operations and the reverse of an inner "
        "one (gradients of gradients), but not in-place writes or kernel launches there: "
        "their reverse writes gradients in place. Write into a new array instead (qd.where, "
        "qd.concat), take the inner gradient outside the enclosing tape, or use "
        "qd.ad.stop_gradient(x) if it is meant as a constant.")
