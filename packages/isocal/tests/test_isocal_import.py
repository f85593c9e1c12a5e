import isocal


def test_version_and_demo() -> None:
    assert isocal.__version__ == "0.1.0"
    out = isocal.demo(seed=0)
    assert isinstance(out, str) and out
