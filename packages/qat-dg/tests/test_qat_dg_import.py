import qat_dg


def test_version_and_demo() -> None:
    assert qat_dg.__version__ == "0.1.0"
    out = qat_dg.demo(seed=0)
    assert isinstance(out, str) and out
