"""Cross-package checks: every package installs, imports, has a demo; the meta-package ties them."""

import importlib
import os
import pathlib
import shutil
import subprocess
import sys
import tomllib

import pytest

from aware_ml.registry import PACKAGES, import_name

PACKAGE_DIRS = sorted(
    p for p in (pathlib.Path(__file__).parents[1] / "packages").iterdir() if p.is_dir()
)


def test_registry_matches_workspace() -> None:
    names = {p.name for p in PACKAGE_DIRS} - {"aware-ml"}
    assert names == set(PACKAGES)


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_package_layout_and_import(package: str, repo_root: pathlib.Path) -> None:
    root = repo_root / "packages" / package
    meta = tomllib.loads((root / "pyproject.toml").read_text())["project"]
    assert meta["name"] == package
    assert (root / "README.md").is_file()
    assert (root / "tests").is_dir()
    assert (root / "src" / import_name(package) / "__init__.py").is_file()
    module = importlib.import_module(import_name(package))
    assert module.__version__ == meta["version"]
    assert callable(module.demo)
    assert "__all__" in vars(module)


def test_meta_package_extras_cover_every_package(repo_root: pathlib.Path) -> None:
    meta = tomllib.loads((repo_root / "packages" / "aware-ml" / "pyproject.toml").read_text())
    extras = meta["project"]["optional-dependencies"]
    versions = {
        name: tomllib.loads((repo_root / "packages" / name / "pyproject.toml").read_text())[
            "project"
        ]["version"]
        for name in PACKAGES
    }
    # sibling pins: outside uv's workspace sources an unpinned name would resolve on PyPI
    assert set(extras["all"]) == {f"{n}=={v}" for n, v in versions.items()}
    for name in PACKAGES:
        assert extras[name] == [f"{name}=={versions[name]}"]


def test_meta_package_installs_from_a_wheelhouse_with_pip(
    repo_root: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """`uv build` the meta-package and isocal, then plain pip: `aware-ml[isocal]` from the
    wheelhouse (once failing: the extras named siblings that pip looked up on PyPI)."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv not on PATH")
    run = lambda *a: subprocess.run(a, cwd=repo_root, check=True, capture_output=True, text=True)  # noqa: E731
    dist = tmp_path / "dist"
    for name in ("aware-ml", "isocal"):
        run(uv, "build", "--wheel", "--package", name, "--out-dir", str(dist))
    venv = tmp_path / "venv"
    run(uv, "venv", "--quiet", "--seed", "--python", sys.executable, str(venv))
    python = str(venv / "bin" / "python")
    run(python, "-m", "pip", "install", "--quiet", "--find-links", str(dist), "aware-ml[isocal]")
    out = run(python, "-c", "import isocal, aware_ml; print(isocal.__version__)").stdout
    assert out.strip() == "0.1.0"


def test_console_script_info() -> None:
    exe = shutil.which("aware-ml") or str(pathlib.Path(sys.executable).parent / "aware-ml")
    out = subprocess.run([exe, "info"], capture_output=True, text=True, check=True).stdout
    assert all(name in out for name in PACKAGES)


def test_uv_lock_is_current(repo_root: pathlib.Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv not on PATH")
    subprocess.run([uv, "lock", "--check"], cwd=repo_root, check=True, capture_output=True)


def test_wheel_installs_into_bare_venv(repo_root: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """Build one small package with `uv build` and import it from a fresh venv."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv not on PATH")
    run = lambda *a: subprocess.run(a, cwd=repo_root, check=True, capture_output=True, text=True)  # noqa: E731
    run(uv, "build", "--wheel", "--package", "sys-unlearn", "--out-dir", str(tmp_path / "dist"))
    (wheel,) = (tmp_path / "dist").glob("sys_unlearn-*.whl")
    venv = tmp_path / "venv"
    run(uv, "venv", "--quiet", "--python", sys.executable, str(venv))
    python = venv / "bin" / "python"
    run(uv, "pip", "install", "--quiet", "--python", str(python), str(wheel))
    out = run(str(python), "-c", "import sys_unlearn; print(sys_unlearn.__version__)").stdout
    assert out.strip() == "0.1.0"


def test_console_script_demo_prints_a_table() -> None:
    exe = shutil.which("aware-ml") or str(pathlib.Path(sys.executable).parent / "aware-ml")
    proc = subprocess.run([exe, "demo", "sys-unlearn"], capture_output=True, text=True, check=True)
    assert proc.stdout.startswith("== sys-unlearn 0.1.0")
    assert "exact=True" in proc.stdout


def test_fresh_copy_runs_the_readme_command(
    repo_root: pathlib.Path, tmp_path: pathlib.Path
) -> None:
    """A clean copy of the repository (no .venv) runs `uv run aware-ml info` with nothing synced."""
    uv = shutil.which("uv")
    if uv is None:
        pytest.skip("uv not on PATH")
    files = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=repo_root,
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")
    copy = tmp_path / "repo"
    for rel in filter(None, files):
        src = repo_root / rel.decode()
        if src.is_file():
            dst = copy / rel.decode()
            dst.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dst)
    assert not (copy / ".venv").exists()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("VIRTUAL_ENV", "UV_PROJECT"))}
    proc = subprocess.run(
        [uv, "run", "--frozen", "aware-ml", "info"],
        cwd=copy,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    for name in PACKAGES:
        assert f"{name} " in proc.stdout and "not installed" not in proc.stdout


def test_sparse_attn_device_check_dry_run(repo_root: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """The GPU check script (issue #60 item 5) runs on the CPU and every path passes."""
    import json
    import subprocess
    import sys

    out = tmp_path / "check.json"
    proc = subprocess.run(
        [sys.executable, str(repo_root / "tools/bench/gpu_check.py"), "--device", "cpu",
         "--quick", "--out", str(out)],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    data = json.loads(out.read_text())
    assert data["correctness"] and all(r["ok"] for r in data["correctness"])
    assert {r["dtype"] for r in data["speed"]} == {"fp32", "bf16"}
    assert [r["N"] for r in data["llama"]] == [2048] and data["llama"][0]["bound"] > 1


def test_workspace_device_check_dry_run(repo_root: pathlib.Path, tmp_path: pathlib.Path) -> None:
    """tools/bench/device_check.py (issue #76 item 3) runs every package's torch paths with
    ``--device cpu``: each estimator fit and each tensor call, all agreeing with the CPU run."""
    import json
    import subprocess
    import sys

    out = tmp_path / "check.json"
    proc = subprocess.run(
        [sys.executable, str(repo_root / "tools/bench/device_check.py"), "--device", "cpu",
         "--out", str(out)],
        capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
    rows = json.loads(out.read_text())["rows"]
    assert len(rows) >= 70 and all(r["ok"] for r in rows)
    assert {r["entry"].split(":")[0] for r in rows} >= {
        "brain-gcl", "causal-ts", "cost-model", "epi-ode", "evolving-dg", "interaction-moe",
        "kd-losses", "sparse-attn", "vlm-pseudolabel", "nas-puzzle", "gfn-symmetry",
    }  # fmt: skip
