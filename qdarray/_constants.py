"""Constants of the standard."""

from __future__ import annotations

import math

e = math.e
"""Euler's number, the base of natural logarithms (2.718...)."""

inf = math.inf
"""Positive infinity (IEEE 754)."""

nan = math.nan
"""Not a Number (IEEE 754 quiet NaN)."""

newaxis = None
"""Index with it to insert a length-1 axis: `x[:, qd.newaxis]`."""

pi = math.pi
"""The ratio of a circle's circumference to its diameter (3.14159...)."""
