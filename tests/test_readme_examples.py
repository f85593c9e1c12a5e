"""Every package README's ``python`` code blocks run as written, in a fresh interpreter."""

import pathlib
import re
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
READMES = sorted((ROOT / "packages").glob("*/README.md"))
BLOCK = re.compile(r"^```python\n(.*?)^```", re.S | re.M)


def _examples() -> list[tuple[str, str]]:
    out = []
    for readme in READMES:
        blocks = BLOCK.findall(readme.read_text())
        if blocks:
            out.append((readme.parent.name, "\n".join(blocks)))
    return out


@pytest.mark.parametrize(("package", "code"), _examples(), ids=[p for p, _ in _examples()])
def test_readme_example_runs(package: str, code: str, tmp_path: pathlib.Path) -> None:
    script = tmp_path / "example.py"
    # one BLAS / torch thread: the examples are small and CI has 2 cores
    script.write_text(
        "import os\nos.environ.setdefault('OMP_NUM_THREADS', '1')\n"
        "try:\n    import torch\n    torch.set_num_threads(1)\nexcept ImportError:\n    pass\n"
        + code
    )
    proc = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )
    assert proc.returncode == 0, f"{package} README example failed:\n{proc.stderr[-3000:]}"
