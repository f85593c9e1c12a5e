"""Build-time pages for the documentation site (run by mkdocs-gen-files).

One page per package from its README, one API reference page per package (mkdocstrings reads
the code's NumPy docstrings), the workspace status table (``tools/workspace_status.py``), the
results files and benchmark plots beside them. Relative links
in the READMEs are mapped to their pages; links to files the site does not carry (scripts,
sources) become plain code text, so ``mkdocs build --strict`` fails only on real breakage; an
image that the site cannot show (a missing PNG) fails the build.
"""

from __future__ import annotations

import importlib
import inspect
import pathlib
import posixpath
import re
import sys

import mkdocs_gen_files

ROOT = pathlib.Path(__file__).resolve().parents[1]
LINK = re.compile(r"(!?)\[([^\]]*)\]\(([^)\s]+)\)")
PACKAGES = sorted(p.parent for p in (ROOT / "packages").glob("*/README.md"))


def _import_name(pkg: pathlib.Path) -> str:
    src = sorted(d.name for d in (pkg / "src").iterdir() if (d / "__init__.py").is_file())
    return src[0]


def _doc_path(target: pathlib.Path) -> str | None:
    """Where a repository file lives on the site, or None if the site does not carry it."""
    rel = target.relative_to(ROOT).as_posix() if target.is_relative_to(ROOT) else None
    if rel is None:
        return None
    m = re.fullmatch(r"packages/([^/]+)/README\.md", rel)
    if m:
        return f"packages/{m.group(1)}.md"
    if rel == "README.md":
        return "index.md"
    if rel.startswith("results/") and target.suffix in {".json", ".png"} and target.exists():
        return rel
    return None


def rewrite_links(text: str, source: pathlib.Path, page: str) -> str:
    """Map the README's relative links (from ``source``) onto the site (for page ``page``)."""

    def sub(m: re.Match[str]) -> str:
        bang, label, href = m.groups()
        if re.match(r"^[a-z]+:|^#|^/", href):
            return m.group(0)
        path, _, anchor = href.partition("#")
        target = (source.parent / path).resolve()
        dest = _doc_path(target)
        if bang and dest is None:
            raise FileNotFoundError(
                f"{source}: image {href} is not a results file the site carries"
            )
        if dest is None:
            return f"`{label}`" if not label.startswith("`") else label
        rel = posixpath.relpath(dest, posixpath.dirname(page) or ".")
        return f"{bang}[{label}]({rel}{'#' + anchor if anchor else ''})"

    return LINK.sub(sub, text)


# Packages whose docstrings are assigned at import time (a shared template): read by import.
INSPECT = {"kd_losses"}


def _block(path: str, members: list[str] | None = None, inspect: bool = False) -> str:
    opts = ["show_if_no_docstring: true"] + (["force_inspection: true"] if inspect else [])
    if members is not None:
        opts.append("members:" + "".join(f"\n        - {n}" for n in members))
    return f"::: {path}\n    options:\n" + "".join(f"      {o}\n" for o in opts)


def api_entries(module: str) -> list[tuple[str, str]]:
    """``(public name, documented path)`` for every name of ``module.__all__`` but dunders.

    A name is documented under the package unless it is a submodule (rendered as its own block)
    or a function that shares its name with the submodule defining it (``pkg.demo`` the function
    in ``pkg/demo.py``), which the static reader resolves to the module: it is rendered from its
    defining module.
    """
    mod = importlib.import_module(module)
    out = []
    for name in (n for n in mod.__all__ if not n.startswith("__")):
        obj = getattr(mod, name)
        if inspect.ismodule(obj):
            out.append((name, obj.__name__))
        elif f"{module}.{name}" in sys.modules and sys.modules[f"{module}.{name}"] is not obj:
            out.append((name, f"{obj.__module__}.{obj.__qualname__}"))
        else:
            out.append((name, f"{module}.{name}"))
    return out


def api_page(module: str) -> str:
    """The API page: every public name of ``module``, constants and submodules included."""
    entries = api_entries(module)
    mod = importlib.import_module(module)
    direct = [n for n, path in entries if path == f"{module}.{n}"]
    direct = [n for n in direct if not inspect.ismodule(getattr(mod, n))]
    others = [path for n, path in entries if n not in direct]
    blocks = [_block(module, direct, module in INSPECT)]
    blocks += [_block(path, inspect=module in INSPECT) for path in others]
    return f"# `{module}` API\n\n" + "\n".join(blocks)


def main() -> None:
    index = rewrite_links((ROOT / "README.md").read_text(), ROOT / "README.md", "index.md")
    with mkdocs_gen_files.open("index.md", "w") as f:
        f.write(index)
    sys.path.insert(0, str(ROOT / "tools"))
    import workspace_status

    with mkdocs_gen_files.open("workspace.md", "w") as f:
        f.write(workspace_status.page())
    for pkg in PACKAGES:
        name = pkg.name
        page = f"packages/{name}.md"
        text = rewrite_links((pkg / "README.md").read_text(), pkg / "README.md", page)
        if name != "aware-ml":
            text += f"\n\n[API reference](../api/{name}.md)\n"
        with mkdocs_gen_files.open(page, "w") as f:
            f.write(text)
        with mkdocs_gen_files.open(f"api/{name}.md", "w") as f:
            f.write(api_page(_import_name(pkg)))
    for path in sorted((ROOT / "results").rglob("*")):
        if path.suffix in {".json", ".png"}:
            rel = path.relative_to(ROOT).as_posix()
            with mkdocs_gen_files.open(rel, "wb") as f:
                f.write(path.read_bytes())


if __name__ in {"__main__", "<run_path>"}:  # run by mkdocs-gen-files, not on import
    main()
