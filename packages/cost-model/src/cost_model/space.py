"""Schedule spaces: knobs tagged homogeneous (shared across hardware) or heterogeneous (spec §2.2).

A configuration is a plain ``dict`` knob -> value. Homogeneous knobs are encoded against one
global vocabulary (:data:`SHARED_KNOBS`) so that every platform's shared knobs land in the same
input slots of the model; a platform lacking a shared knob gets index 0 ("absent") there.
Heterogeneous knobs are encoded per platform (value indices), for that platform's mapper.
"""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

__all__ = ["SHARED_KNOBS", "Knob", "ScheduleSpace", "bsr_block_valid"]

#: Global vocabulary of homogeneous knobs (value order fixes the encoding).
SHARED_KNOBS: dict[str, tuple[object, ...]] = {
    "format": ("csr", "coo", "bsr"),
    "block": (1, 2, 4, 8),
    "row_panel": (0, 256, 1024, 4096),
    "col_tile": (0, 8, 16, 32),
    "threads": (1, 2),
}


@dataclass(frozen=True)
class Knob:
    """One tunable knob.

    Attributes
    ----------
    name : str
    values : tuple
        Allowed values; ``values[0]`` is the default unless the space says otherwise.
    group : {"hom", "het"}
        Homogeneous knobs must be in :data:`SHARED_KNOBS` with a subset of its values.
    """

    name: str
    values: tuple[object, ...]
    group: str

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name:
            raise TypeError(f"name must be a non-empty str, got {self.name!r}")
        if self.group not in ("hom", "het"):
            raise ValueError(f"group must be 'hom' or 'het', got {self.group!r}")
        if isinstance(self.values, str | bytes) or not isinstance(self.values, Sequence):
            # a bare "csr" would be the three values "c", "s", "r"
            raise TypeError(f"values of knob {self.name!r} must be a sequence, got {self.values!r}")
        object.__setattr__(self, "values", tuple(self.values))
        if not self.values:
            raise ValueError(f"knob {self.name!r} has no values")
        if any(_index(self.values, v) != i for i, v in enumerate(self.values)):
            raise ValueError(f"values of knob {self.name!r} has duplicates: {self.values}")
        if self.group == "hom":
            if self.name not in SHARED_KNOBS:
                raise ValueError(
                    f"name {self.name!r}: a hom knob must be one of SHARED_KNOBS "
                    f"{sorted(SHARED_KNOBS)} (or use group='het')"
                )
            bad = [v for v in self.values if _index(SHARED_KNOBS[self.name], v) is None]
            if bad:
                raise ValueError(f"hom knob {self.name!r} has values outside SHARED_KNOBS: {bad}")


def _index(values: tuple, v: object) -> int | None:
    """Position of ``v`` in ``values``, where True is not 1 (``True in (1, 2)`` holds)."""
    for i, x in enumerate(values):
        if x == v and isinstance(x, bool | np.bool_) == isinstance(v, bool | np.bool_):
            return i
    return None


def bsr_block_valid(cfg: dict[str, object]) -> bool:
    """``block`` must be 1 exactly when the format is not BSR."""
    if "block" not in cfg:
        return True
    return (cfg.get("format") == "bsr") == (cfg["block"] != 1)


