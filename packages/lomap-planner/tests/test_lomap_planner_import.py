import lomap_planner


def test_version_and_demo() -> None:
    assert lomap_planner.__version__ == "0.1.0"
    out = lomap_planner.demo(seed=0)
    assert isinstance(out, str) and out
