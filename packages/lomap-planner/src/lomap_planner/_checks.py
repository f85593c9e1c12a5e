"""Named checks of scalar hyper-parameters shared by the planners, trainers and collectors."""

from __future__ import annotations

import math
import numbers

__all__: list[str] = []


def check_int(name: str, value: object, low: int = 1) -> int:
    """``value`` as an int ``>= low``; numpy ints pass, bools and floats do not."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < low:
        raise ValueError(f"{name} must be >= {low}, got {value}")
    return int(value)


def check_seed(name: str, value: object) -> int | None:
    """A non-negative int seed, or None."""
    return None if value is None else check_int(name, value, 0)


def check_real(name: str, value: object, low: float = -math.inf, *, strict: bool = False) -> float:
    """``value`` as a finite float ``>= low`` (``> low`` when ``strict``)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__}")
    v = float(value)
    if not math.isfinite(v) or v < low or (strict and v == low):
        bound = f"> {low:g}" if strict else (f">= {low:g}" if math.isfinite(low) else "finite")
        raise ValueError(f"{name} must be {bound} and finite, got {value!r}")
    return v


def check_bool(name: str, value: object) -> bool:
    """A real bool (``bool("no")`` is True)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {type(value).__name__}")
    return value
