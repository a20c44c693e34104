"""A func named like one in test_view_debug.py, in another file: call stacks keep both frames."""

from __future__ import annotations

import qdarray as qd


@qd.func
def store(w, i, value):
    w[i] = value  # marker: helpers store
