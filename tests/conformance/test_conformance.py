"""One contract for every declared public entry point of every package (see conformance_spec).

Cases are generated from the registries at collection time; hypothesis draws where a NaN goes,
which array loses a row and how rows are permuted (derandomized, so CI is reproducible).
"""

from __future__ import annotations

import copy
import pathlib

import numpy as np
import pytest
from conformance_registry import all_entries
from conformance_spec import (
    CORRUPTIONS,
    ContractError,
    Entry,
    arg_name,
    check_pickle,
    close,
    expect_named,
    expect_named_or_finite,
    fitted,
    grid_points,
    invoke,
    is_array,
    like,
    nonfinite,
    nrows,
    numpyish,
    outputs,
    permute_output,
    same,
    switches,
    take_rows,
    to_numpy,
    write_corrupt,
)
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

SETTINGS = settings(
    max_examples=2,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
ENTRIES = all_entries()
CALLABLE = [e for e in ENTRIES if e.kind != "loader"]
LOADERS = [e for e in ENTRIES if e.kind == "loader"]


def _cases(fn):
    out = []
    for e in CALLABLE:
        for case in fn(e):
            out.append(pytest.param(e, *case, id=f"{e.id}-" + "-".join(map(str, case))))
    return out


def _with(entry: Entry, where: str, **changes) -> dict:
    kw = dict(entry.example(where))
    kw.update(changes)
    return kw


def _float_arrays(e: Entry):
    return [a for a, s in e.arrays.items() if s.kind == "float"]


# ---------------------------------------------------------------------------- non-finite values


@pytest.mark.parametrize(
    ("entry", "key", "value"),
    _cases(
        lambda e: [
            (a, v)
            for a, s in e.arrays.items()
            if s.kind in ("float", "labels")
            for v, ok in (("nan", s.nan_ok), ("inf", s.inf_ok or s.kind == "labels"))
            if not ok
        ]
    ),
)
@SETTINGS
@given(data=st.data())
def test_nonfinite_input_is_rejected(entry: Entry, key: str, value: str, data) -> None:
    where, arg = entry.where(key), arg_name(key)
    x = entry.example(where)[arg]
    arr = to_numpy(x).astype(np.float64 if to_numpy(x).dtype.kind != "f" else to_numpy(x).dtype)
    flat = arr.reshape(-1).copy()
    i = data.draw(st.integers(0, flat.size - 1), label="position")
    sign = data.draw(st.sampled_from([1.0, -1.0]), label="sign")
    flat[i] = np.nan if value == "nan" else sign * np.inf
    bad = like(x, flat.reshape(arr.shape))
    if is_array(x) and not is_array(bad):
        bad = flat.reshape(arr.shape)
    outcome = invoke(entry, where, _with(entry, where, **{arg: bad}))
    expect_named(entry, outcome, [arg], f"{value} in {arg!r}")


@pytest.mark.parametrize(
    ("entry", "key"),
    _cases(lambda e: [(a,) for a, s in e.arrays.items() if s.nan_ok]),
)
def test_documented_missing_values_give_finite_output(entry: Entry, key: str) -> None:
    where, arg = entry.where(key), arg_name(key)
    x = entry.example(where)[arg]
    arr = to_numpy(x).astype(np.float64).copy()
    arr.reshape(-1)[arr.size // 2] = np.nan
    outcome = invoke(entry, where, _with(entry, where, **{arg: like(x, arr)}))
    expect_named_or_finite(entry, outcome, [arg], f"a missing value in {arg!r}")


# ---------------------------------------------------------------------------- shapes and sizes


def _row_groups(e: Entry):
    groups = [g for g in e.rows]
    listed = {a for g in groups for a in g}
    groups += [[a] for a in e.arrays if a not in listed]
    return groups


def _group_where(e: Entry, group: list[str]) -> str:
    return e.where(group[0])


@pytest.mark.parametrize(
    ("entry", "group", "n"),
    _cases(lambda e: [("+".join(g), n) for g in e.rows for n in (0, 1)]),
)
def test_empty_and_single_row_inputs(entry: Entry, group: str, n: int) -> None:
    keys = group.split("+")
    where = _group_where(entry, keys)
    names = [arg_name(k) for k in keys]
    kw = entry.example(where)
    changes = {a: take_rows(kw[a], np.arange(n)) for a in names}
    outcome = invoke(entry, where, _with(entry, where, **changes))
    what = "an empty input" if n == 0 else "a one-row input"
    minimum = entry.min_rows.get(keys[0], 1) if isinstance(entry.min_rows, dict) else entry.min_rows
    if n < minimum:
        expect_named(entry, outcome, names, what)
    else:
        expect_named_or_finite(entry, outcome, names, what)


@pytest.mark.parametrize(
    ("entry", "key", "change"),
    _cases(
        lambda e: [
            (a, c)
            for a, s in e.arrays.items()
            for c in ("add-axis", "drop-axis")
            if not (c == "drop-axis" and to_numpy(e.example(e.where(a))[arg_name(a)]).ndim == 0)
        ]
    ),
)
def test_wrong_ndim_is_rejected(entry: Entry, key: str, change: str) -> None:
    where, arg = entry.where(key), arg_name(key)
    x = entry.example(where)[arg]
    arr = to_numpy(x)
    bad_np = arr[..., None] if change == "add-axis" else arr[0]
    allowed = entry.arrays[key].ndim
    if allowed is not None and bad_np.ndim in allowed:
        pytest.skip(f"{bad_np.ndim}-d {arg} is documented as valid")
    outcome = invoke(entry, where, _with(entry, where, **{arg: like(x, bad_np.copy())}))
    expect_named(entry, outcome, [arg], f"a {bad_np.ndim}-d {arg!r} ({change})")


@pytest.mark.parametrize(
    ("entry", "group"),
    _cases(lambda e: [("+".join(g),) for g in e.rows if len(g) > 1]),
)
@SETTINGS
@given(data=st.data())
def test_mismatched_lengths_are_rejected(entry: Entry, group: str, data) -> None:
    keys = group.split("+")
    where = _group_where(entry, keys)
    names = [arg_name(k) for k in keys]
    arg = data.draw(st.sampled_from(names), label="shortened")
    x = entry.example(where)[arg]
    short = take_rows(x, np.arange(nrows(x) - 1))
    outcome = invoke(entry, where, _with(entry, where, **{arg: short}))
    expect_named(entry, outcome, names, f"{arg!r} one row shorter than {names}")


# ---------------------------------------------------------------------------- dtypes


def _dtype_cases(e: Entry):
    out = []
    for a, s in e.arrays.items():
        if s.kind == "float":
            out += [(a, d) for d in ("int64", "float16", "bool")]
        elif s.kind == "labels":
            out += [(a, "fractional"), (a, "float16")]
    return out


@pytest.mark.parametrize(("entry", "key", "dtype"), _cases(_dtype_cases))
def test_unusual_dtypes(entry: Entry, key: str, dtype: str) -> None:
    where, arg = entry.where(key), arg_name(key)
    x = entry.example(where)[arg]
    arr = to_numpy(x)
    if dtype == "fractional":
        bad = arr.astype(np.float64) + 0.5
        outcome = invoke(entry, where, _with(entry, where, **{arg: like(x, bad)}))
        expect_named(entry, outcome, [arg], f"fractional labels in {arg!r}")
        return
    if dtype == "bool":
        bad = arr > np.median(arr)
    else:
        bad = np.round(arr).astype(dtype) if dtype == "int64" else arr.astype(dtype)
    if is_array(x) and not isinstance(x, np.ndarray):
        import torch

        bad_x = torch.from_numpy(np.ascontiguousarray(bad))
    else:
        bad_x = bad
    outcome = invoke(entry, where, _with(entry, where, **{arg: bad_x}))
    expect_named_or_finite(entry, outcome, [arg], f"{dtype} {arg!r}")


# ---------------------------------------------------------------------------- hyper-parameters


def _param_where(e: Entry) -> str:
    return "fit" if e.kind == "estimator" else "call"


def _call_with_param(entry: Entry, p: str, value):
    if entry.kind == "estimator":
        return invoke(entry, "fit", entry.example("fit"), init={p: value})
    return invoke(entry, "call", _with(entry, "call", **{p: value}))


def _good(entry: Entry, p: str):
    src = entry.raw.get("init", {}) if entry.kind == "estimator" else entry.raw["kwargs"]
    if p in src:
        return src[p]
    if "good" in entry.params[p]:
        return entry.params[p]["good"]
    import inspect

    fn = entry.raw["cls"] if entry.kind == "estimator" else entry.raw["call"]
    param = inspect.signature(fn).parameters.get(p)
    if param is None or param.default is inspect.Parameter.empty:
        raise KeyError(f"{entry.id}: param {p!r} has no example value (add 'good')")
    return param.default


@pytest.mark.parametrize(
    ("entry", "param"),
    _cases(lambda e: [(p,) for p, s in e.params.items() if s.get("type") in ("int", "float")]),
)
def test_numpy_scalar_hyperparameters_work(entry: Entry, param: str) -> None:
    good = _good(entry, param)
    if good is None:
        pytest.skip("the example leaves it at None")
    kind = entry.params[param]["type"]
    value = np.int64(good) if kind == "int" else np.float32(good)
    outcome = _call_with_param(entry, param, value)
    if not outcome.ok:
        raise ContractError(
            f"{entry.id}: {param}={value!r} ({type(value).__name__}) was rejected: "
            f"{type(outcome.error).__name__}: {outcome.error}"
        )
    where = nonfinite(outcome.value)
    if where:
        raise ContractError(f"{entry.id}: {param} as a numpy scalar gave non-finite output")


@pytest.mark.parametrize(
    ("entry", "param"),
    _cases(lambda e: [(p,) for p, s in e.params.items() if s.get("type") == "int"]),
)
def test_bool_for_int_is_rejected(entry: Entry, param: str) -> None:
    expect_named(entry, _call_with_param(entry, param, True), [param], f"{param}=True")


@pytest.mark.parametrize(
    ("entry", "param"),
    _cases(lambda e: [(p,) for p, s in e.params.items() if s.get("type") == "strs"]),
)
def test_bare_string_for_a_sequence_is_rejected(entry: Entry, param: str) -> None:
    good = _good(entry, param)
    word = good[0] if good else "label"
    expect_named(entry, _call_with_param(entry, param, word), [param], f"{param}={word!r}")


@pytest.mark.parametrize(
    ("entry", "param", "i"),
    _cases(lambda e: [(p, i) for p, s in e.params.items() for i in range(len(s.get("bad", ())))]),
)
def test_out_of_range_hyperparameters_are_rejected(entry: Entry, param: str, i: int) -> None:
    value = entry.params[param]["bad"][i]
    expect_named(entry, _call_with_param(entry, param, value), [param], f"{param}={value!r}")


# ---------------------------------------------------------------------------- behaviour


def _main_outputs(entry: Entry):
    if entry.kind == "estimator":
        return outputs(entry, fitted(entry))
    outcome = invoke(entry, "call", entry.example("call"))
    if not outcome.ok:
        raise ContractError(f"{entry.id}: the declared valid example raised {outcome.error!r}")
    return numpyish(outcome.value)


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.id) for e in CALLABLE])
def test_valid_example_is_finite_and_deterministic(entry: Entry) -> None:
    first = _main_outputs(entry)
    where = nonfinite(first)
    if where and entry.raw.get("output", "finite") == "finite":
        raise ContractError(f"{entry.id}: the valid example gives a non-finite output at {where}")
    if entry.deterministic:
        second = _main_outputs(entry)
        if not same(first, second):
            raise ContractError(f"{entry.id}: two identical calls gave different outputs")


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(e, id=e.id)
        for e in CALLABLE
        if e.order and any(_group_where(e, g) != "fit" for g in e.rows)
    ],
)
@SETTINGS
@given(data=st.data())
def test_row_order(entry: Entry, data) -> None:
    _check_row_order(entry, data)


