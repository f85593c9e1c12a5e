"""The contract every public entry point of the workspace is held to, and the registries' schema.

Each package declares its entry points in ``<import_name>/_conformance.py`` (never imported by
the package itself) as plain dicts returned by ``entries()``, so the package needs no test
dependency. Three kinds:

``function`` (the default)
    ``call`` (a callable), ``kwargs`` (a valid example, keyword arguments only).
``estimator``
    ``cls`` and ``init`` (constructor keywords), ``fit`` (keywords of ``fit``), ``methods``
    (``{method: keywords}``, e.g. ``{"predict": {"X": X}}``); ``sklearn`` (run scikit-learn's
    ``check_estimator``, with ``expected_failed`` ``{check: reason}``).
``loader``
    ``write(folder) -> path`` (a file or folder in the field's real layout), ``read(path)``,
    ``check(obj)`` (asserts what was read), ``corrupt`` (names from ``CORRUPTIONS`` or
    ``(name, mutate(path))`` pairs that must raise a named error), optionally ``export(obj,
    folder) -> path`` and ``same(a, b)`` for an export round trip.

Common keys: ``name``; ``arrays`` (``{arg: kind or {kind, ndim, nan_ok, inf_ok}}``, kinds
``float``, ``labels``, ``int``, ``any``; for estimators the argument may live in ``fit`` or in a
method's keywords); ``rows`` (groups of arrays sharing their first axis); ``params``
(``{name: {type: int|float|bool|str|strs, bad: [values]}}``; an estimator's params are
constructor keywords, a function's are keywords); ``order`` (``"equivariant"``: outputs follow a
row permutation of the first ``rows`` group, ``"invariant"``: they do not change, ``None``);
``deterministic`` (default True); ``min_rows`` (inputs with fewer rows must be rejected; an int,
or ``{first key of a rows group: n}``, default 1);
``known`` (``[{kwargs, check, why}]`` known-answer cases: ``check(output)`` must hold, or, with
``raises``, the call must raise a named error); ``grid`` (``{option: [values]}``: the documented
options that change computation, constructor keywords for an estimator and keywords for a
function; every value is a grid point, one option changed at a time from the example, and each
point is held to determinism, no mutation, row order and pickling; a value given as
``{"grid_value": v, **keys}`` also replaces those entry keys, e.g. the example data a setting
needs or the ``order`` its outputs have); ``fixed`` (``{option: why}``: a switch, i.e. a keyword
with a bool or string default, that stays off the grid, with the reason: it selects which class
an entry's wrapper builds, another entry covers it, or it changes no number).

Contract (checked by ``tests/conformance/test_conformance.py``): every bad input raises a
``ValueError`` or ``TypeError`` whose message names the offending argument, or returns a finite
result; never a silent NaN/inf; no caller array is mutated; a rejected ``fit`` leaves a fitted
object's outputs unchanged; outputs are deterministic and follow row order where declared;
fitted objects pickle with identical outputs; loaders round-trip and reject corrupted files.
"""

from __future__ import annotations

import copy
import dataclasses
import inspect
import math
import pathlib
import pickle
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

try:
    import torch
except ImportError:  # pragma: no cover - every workspace environment has torch
    torch = None

ARRAY_KINDS = ("float", "labels", "int", "any")
PARAM_TYPES = ("int", "float", "bool", "str", "strs", "any")
CORRUPTIONS = ("truncate", "header", "delimiter", "empty")
ACCEPTED = (ValueError, TypeError)


class ContractError(AssertionError):
    """An entry point broke the conformance contract (the message says how)."""


# --------------------------------------------------------------------------------------------
# schema


@dataclasses.dataclass
class ArraySpec:
    kind: str = "float"
    ndim: tuple[int, ...] | None = None
    nan_ok: bool = False
    inf_ok: bool = False


