"""Every public name is under the conformance contract, or carries a stated reason.

A name in a package's ``__all__`` passes when a conformance entry covers it (an entry named
for it, for one of its methods or for one of its configurations), when it is exempt by kind
(``__version__``, a constant, an exception class, a module namespace, ``demo``: the demo tour
runs every package's), or when ``uncovered.txt`` lists it. That file is the debt still owed:
adding a public name without an entry fails here, and so does a listed name that has since
been registered or removed (the list only shrinks).
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import re
import types

import pytest
from conformance_registry import all_entries

from aware_ml.registry import PACKAGES, import_name

DEBT = pathlib.Path(__file__).with_name("uncovered.txt")


def _registered() -> set[str]:
    out = set()
    for e in all_entries():
        package, name = e.id.split(":", 1)
        base = re.split(r"[.\[(]", name, maxsplit=1)[0]
        out.add(f"{package}:{base}")
    return out


def _exempt_reason(obj, name: str) -> str | None:
    if name == "__version__":
        return "version string"
    if name == "demo":
        return "run by the demo tour (tests/test_workspace.py)"
    if isinstance(obj, types.ModuleType):
        return "module namespace: its functions are listed on their own"
    if inspect.isclass(obj) and issubclass(obj, BaseException):
        return "exception class"
    if name.isupper() and not callable(obj):
        return "constant"
    return None


def _public() -> dict[str, str | None]:
    """package:name -> exemption reason (None: needs an entry or a debt line)."""
    out = {}
    for package in PACKAGES:
        mod = importlib.import_module(import_name(package))
        for name in getattr(mod, "__all__", ()):
            out[f"{package}:{name}"] = _exempt_reason(getattr(mod, name), name)
    return out


def _debt() -> dict[str, str]:
    out = {}
    for line in DEBT.read_text().splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        key, _, why = line.partition("#")
        out[key.strip()] = why.strip()
    return out


@pytest.fixture(scope="module")
def names():
    return _public(), _registered(), _debt()


def test_every_public_name_has_an_entry_or_a_stated_reason(names) -> None:
    public, registered, debt = names
    missing = sorted(
        k for k, why in public.items() if why is None and k not in registered and k not in debt
    )
    assert not missing, (
        f"{len(missing)} public names have no conformance entry and no line in "
        f"{DEBT.name}: {missing}"
    )


def test_the_debt_list_only_shrinks(names) -> None:
    public, registered, debt = names
    stale = sorted(k for k in debt if k not in public or k in registered or public[k])
    assert not stale, f"remove these lines from {DEBT.name} (registered, exempt or gone): {stale}"
    assert all(debt.values()), "every debt line says why the name is not covered yet"
