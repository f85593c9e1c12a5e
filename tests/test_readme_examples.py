"""Every package README's ``python`` code blocks run as written, in a fresh interpreter.

The examples run two at a time (each is limited to one thread, CI has two cores) and share a
bytecode cache, so a fresh interpreter does not recompile torch for every README.
"""

import concurrent.futures
import os
import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
READMES = sorted((ROOT / "packages").glob("*/README.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)
PRELUDE = (
    "import os\nos.environ.setdefault('OMP_NUM_THREADS', '1')\n"
    "try:\n    import torch\n    torch.set_num_threads(1)\nexcept ImportError:\n    pass\n"
)


def _examples() -> list[tuple[str, str]]:
    out = []
    for readme in READMES:
        blocks = BLOCK.findall(readme.read_text())
        if blocks:
            out.append((readme.parent.name, "\n".join(blocks)))
    return out


EXAMPLES = _examples()


def _run(package: str, code: str, folder: pathlib.Path, cache: pathlib.Path):
    work = folder / package
    work.mkdir(parents=True, exist_ok=True)
    script = work / "example.py"
    script.write_text(PRELUDE + code)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return subprocess.run(
        [sys.executable, str(script)], cwd=work, capture_output=True, text=True, timeout=600,
        env=env,
    )  # fmt: skip


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict:
    folder = tmp_path_factory.mktemp("readme_examples")
    cache = tmp_path_factory.mktemp("pycache")
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        futures = {p: pool.submit(_run, p, code, folder, cache) for p, code in EXAMPLES}
        return {p: f.result() for p, f in futures.items()}


@pytest.mark.parametrize("package", [p for p, _ in EXAMPLES])
def test_readme_example_runs(package: str, results: dict) -> None:
    proc = results[package]
    assert proc.returncode == 0, f"{package} README example failed:\n{proc.stderr[-3000:]}"