def _check_row_order(entry: Entry, data) -> None:
    group = next(g for g in entry.rows if _group_where(entry, g) != "fit")
    where = _group_where(entry, group)
    names = [arg_name(k) for k in group]
    kw = entry.example(where)
    n = nrows(kw[names[0]])
    perm = np.array(data.draw(st.permutations(list(range(n))), label="permutation"))
    changes = {a: take_rows(kw[a], perm) for a in names}
    base = (
        _main_outputs(entry)
        if entry.kind == "function"
        else numpyish(invoke(entry, where, kw).value)
    )
    outcome = invoke(entry, where, _with(entry, where, **changes))
    if not outcome.ok:
        raise ContractError(f"{entry.id}: permuted rows raised {outcome.error!r}")
    got = numpyish(outcome.value)
    want = permute_output(base, perm, n) if entry.order == "equivariant" else base
    if not close(got, want, 1e-6):
        raise ContractError(f"{entry.id}: outputs are not {entry.order} to a row permutation")


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(e, id=e.id)
        for e in CALLABLE
        if e.kind == "estimator" and e.raw.get("pickle", True)
    ],
)
def test_pickle_round_trip(entry: Entry) -> None:
    check_pickle(entry)


@pytest.mark.parametrize(
    ("entry", "method"),
    [
        pytest.param(e, m, id=f"{e.id}.{m}")
        for e in CALLABLE
        if e.kind == "estimator"
        for m in e.raw.get("methods", {})
    ],
)
def test_unfitted_methods_say_fit_first(entry: Entry, method: str) -> None:
    """Before fit, every method raises NotFittedError or a RuntimeError that says to fit; a raw
    AttributeError on a missing ``model_`` tells the user nothing."""
    from sklearn.exceptions import NotFittedError

    est = entry.raw["cls"](**entry.raw.get("init", {}))
    try:
        getattr(est, method)(**entry.raw["methods"][method])
    except NotFittedError:
        return
    except RuntimeError as exc:
        if "fit" in str(exc):
            return
        raise ContractError(f"{entry.id}.{method} before fit: {exc!r}") from exc
    except Exception as exc:
        raise ContractError(f"{entry.id}.{method} before fit raised {exc!r}") from exc
    raise ContractError(f"{entry.id}.{method} before fit returned without an error")


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(e, id=e.id)
        for e in CALLABLE
        if e.kind == "estimator" and any(e.where(a) == "fit" for a in _float_arrays(e))
    ],
)
def test_rejected_fit_leaves_the_fitted_object_unchanged(entry: Entry) -> None:
    est = fitted(entry)
    before = outputs(entry, est)
    key = next(a for a in _float_arrays(entry) if entry.where(a) == "fit")
    arg = arg_name(key)
    x = entry.example("fit")[arg]
    arr = to_numpy(x).astype(np.float64).copy()
    bad = np.inf if entry.arrays[key].nan_ok else np.nan  # NaN may be a documented missing value
    arr.reshape(-1)[0] = bad
    outcome = invoke(entry, "fit", _with(entry, "fit", **{arg: like(x, arr)}), obj=est)
    expect_named(entry, outcome, [arg], f"refit with {bad} in {arg!r}")
    if not same(before, outputs(entry, est)):
        raise ContractError(f"{entry.id}: a rejected fit changed the fitted object's outputs")