@dataclasses.dataclass
class Entry:
    package: str
    name: str
    kind: str
    raw: dict[str, Any]
    arrays: dict[str, ArraySpec]
    rows: list[list[str]]
    params: dict[str, dict[str, Any]]
    order: str | None
    deterministic: bool
    min_rows: int | dict[str, int]

    @property
    def id(self) -> str:
        return f"{self.package}:{self.name}"

    def where(self, key: str) -> str:
        """Which call takes array ``key``: ``"call"``, ``"fit"`` or a method name.

        ``key`` may be qualified, ``"predict:X"``, when fit and a method share an argument name.
        """
        if self.kind != "estimator":
            return "call"
        if ":" in key:
            return key.split(":", 1)[0]
        if key in self.raw["fit"]:
            return "fit"
        for m, kw in self.raw["methods"].items():
            if key in kw:
                return m
        raise KeyError(key)

    def example(self, where: str) -> dict[str, Any]:
        if where == "call":
            return self.raw["kwargs"]
        if where == "fit":
            return self.raw["fit"]
        return self.raw["methods"][where]


KNOWN_KEYS = {
    "function": {"name", "kind", "call", "kwargs"},
    "estimator": {
        "name",
        "kind",
        "cls",
        "init",
        "fit",
        "methods",
        "sklearn",
        "not_sklearn",
        "expected_failed",
        "pickle",
        "refit_ok",
    },
    "loader": {"name", "kind", "write", "read", "check", "corrupt", "export", "same", "errors"},
}
COMMON = {
    "arrays",
    "rows",
    "params",
    "order",
    "deterministic",
    "min_rows",
    "known",
    "why",
    "output",
    "grid",
    "fixed",
    "modules",
}

# keywords no entry needs to put on its grid: they change no number the contract compares
NOT_OPTIONS = {"verbose", "device"}


def switches(entry: Entry) -> list[str]:
    """Keywords of an entry's call (constructor, for estimators) whose default is a bool or a
    non-empty string: the switches a user flips. Each must be on the entry's grid, or listed in
    its ``fixed`` with the reason it stays at the example's value."""
    if entry.kind == "loader":
        return []
    fn = entry.raw["cls"] if entry.kind == "estimator" else entry.raw["call"]
    try:
        params = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):  # builtins without a signature
        return []
    return [p.name for p in params if p.name not in NOT_OPTIONS
            and (isinstance(p.default, bool) or (isinstance(p.default, str) and p.default))]  # fmt: skip


def parse(package: str, raw: Mapping[str, Any]) -> Entry:
    """Validate one registry dict and return it as an :class:`Entry`."""
    raw = dict(raw)
    kind = raw.setdefault("kind", "function")
    if kind not in KNOWN_KEYS:
        raise ValueError(f"{package}: entry {raw.get('name')!r} has unknown kind {kind!r}")
    unknown = set(raw) - KNOWN_KEYS[kind] - COMMON
    if unknown:
        raise ValueError(f"{package}: entry {raw.get('name')!r} has unknown keys {sorted(unknown)}")
    arrays = {}
    for arg, spec in (raw.get("arrays") or {}).items():
        spec = {"kind": spec} if isinstance(spec, str) else dict(spec)
        if spec.get("kind", "float") not in ARRAY_KINDS:
            raise ValueError(f"{package}:{raw['name']}: array {arg!r} kind {spec['kind']!r}")
        if "ndim" in spec and isinstance(spec["ndim"], int):
            spec["ndim"] = (spec["ndim"],)
        arrays[arg] = ArraySpec(**spec)
    params = {}
    for p, spec in (raw.get("params") or {}).items():
        spec = dict(spec)
        if spec.get("type", "any") not in PARAM_TYPES:
            raise ValueError(f"{package}:{raw['name']}: param {p!r} type {spec.get('type')!r}")
        params[p] = spec
    entry = Entry(
        package=package,
        name=raw["name"],
        kind=kind,
        raw=raw,
        arrays=arrays,
        rows=[list(g) for g in raw.get("rows") or []],
        params=params,
        order=raw.get("order"),
        deterministic=raw.get("deterministic", True),
        min_rows=raw.get("min_rows", 1),
    )
    grid = raw.get("grid") or {}
    if kind == "loader" and grid:
        raise ValueError(f"{package}:{raw['name']}: a loader entry has no option grid")
    if grid:
        fn = raw["cls"] if kind == "estimator" else raw["call"]
        known = inspect.signature(fn).parameters
        for option, values in grid.items():
            if option not in known:
                raise ValueError(
                    f"{package}:{raw['name']}: grid option {option!r} is not a keyword"
                )
            if not isinstance(values, list | tuple) or not values:
                raise ValueError(f"{package}:{raw['name']}: grid option {option!r} needs values")
    if kind != "loader":
        for key in arrays:
            if arg_name(key) not in entry.example(entry.where(key)):
                raise ValueError(f"{package}:{entry.name}: no example value for array {key!r}")
    return entry


