"""The suite is only worth its runtime if it fails when a known silent bug comes back.

Each case patches one of the silent wrong answers found at the packages' boundaries back into
the real code (a removed check, the old reader, a nondeterministic predict), runs the conformance
check that guards it, and requires a ``ContractError``; the same check passes unpatched.
"""

from __future__ import annotations

import dataclasses
import types

import numpy as np
import pytest
import test_conformance as tc
from conformance_registry import all_entries
from conformance_spec import ContractError

ENTRY = {e.id: e for e in all_entries()}


def _entry(eid: str):
    if eid not in ENTRY:
        pytest.skip(f"{eid} is not declared in this environment")
    return ENTRY[eid]


def _torch_without_isfinite():
    import torch

    fake = types.SimpleNamespace(
        **{k: getattr(torch, k) for k in dir(torch) if not k.startswith("__")}
    )
    fake.isfinite = lambda x: torch.ones_like(torch.as_tensor(x), dtype=torch.bool)
    return fake


def _kd_nan(mp):
    import kd_losses.fused as fused

    mp.setattr(fused, "all_finite", lambda x: True)  # the finiteness checks removed
    e = _entry("kd-losses:fused_kd_loss")
    tc.test_nonfinite_input_is_rejected(entry=e, key="teacher_hidden", value="nan")


def _epi_header(mp, tmp_path):
    import epi_ode.io as io

    old = io._number

    def lenient(token, *args, **kwargs):  # the old reader: any unparsable field is a missing value
        v = old(token, *args, **kwargs)
        return np.nan if v is None else v

    mp.setattr(io, "_number", lenient)
    tc.test_loader_round_trip(entry=_entry("epi-ode:read_wide_csv"), tmp_path=tmp_path)


def _lomap_off_map(mp):
    from lomap_planner.geometry import segments_hit_walls

    def old(plans, walls, margin=0.0):  # wall crossings only: a plan off the map is "feasible"
        pos = np.asarray(plans, dtype=float)[..., :2]
        return segments_hit_walls(pos[:, :-1], pos[:, 1:], walls, margin).any(-1)

    e = _entry("lomap-planner:plan_is_infeasible")
    e = dataclasses.replace(e, raw=dict(e.raw))
    mp.setitem(e.raw, "call", old)
    i = next(i for i, k in enumerate(e.raw["known"]) if "outside" in k["why"])
    tc.test_known_answers(entry=e, i=i)


def _edg_nondeterministic(mp):
    e = _entry("evolving-dg:SYNC")
    cls = e.raw["cls"]
    orig = cls.predict_proba
    rng = np.random.default_rng()

    def sampled(self, X, *a, **k):  # an unseeded latent sample at prediction time
        p = orig(self, X, *a, **k) + rng.uniform(0, 1e-3, size=(len(X), 1))
        return p / p.sum(1, keepdims=True)

    mp.setattr(cls, "predict_proba", sampled)
    tc.test_valid_example_is_finite_and_deterministic(entry=e)


def _sarc_offset(mp):
    import spectral_reservoir.estimators as est

    mp.setattr(est, "_norm_mode", lambda normalize: None)  # the raw values, no normalisation
    e = _entry("spectral-reservoir:SARCClassifier")
    i = next(i for i, k in enumerate(e.raw["known"]) if "1e6" in k["why"])
    tc.test_known_answers(entry=e, i=i)


def _gfn_bare_string(mp):
    import gfn_symmetry.automorphisms as aut

    mp.setattr(aut, "check_attrs", lambda attrs, name: tuple(attrs))  # "label" -> l, a, b, e, l
    tc.test_bare_string_for_a_sequence_is_rejected(
        entry=_entry("gfn-symmetry:count_automorphisms"), param="node_attrs"
    )


def _gfn_nan_labels(mp):
    import gfn_symmetry.automorphisms as aut

    mp.setattr(aut, "check_label_values", lambda *a, **k: None)  # NaN != NaN: a colour each
    e = _entry("gfn-symmetry:count_automorphisms")
    i = next(i for i, k in enumerate(e.raw["known"]) if "NaN" in k["why"])
    tc.test_known_answers(entry=e, i=i)


def _pareto_nan_objective(mp):
    import pareto_merge.pareto as pm

    mp.setattr(pm, "torch", _torch_without_isfinite())  # the finiteness checks removed
    e = _entry("pareto-merge:ParetoMerger.merge")
    i = next(i for i, k in enumerate(e.raw["known"]) if "NaN" in k["why"])
    tc.test_known_answers(entry=e, i=i)


def _brain_duplicate_subject(mp, tmp_path):
    import brain_gcl.loaders as loaders

    def old(by_subject):  # every file loads, so a subject in two files counts twice
        pairs = [(sid, p) for sid, ps in by_subject.items() for p in ps]
        return sorted(pairs, key=lambda kv: str(kv[1]))

    mp.setattr(loaders, "_one_file_per_subject", old)
    e = _entry("brain-gcl:load_connectomes")
    how = next(c for c in e.raw["corrupt"] if c[0] == "duplicate-subject")
    tc.test_loader_rejects_corrupted_files(entry=e, how=how, tmp_path=tmp_path)


def _brain_batch_of_one(mp):
    import brain_gcl.base as base

    mp.setattr(base, "_MIN_BATCH_SIZE", 1)  # batch_size=1 skips every step: nothing trains
    e = _entry("brain-gcl:GIN")
    tc.test_out_of_range_hyperparameters_are_rejected(
        entry=e, param="batch_size", i=e.params["batch_size"]["bad"].index(1)
    )


CASES = {
    "kd-losses: NaN teacher -> NaN loss": _kd_nan,
    "epi-ode: header row read as missing data": _epi_header,
    "lomap-planner: off-map plan counted feasible": _lomap_off_map,
    "evolving-dg: predict differs between calls": _edg_nondeterministic,
    "spectral-reservoir: 1e6 offset drops to chance": _sarc_offset,
    "gfn-symmetry: a string iterated as attribute names": _gfn_bare_string,
    "gfn-symmetry: NaN labels become distinct colours": _gfn_nan_labels,
    "pareto-merge: a NaN objective trains to NaN weights": _pareto_nan_objective,
    "brain-gcl: a subject in two files loads twice": _brain_duplicate_subject,
    "brain-gcl: batch_size=1 trains nothing": _brain_batch_of_one,
}


def _run(fn, mp, tmp_path):
    import inspect

    return fn(mp, tmp_path) if "tmp_path" in inspect.signature(fn).parameters else fn(mp)


@pytest.mark.parametrize("case", list(CASES))
def test_suite_fails_when_a_silent_bug_is_reintroduced(case, monkeypatch, tmp_path) -> None:
    with pytest.raises(ContractError):
        _run(CASES[case], monkeypatch, tmp_path)


@pytest.mark.parametrize("case", list(CASES))
def test_the_same_check_passes_on_the_real_code(case, tmp_path) -> None:
    class NoPatch:
        def setattr(self, *args, **kwargs) -> None:
            pass

        def setitem(self, *args, **kwargs) -> None:
            pass

    _run(CASES[case], NoPatch(), tmp_path)
