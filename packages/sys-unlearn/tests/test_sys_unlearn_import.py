import sys_unlearn


def test_version_and_demo() -> None:
    assert sys_unlearn.__version__ == "0.1.0"
    out = sys_unlearn.demo(seed=0)
    assert isinstance(out, str) and out