@pytest.mark.parametrize(
    ("entry", "i"),
    _cases(lambda e: [(i,) for i in range(len(e.raw.get("known", ())))]),
)
def test_known_answers(entry: Entry, i: int) -> None:
    case = entry.raw["known"][i]
    why = case.get("why", f"known case {i}")
    where = case.get("where", "call" if entry.kind == "function" else "fit")
    kw = _with(entry, where, **case.get("kwargs", {}))
    outcome = invoke(entry, where, kw, init=case.get("init"))
    if case.get("raises"):
        expect_named(entry, outcome, list(case["raises"]), why)
        return
    if not outcome.ok:
        raise ContractError(f"{entry.id}: {why}: raised {outcome.error!r}")
    if not case["check"](outcome.value):
        raise ContractError(f"{entry.id}: {why}: the output is wrong")


# ---------------------------------------------------------------------------- option grid
# Every documented option that changes computation gets the behaviour checks the defaults get:
# a silent wrong answer hides in a non-default setting as easily as in the default one.

GRID = [p for e in CALLABLE for p in grid_points(e)]


@pytest.mark.parametrize("entry", [pytest.param(p, id=p.id) for p in GRID])
def test_grid_point_is_finite_and_deterministic(entry: Entry) -> None:
    test_valid_example_is_finite_and_deterministic(entry)


