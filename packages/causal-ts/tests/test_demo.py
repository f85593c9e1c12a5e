import causal_ts


def test_version_and_public_api() -> None:
    assert causal_ts.__version__ == "0.1.0"
    for name in causal_ts.__all__:
        assert hasattr(causal_ts, name), name
