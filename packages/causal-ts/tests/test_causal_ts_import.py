import causal_ts


def test_version_and_demo() -> None:
    assert causal_ts.__version__ == "0.1.0"
    out = causal_ts.demo(seed=0)
    assert isinstance(out, str) and out
