import pareto_merge


def test_version_and_demo() -> None:
    assert pareto_merge.__version__ == "0.1.0"
    out = pareto_merge.demo(seed=0)
    assert isinstance(out, str) and out