@pytest.mark.parametrize(
    "entry",
    [
        pytest.param(p, id=p.id)
        for p in GRID
        if p.order and any(_group_where(p, g) != "fit" for g in p.rows)
    ],
)
@SETTINGS
@given(data=st.data())
def test_grid_point_row_order(entry: Entry, data) -> None:
    _check_row_order(entry, data)


@pytest.mark.parametrize(
    "entry",
    [pytest.param(p, id=p.id) for p in GRID if p.kind == "estimator" and p.raw.get("pickle", True)],
)
def test_grid_point_pickle_round_trip(entry: Entry) -> None:
    check_pickle(entry)


# ---------------------------------------------------------------------------- loaders


@pytest.mark.parametrize("entry", [pytest.param(e, id=e.id) for e in LOADERS])
def test_loader_round_trip(entry: Entry, tmp_path: pathlib.Path) -> None:
    path = entry.raw["write"](tmp_path)
    obj = entry.raw["read"](path)
    try:  # the check asserts inside, or returns whether the read is right
        verdict = entry.raw["check"](obj)
    except AssertionError as e:
        raise ContractError(
            f"{entry.id}: the file written in the real layout reads back wrong: {e}"
        ) from e
    if verdict is not None and not verdict:
        raise ContractError(f"{entry.id}: the file written in the real layout reads back wrong")
    if "export" in entry.raw:
        out = entry.raw["export"](obj, tmp_path / "export")
        again = entry.raw["read"](out)
        if not entry.raw.get("same", same)(obj, again):
            raise ContractError(f"{entry.id}: an exported file reloads as something else")