class ScheduleSpace:
    """Product of knobs plus a validity predicate.

    Parameters
    ----------
    knobs : sequence of Knob
    default : dict
        The default configuration (speedup denominator); must be valid.
    valid : callable, optional
        ``valid(cfg) -> bool``; default :func:`bsr_block_valid`.
    """

    def __init__(
        self,
        knobs: Sequence[Knob],
        default: dict[str, object],
        valid: Callable[[dict[str, object]], bool] | None = None,
    ) -> None:
        if isinstance(knobs, Knob) or not isinstance(knobs, Sequence) or not knobs:
            raise TypeError("knobs must be a non-empty sequence of Knob")
        if not all(isinstance(k, Knob) for k in knobs):
            raise TypeError("knobs must hold Knob objects")
        names = [k.name for k in knobs]
        if len(set(names)) != len(names):
            raise ValueError("knobs must have unique names")
        if valid is not None and not callable(valid):
            raise TypeError(f"valid must be a callable cfg -> bool, got {type(valid).__name__}")
        if not isinstance(default, dict):
            raise TypeError(f"default must be a dict knob -> value, got {type(default).__name__}")
        self.knobs = tuple(knobs)
        self.valid = valid or bsr_block_valid
        self._default = dict(default)
        try:
            self.check(self._default)
        except ValueError as e:
            raise ValueError(f"default: {e}") from e

    @property
    def hom_knobs(self) -> tuple[Knob, ...]:
        return tuple(k for k in self.knobs if k.group == "hom")

    @property
    def het_knobs(self) -> tuple[Knob, ...]:
        return tuple(k for k in self.knobs if k.group == "het")

    def check(self, cfg: dict[str, object]) -> dict[str, object]:
        """Raise ValueError unless ``cfg`` sets every knob to an allowed value and is valid."""
        if not isinstance(cfg, dict):
            raise TypeError(f"config must be a dict, got {type(cfg).__name__}")
        names = {k.name for k in self.knobs}
        extra = set(cfg) - names
        if extra:
            raise ValueError(f"config has unknown knobs {sorted(extra)}")
        for k in self.knobs:
            if k.name not in cfg:
                raise ValueError(f"config is missing knob {k.name!r}")
            if _index(k.values, cfg[k.name]) is None:
                raise ValueError(
                    f"config knob {k.name!r} has value {cfg[k.name]!r}, allowed {k.values}"
                )
        if not self.valid(cfg):
            raise ValueError(f"config is not valid in this space: {cfg}")
        return cfg

    def default(self) -> dict[str, object]:
        """The default configuration (a copy)."""
        return dict(self._default)

    def enumerate(self) -> list[dict[str, object]]:
        """All valid configurations, in knob-product order."""
        out = []
        for vals in itertools.product(*(k.values for k in self.knobs)):
            cfg = dict(zip((k.name for k in self.knobs), vals, strict=True))
            if self.valid(cfg):
                out.append(cfg)
        return out

    def sample(
        self, n: int, *, seed: int = 0, include_default: bool = True
    ) -> list[dict[str, object]]:
        """``n`` distinct valid configurations (fewer if the space is smaller), deterministic.

        With ``include_default`` the default is the first element.
        """
        if isinstance(n, bool) or not isinstance(n, numbers.Integral) or n < 1:
            raise ValueError(f"n must be an int >= 1, got {n!r}")
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise ValueError(f"seed must be a non-negative int, got {seed!r}")
        if not isinstance(include_default, bool | np.bool_):
            raise TypeError(f"include_default must be a bool, got {type(include_default).__name__}")
        n = int(n)
        allc = self.enumerate()
        rng = np.random.default_rng(int(seed))
        d = self._default
        rest = [c for c in allc if c != d] if include_default else allc
        take = min(n - int(include_default), len(rest))
        picked = [rest[i] for i in rng.choice(len(rest), size=take, replace=False)]
        return ([self.default()] if include_default else []) + picked

    def encode(self, cfg: dict[str, object]) -> dict[str, np.ndarray]:
        """``{"hom": (len(SHARED_KNOBS),) int, "het": (len(het_knobs),) int}``.

        hom entries are 1 + index in :data:`SHARED_KNOBS` (0 = knob absent on this platform);
        het entries are indices into the knob's values.
        """
        self.check(cfg)
        hom = np.zeros(len(SHARED_KNOBS), dtype=np.int64)
        for j, (name, vocab) in enumerate(SHARED_KNOBS.items()):
            if name in cfg and any(k.name == name and k.group == "hom" for k in self.knobs):
                hom[j] = 1 + _index(vocab, cfg[name])
        het = np.array([_index(k.values, cfg[k.name]) for k in self.het_knobs], dtype=np.int64)
        return {"hom": hom, "het": het}

    def decode(self, hom: np.ndarray, het: np.ndarray) -> dict[str, object]:
        """Inverse of :meth:`encode`."""
        hom, het = np.asarray(hom), np.asarray(het)
        for name, a, n in (("hom", hom, len(SHARED_KNOBS)), ("het", het, len(self.het_knobs))):
            if a.shape != (n,) or (a.size and a.dtype.kind not in "iu"):
                raise ValueError(f"{name} must be {n} integer codes, got {a.dtype} {a.shape}")
        for j, (name, vals) in enumerate(SHARED_KNOBS.items()):
            if not 0 <= hom[j] <= len(vals):
                raise ValueError(f"hom code {hom[j]} for {name!r} is outside [0, {len(vals)}]")
        for k, code in zip(self.het_knobs, het, strict=True):
            if not 0 <= code < len(k.values):  # a negative code wrapped to the last value
                raise ValueError(f"het code {code} for {k.name!r} is outside [0, {len(k.values)})")
        cfg: dict[str, object] = {}
        vocab = list(SHARED_KNOBS.items())
        hom_names = {k.name for k in self.hom_knobs}
        for j, (name, vals) in enumerate(vocab):
            if name in hom_names:
                if hom[j] == 0:
                    raise ValueError(f"hom code for {name!r} is 0 (absent) but the knob exists")
                cfg[name] = vals[int(hom[j]) - 1]
        for k, code in zip(self.het_knobs, het, strict=True):
            cfg[k.name] = k.values[int(code)]
        return self.check(cfg)

    def __repr__(self) -> str:
        return "ScheduleSpace(" + ", ".join(f"{k.name}:{k.group}" for k in self.knobs) + ")"
