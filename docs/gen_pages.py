"""Build-time pages for the documentation site (run by mkdocs-gen-files).

One page per package from its README, one API reference page per package (mkdocstrings reads
the code's NumPy docstrings), the results files and benchmark plots beside them. Relative links
in the READMEs are mapped to their pages; links to files the site does not carry (scripts,
sources) become plain code text, so ``mkdocs build --strict`` fails only on real breakage.
"""

from __future__ import annotations

import pathlib
import posixpath
import re

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
        if dest is None:
            return f"`{label}`" if not label.startswith("`") else label
        rel = posixpath.relpath(dest, posixpath.dirname(page) or ".")
        return f"{bang}[{label}]({rel}{'#' + anchor if anchor else ''})"

    return LINK.sub(sub, text)


def main() -> None:
    index = rewrite_links((ROOT / "README.md").read_text(), ROOT / "README.md", "index.md")
    with mkdocs_gen_files.open("index.md", "w") as f:
        f.write(index)
    for pkg in PACKAGES:
        name = pkg.name
        page = f"packages/{name}.md"
        text = rewrite_links((pkg / "README.md").read_text(), pkg / "README.md", page)
        if name != "aware-ml":
            text += f"\n\n[API reference](../api/{name}.md)\n"
        with mkdocs_gen_files.open(page, "w") as f:
            f.write(text)
        with mkdocs_gen_files.open(f"api/{name}.md", "w") as f:
            f.write(f"# `{_import_name(pkg)}` API\n\n::: {_import_name(pkg)}\n")
    for path in sorted((ROOT / "results").rglob("*")):
        if path.suffix in {".json", ".png"}:
            rel = path.relative_to(ROOT).as_posix()
            with mkdocs_gen_files.open(rel, "wb") as f:
                f.write(path.read_bytes())


main()