@pytest.mark.parametrize(
    ("entry", "how"),
    [
        pytest.param(e, h, id=f"{e.id}-{h if isinstance(h, str) else h[0]}")
        for e in LOADERS
        for h in e.raw.get("corrupt", CORRUPTIONS)
    ],
)
def test_loader_rejects_corrupted_files(entry: Entry, how, tmp_path: pathlib.Path) -> None:
    path = entry.raw["write"](tmp_path)
    name = write_corrupt(path, how)
    errors = tuple(entry.raw.get("errors", (ValueError, OSError)))
    try:
        obj = entry.raw["read"](path)
    except errors as exc:
        if isinstance(exc, IndexError | KeyError):
            raise ContractError(
                f"{entry.id}: {name} file raised a raw {type(exc).__name__}"
            ) from exc
        return
    except Exception as exc:
        raise ContractError(
            f"{entry.id}: a {name} file raised {type(exc).__name__} ({exc}), not a named error"
        ) from exc
    raise ContractError(f"{entry.id}: a {name} file was read without an error: {type(obj)}")


# ---------------------------------------------------------------------------- coverage


def test_every_package_declares_entry_points() -> None:
    from aware_ml.registry import PACKAGES

    declared = {e.package for e in ENTRIES}
    assert set(PACKAGES) <= declared, sorted(set(PACKAGES) - declared)


def test_every_switch_is_on_the_grid_or_fixed() -> None:
    """Issue #76 item 2: each switch (a keyword with a bool or string default) of an entry's
    call is a grid point, or the entry says in ``fixed`` why it stays at the example's value."""
    missing, stale = [], []
    for e in CALLABLE:
        grid, fixed = set(e.raw.get("grid") or {}), dict(e.raw.get("fixed") or {})
        names = switches(e)
        missing += [f"{e.id}: {n}" for n in names if n not in grid and n not in fixed]
        stale += [f"{e.id}: {n}" for n in fixed if n not in names or n in grid]
        assert all(isinstance(w, str) and w for w in fixed.values()), f"{e.id}: fixed needs reasons"
    assert not missing, "switches neither on the grid nor fixed:\n" + "\n".join(missing)
    assert not stale, "fixed names that are no switch, or are on the grid:\n" + "\n".join(stale)


def test_registry_examples_are_not_shared_mutable_state() -> None:
    # the suite deep-copies fitted estimators; a registry that hands out one module-level
    # object would let one check's mutation leak into another
    for e in CALLABLE:
        if e.kind == "estimator":
            a, b = fitted(e), fitted(e)
            assert a is not b
            assert copy.deepcopy(a) is not a