def grid_points(entry: Entry) -> list[Entry]:
    """One derived entry per grid value (``name[option=value]``), the example's other keywords
    kept; a value equal to the example's own is skipped (the plain entry covers it)."""
    out = []
    for option, values in (entry.raw.get("grid") or {}).items():
        key = "init" if entry.kind == "estimator" else "kwargs"
        base = entry.raw.get(key, {})
        fn = entry.raw["cls"] if entry.kind == "estimator" else entry.raw["call"]
        current = base.get(option, inspect.signature(fn).parameters[option].default)
        for value in values:
            extra = {}
            if isinstance(value, Mapping) and "grid_value" in value:
                extra = {k: v for k, v in value.items() if k != "grid_value"}
                value = value["grid_value"]
            if type(current) is type(value) and same(current, value):
                continue
            name = f"{entry.name}[{option}={value!r}]"
            raw = {**entry.raw, **extra, "name": name}
            raw[key] = {**raw.get(key, {}), option: value}
            out.append(
                dataclasses.replace(
                    entry, name=name, raw=raw, order=raw.get("order"),
                    rows=[list(g) for g in raw.get("rows") or []],
                )
            )  # fmt: skip
    return out


def arg_name(key: str) -> str:
    """The keyword behind a possibly qualified array key (``"predict:X"`` -> ``"X"``)."""
    return key.split(":", 1)[-1]


# --------------------------------------------------------------------------------------------
# arrays: numpy and torch alike


def is_array(x: Any) -> bool:
    return isinstance(x, np.ndarray) or (torch is not None and isinstance(x, torch.Tensor))


def to_numpy(x: Any) -> np.ndarray:
    if torch is not None and isinstance(x, torch.Tensor):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def like(template: Any, values: np.ndarray) -> Any:
    """``values`` as the same container as ``template`` (numpy or a torch tensor)."""
    if torch is not None and isinstance(template, torch.Tensor):
        t = torch.from_numpy(np.ascontiguousarray(values))
        if template.requires_grad and t.is_floating_point():
            t.requires_grad_(True)
        return t
    return values


