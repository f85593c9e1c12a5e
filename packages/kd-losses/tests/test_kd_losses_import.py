import kd_losses


def test_version_and_demo() -> None:
    assert kd_losses.__version__ == "0.1.0"
    out = kd_losses.demo(seed=0)
    assert isinstance(out, str) and out
