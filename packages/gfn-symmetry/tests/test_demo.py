import importlib

# the package re-exports the function `demo`, which shadows the submodule attribute
demo_module = importlib.import_module("gfn_symmetry.demo")


def test_demo_table(monkeypatch):
    # the full demo (150 steps per method) is exercised by `aware-ml demo`; 5 steps check the table
    monkeypatch.setattr(demo_module, "_STEPS", 5)
    out = demo_module.demo(seed=1)
    lines = out.splitlines()
    assert "5 steps" in lines[0]
    assert lines[2].startswith("vanilla GFN") and lines[3].startswith("SA-GFN")
    assert "ratio L1" in lines[-1]
