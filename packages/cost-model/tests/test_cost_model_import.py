import cost_model


def test_version_and_demo() -> None:
    assert cost_model.__version__ == "0.1.0"
    out = cost_model.demo(seed=0)
    assert isinstance(out, str) and out
