"""Schedule spaces: knobs tagged homogeneous (shared across hardware) or heterogeneous (spec §2.2).

A configuration is a plain ``dict`` knob -> value. Homogeneous knobs are encoded against one
global vocabulary (:data:`SHARED_KNOBS`) so that every platform's shared knobs land in the same
input slots of the model; a platform lacking a shared knob gets index 0 ("absent") there.
Heterogeneous knobs are encoded per platform (value indices), for that platform's mapper.
"""

from __future__ import annotations

import itertools
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
        if self.group not in ("hom", "het"):
            raise ValueError(f"group must be 'hom' or 'het', got {self.group!r}")
        if not self.values:
            raise ValueError(f"knob {self.name!r} has no values")
        if self.group == "hom":
            if self.name not in SHARED_KNOBS:
                raise ValueError(f"hom knob {self.name!r} is not in SHARED_KNOBS")
            bad = [v for v in self.values if v not in SHARED_KNOBS[self.name]]
            if bad:
                raise ValueError(f"hom knob {self.name!r} has values outside SHARED_KNOBS: {bad}")


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
        names = [k.name for k in knobs]
        if len(set(names)) != len(names):
            raise ValueError("knobs must have unique names")
        self.knobs = tuple(knobs)
        self.valid = valid or bsr_block_valid
        self._default = dict(default)
        self.check(self._default)

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
            if cfg[k.name] not in k.values:
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
        if n < 1:
            raise ValueError(f"n must be >= 1, got {n}")
        allc = self.enumerate()
        rng = np.random.default_rng(seed)
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
                hom[j] = 1 + vocab.index(cfg[name])
        het = np.array([k.values.index(cfg[k.name]) for k in self.het_knobs], dtype=np.int64)
        return {"hom": hom, "het": het}

    def decode(self, hom: np.ndarray, het: np.ndarray) -> dict[str, object]:
        """Inverse of :meth:`encode`."""
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
