import pytest

from aware_ml.cli import main, run_demo
from aware_ml.registry import PACKAGES, import_name, installed_packages


def test_import_name() -> None:
    assert import_name("qat-dg") == "qat_dg"
    assert import_name("isocal") == "isocal"


def test_info_lists_every_package(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    for name in PACKAGES:
        assert name in out
    assert all(v is not None for v in installed_packages().values())


def test_unknown_package_is_rejected(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["demo", "no-such-package"]) == 2
    assert "unknown package" in capsys.readouterr().err
    with pytest.raises(ValueError, match="package"):
        run_demo("no-such-package")
