import nas_puzzle


def test_version_and_demo() -> None:
    assert nas_puzzle.__version__ == "0.1.0"
    out = nas_puzzle.demo(seed=0)
    assert isinstance(out, str) and out