def same(a: Any, b: Any) -> bool:
    """Exact equality through containers, NaN equal to NaN."""
    if is_array(a) or is_array(b):
        if not (is_array(a) and is_array(b)):
            return False
        a, b = to_numpy(a), to_numpy(b)
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and bool(np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return same(dataclasses.asdict(a), dataclasses.asdict(b))
    if isinstance(a, float) and isinstance(b, float):
        return a == b or (math.isnan(a) and math.isnan(b))
    if type(a).__module__.startswith("networkx") and type(a) is type(b):
        return sorted(map(repr, a.nodes(data=True))) == sorted(map(repr, b.nodes(data=True))) and (
            sorted(map(repr, a.edges(data=True))) == sorted(map(repr, b.edges(data=True)))
        )
    try:
        return bool(a == b)
    except Exception:
        return a is b


def close(a: Any, b: Any, tol: float = 1e-6) -> bool:
    """Equality up to ``tol`` (relative to the values' scale) through containers."""
    if is_array(a) or is_array(b):
        if not (is_array(a) and is_array(b)):
            return False
        a, b = to_numpy(a), to_numpy(b)
        if a.shape != b.shape:
            return False
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            scale = max(1.0, float(np.nanmax(np.abs(a))) if a.size else 1.0)
            return bool(np.allclose(a, b, atol=tol * scale, rtol=tol, equal_nan=True))
        return bool(np.array_equal(a, b))
    if isinstance(a, Mapping) and isinstance(b, Mapping):
        return a.keys() == b.keys() and all(close(a[k], b[k], tol) for k in a)
    if isinstance(a, list | tuple) and isinstance(b, list | tuple):
        return len(a) == len(b) and all(close(x, y, tol) for x, y in zip(a, b, strict=True))
    if dataclasses.is_dataclass(a) and dataclasses.is_dataclass(b):
        return close(dataclasses.asdict(a), dataclasses.asdict(b), tol)
    if isinstance(a, int | float | np.number) and isinstance(b, int | float | np.number):
        return math.isclose(float(a), float(b), rel_tol=tol, abs_tol=tol) or (
            math.isnan(float(a)) and math.isnan(float(b))
        )
    return same(a, b)


def nonfinite(obj: Any, _depth: int = 0) -> str | None:
    """Where ``obj`` holds a NaN or inf (a path string), or None if it is finite throughout."""
    if _depth > 6:
        return None
    if is_array(obj):
        arr = to_numpy(obj)
        if arr.dtype.kind in "fc" and arr.size and not np.isfinite(arr).all():
            return f"array{tuple(arr.shape)}"
        return None
    if isinstance(obj, float | np.floating):
        return None if math.isfinite(float(obj)) else "scalar"
    if isinstance(obj, Mapping):
        for k, v in obj.items():
            where = nonfinite(v, _depth + 1)
            if where:
                return f"[{k!r}]{where}"
        return None
    if isinstance(obj, list | tuple):
        for i, v in enumerate(obj[:1000]):
            where = nonfinite(v, _depth + 1)
            if where:
                return f"[{i}]{where}"
        return None
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        for f in dataclasses.fields(obj):
            where = nonfinite(getattr(obj, f.name), _depth + 1)
            if where:
                return f".{f.name}{where}"
    return None


def nrows(x: Any) -> int:
    return int(to_numpy(x).shape[0]) if is_array(x) else len(x)


def take_rows(x: Any, idx: np.ndarray) -> Any:
    if is_array(x):
        if torch is not None and isinstance(x, torch.Tensor):
            out = x.detach()[torch.as_tensor(idx, dtype=torch.long)].clone()
            return out.requires_grad_(x.requires_grad) if out.is_floating_point() else out
        return np.asarray(x)[idx].copy()
    return [x[i] for i in idx]


def permute_output(out: Any, perm: np.ndarray, n: int) -> Any:
    """Apply a row permutation to every part of ``out`` whose first axis has length ``n``."""
    if is_array(out):
        arr = to_numpy(out)
        return arr[perm] if arr.ndim and arr.shape[0] == n else arr
    if isinstance(out, list | tuple) and not (len(out) == n and not is_array(out[0])):
        return (
            type(out)(permute_output(o, perm, n) for o in out)
            if isinstance(out, tuple)
            else [permute_output(o, perm, n) for o in out]
        )
    if isinstance(out, list) and len(out) == n:
        return [out[i] for i in perm]
    if isinstance(out, Mapping):
        return {k: permute_output(v, perm, n) for k, v in out.items()}
    if dataclasses.is_dataclass(out) and not isinstance(out, type):
        return permute_output(dataclasses.asdict(out), perm, n)
    return out


def numpyish(out: Any) -> Any:
    """Outputs as numpy / plain containers (tensors detached) for comparison."""
    if is_array(out):
        return to_numpy(out).copy()
    if isinstance(out, Mapping):
        return {k: numpyish(v) for k, v in out.items()}
    if isinstance(out, list | tuple):
        return (
            type(out)(numpyish(v) for v in out)
            if isinstance(out, tuple)
            else [numpyish(v) for v in out]
        )
    if dataclasses.is_dataclass(out) and not isinstance(out, type):
        return numpyish(dataclasses.asdict(out))
    return out


# --------------------------------------------------------------------------------------------
# calling entry points


@dataclasses.dataclass
class Outcome:
    ok: bool
    value: Any = None
    error: BaseException | None = None


def _snapshot(kwargs: Mapping[str, Any]) -> dict[str, Any]:
    return {k: copy.deepcopy(v) for k, v in kwargs.items() if is_array(v) or isinstance(v, list)}


def _assert_unmutated(entry: Entry, before: dict[str, Any], kwargs: Mapping[str, Any]) -> None:
    for k, v in before.items():
        if not same(v, kwargs[k]):
            raise ContractError(f"{entry.id}: the call modified the caller's argument {k!r}")


def fresh(entry: Entry) -> Any:
    return entry.raw["cls"](**entry.raw.get("init", {}))


_FITTED: dict[str, Any] = {}


def fitted(entry: Entry) -> Any:
    """A fitted copy of an estimator entry (fitted once per session, deep-copied per use)."""
    if entry.id not in _FITTED:
        est = fresh(entry)
        est.fit(**entry.raw["fit"])
        _FITTED[entry.id] = est
    return copy.deepcopy(_FITTED[entry.id])


def invoke(
    entry: Entry,
    where: str,
    kwargs: Mapping[str, Any],
    init: Mapping | None = None,
    obj: Any = None,
) -> Outcome:
    """Run one call, checking that no caller array was mutated, whatever the outcome."""
    before = _snapshot(kwargs)
    try:
        if entry.kind == "function":
            value = entry.raw["call"](**kwargs)
        elif where == "fit":
            est = (
                obj
                if obj is not None
                else entry.raw["cls"](**{**entry.raw.get("init", {}), **(init or {})})
            )
            est.fit(**kwargs)
            value = {m: est_call(est, m, kw) for m, kw in entry.raw["methods"].items()}
        else:
            est = obj if obj is not None else fitted(entry)
            value = est_call(est, where, kwargs)
    except Exception as exc:
        _assert_unmutated(entry, before, kwargs)
        return Outcome(False, error=exc)
    _assert_unmutated(entry, before, kwargs)
    return Outcome(True, value=value)


def est_call(est: Any, method: str, kwargs: Mapping[str, Any]) -> Any:
    before = _snapshot(kwargs)
    out = getattr(est, method)(**kwargs)
    for k, v in before.items():
        if not same(v, kwargs[k]):
            raise ContractError(f"{type(est).__name__}.{method} modified the argument {k!r}")
    return out


def outputs(entry: Entry, est: Any) -> dict[str, Any]:
    return {m: numpyish(est_call(est, m, kw)) for m, kw in entry.raw["methods"].items()}


def expect_named_or_finite(entry: Entry, outcome: Outcome, names: list[str], what: str) -> None:
    """The contract for a bad or unusual input: a named ValueError/TypeError, or finite output."""
    if outcome.ok:
        where = nonfinite(outcome.value)
        if where:
            raise ContractError(f"{entry.id}: {what} returned a non-finite output at {where}")
        return
    expect_named(entry, outcome, names, what)


def expect_named(entry: Entry, outcome: Outcome, names: list[str], what: str) -> None:
    """The call must have raised ValueError/TypeError naming one of ``names``."""
    if outcome.ok:
        raise ContractError(f"{entry.id}: {what} was accepted silently")
    exc = outcome.error
    if isinstance(exc, ContractError):
        raise exc
    if not isinstance(exc, ACCEPTED):
        raise ContractError(
            f"{entry.id}: {what} raised {type(exc).__name__} ({exc}); expected ValueError or "
            f"TypeError naming {names}"
        ) from exc
    msg = str(exc)
    if not any(n in msg for n in names):
        raise ContractError(
            f"{entry.id}: {what} raised {type(exc).__name__} without naming {names}: {msg[:200]}"
        ) from exc


def check_pickle(entry: Entry) -> None:
    est = fitted(entry)
    before = outputs(entry, est)
    clone = pickle.loads(pickle.dumps(est))
    after = outputs(entry, clone)
    if not close(before, after, 0.0) and not same(before, after):
        raise ContractError(f"{entry.id}: a pickled copy gives different outputs")


def write_corrupt(path: pathlib.Path, how: str | tuple[str, Callable[[pathlib.Path], None]]) -> str:
    """Corrupt ``path`` in place; returns the corruption's name."""
    if not isinstance(how, str):
        name, mutate = how
        mutate(path)
        return name
    if path.is_dir():
        raise ValueError(f"corruption {how!r} needs a file, {path} is a folder")
    data = path.read_bytes()
    if how == "truncate":
        path.write_bytes(data[: max(1, len(data) // 2)])
    elif how == "empty":
        path.write_bytes(b"")
    elif how == "header":
        lines = data.split(b"\n")
        lines[0] = b"#garbage header\x00\x01"
        path.write_bytes(b"\n".join(lines))
    elif how == "delimiter":
        path.write_bytes(data.replace(b",", b"|").replace(b"\t", b"|").replace(b";", b"|"))
    else:
        raise ValueError(f"unknown corruption {how!r}")
    return how
