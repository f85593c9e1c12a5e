"""Griffe extension for the docs build: Sphinx roles in docstrings rendered as Markdown.

The packages' docstrings use reST roles (``:func:`name```, ``:math:`x```, ``.. math::``) so
that ``help()`` and Sphinx users read them as usual. mkdocstrings renders Markdown, where those
would show as raw text, so at build time each role becomes its Markdown equivalent: object roles
become code (``~a.b.c`` shows ``c``), math roles become MathJax (arithmatex) inline or display
math. The source files are not changed.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(class|func|meth|attr|mod|obj|data|exc|const|ref|math):`([^`]+)`")
DISPLAY = re.compile(r"^(?P<indent>[ \t]*)\.\. math::[ \t]*(?P<first>.*)$", re.MULTILINE)


def _role(m: re.Match[str]) -> str:
    kind, target = m.groups()
    if kind == "math":
        return f"\\({target}\\)"
    target = target.lstrip("!")
    if target.startswith("~"):
        target = target[1:].rsplit(".", 1)[-1]
    return f"`{target}`"


def _display(text: str) -> str:
    """``.. math:: body`` (one line, or an indented block after it) -> ``\\[ body \\]``."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        m = DISPLAY.match(lines[i])
        if not m:
            out.append(lines[i])
            i += 1
            continue
        indent, body = m.group("indent"), [m.group("first").strip()]
        i += 1
        while i < len(lines) and (not lines[i].strip() or lines[i].startswith(indent + " ")):
            if not lines[i].strip() and (
                i + 1 >= len(lines) or not lines[i + 1].startswith(indent + " ")
            ):
                break
            body.append(lines[i].strip())
            i += 1
        out.append(f"{indent}\\[ {' '.join(b for b in body if b)} \\]")
    return "\n".join(out)


def render_roles(text: str) -> str:
    """The docstring ``text`` with every Sphinx role and math directive in Markdown form."""
    return ROLE.sub(_role, _display(text))


class SphinxRoles(griffe.Extension):
    """Rewrite each docstring's Sphinx roles when griffe loads an object."""

    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = render_roles(obj.docstring.value)
