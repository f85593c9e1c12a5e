"""Collect every package's ``_conformance.entries()`` (packages that are installed)."""

from __future__ import annotations

import functools
import importlib

from conformance_spec import Entry, parse

from aware_ml.registry import PACKAGES, import_name


@functools.cache
def all_entries() -> tuple[Entry, ...]:
    out: list[Entry] = []
    for package in PACKAGES:
        name = f"{import_name(package)}._conformance"
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name:
                raise
            continue  # test_every_package_declares_entry_points reports it
        for raw in module.entries():
            out.append(parse(package, raw))
    ids = [e.id for e in out]
    dup = {i for i in ids if ids.count(i) > 1}
    if dup:
        raise ValueError(f"duplicate conformance entry names: {sorted(dup)}")
    return tuple(out)


def packages_declared() -> set[str]:
    return {e.package for e in all_entries()}
