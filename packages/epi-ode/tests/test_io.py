"""Loaders on files written in the real layouts: Cola-GNN text, CDC ILINet, Delphi epidata."""

import numpy as np
import pytest

from epi_ode.data import (
    epiweek_range,
    load_colagnn,
    load_ilinet,
    read_wide_csv,
    save_colagnn,
)

Y = np.array([[3.0, 10.0, 0.0], [4.0, np.nan, 1.0], [6.0, 12.0, 2.0], [5.0, 9.0, 4.0]])


def _write(path, text):
    path.write_text(text)
    return path


def test_colagnn_round_trip_keeps_missing_values(tmp_path):
    A = np.array([[0, 1, 0], [1, 0, 1], [0, 1, 0]], float)
    save_colagnn(tmp_path / "x.txt", Y, tmp_path / "x-adj.txt", A)
    Y2, A2 = load_colagnn(tmp_path / "x.txt", tmp_path / "x-adj.txt")
    np.testing.assert_array_equal(Y2, Y)
    np.testing.assert_array_equal(A2, A)


@pytest.mark.parametrize(
    ("text", "columns"),
    [
        ("3,10,0\n4,,1\n6,12,2\n5,9,4\n", None),
        ("a,b,c\n3,10,0\n4,,1\n6,12,2\n5,9,4\n", ["a", "b", "c"]),
        ("a;b;c\n3;10;0\n4;nan;1\n6;12;2\n5;9;4\n", ["a", "b", "c"]),
        ("3\t10\t0\n4\tNA\t1\n6\t12\t2\n5\t9\t4\n", None),
        ("3 10 0\n4 nan 1\n6 12 2\n5 9 4\n", None),
        ("week,b,c\n3,10,0\n4,X,1\n6,12,2\n5,9,4\n", ["week", "b", "c"]),
    ],
    ids=["comma", "header", "semicolon", "tab", "spaces", "header-X"],
)
def test_wide_csv_detects_header_and_delimiter(tmp_path, text, columns):
    values, cols = read_wide_csv(_write(tmp_path / "y.csv", text))
    assert cols == columns
    np.testing.assert_array_equal(values, Y)  # the header never becomes a row of NaN


def test_header_is_not_read_as_a_week(tmp_path):
    Y2, _ = load_colagnn(_write(tmp_path / "h.txt", "r1,r2,r3\n3,10,0\n4,,1\n6,12,2\n5,9,4\n"))
    assert Y2.shape == Y.shape and np.isfinite(Y2[0]).all()


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("1,2,3\n4,5\n", "line 2 has 2 fields"),
        ("1,2,3\n4,-5,6\n", "negative"),
        ("1,2,3\n4,abc,6\n", "line 2, column 2"),
        ("1,2\n3,05\n4,25\n", "decimal commas"),
        ("", "empty"),
        ("a,b\n", "no data rows"),
    ],
    ids=["ragged", "negative", "text-field", "decimal-comma", "empty", "header-only"],
)
def test_wide_csv_rejects_what_it_would_misread(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        load_colagnn(_write(tmp_path / "bad.txt", text))


ILINET = """PERCENTAGE OF VISITS FOR INFLUENZA-LIKE-ILLNESS REPORTED BY SENTINEL PROVIDERS
REGION TYPE,REGION,YEAR,WEEK,% WEIGHTED ILI,%UNWEIGHTED ILI,ILITOTAL,NUM. OF PROVIDERS,TOTAL PATIENTS
HHS Regions,Region 1,2014,52,1.1,1.2,120,30,9000
HHS Regions,Region 2,2014,52,2.1,2.2,220,40,9500
HHS Regions,Region 1,2014,53,1.3,1.4,130,30,9100
HHS Regions,Region 2,2014,53,X,X,X,40,9400
HHS Regions,Region 2,2015,2,2.5,2.6,250,41,9600
HHS Regions,Region 1,2015,2,1.5,1.6,150,31,9200
"""


def test_ilinet_layout_on_the_mmwr_grid(tmp_path):
    s = load_ilinet(_write(tmp_path / "ILINet.csv", ILINET))
    assert s.regions == ["Region 1", "Region 2"]
    assert s.epiweeks == [201452, 201453, 201501, 201502]  # 2014 has 53 weeks; week 1 missing
    want = np.array([[120, 220], [130, np.nan], [np.nan, np.nan], [150, 250]], float)
    np.testing.assert_array_equal(s.values, want)
    w = load_ilinet(tmp_path / "ILINet.csv", value="% WEIGHTED ILI")
    assert w.values[0, 1] == 2.1


def test_delphi_epiweek_layout_semicolons(tmp_path):
    text = "region;epiweek;num_ili;wili\nnat;201740;10;1.0\nhhs1;201740;3;1.1\nnat;201741;12;1.2\n"
    s = load_ilinet(_write(tmp_path / "fluview.csv", text))
    assert s.regions == ["nat", "hhs1"] and s.epiweeks == [201740, 201741]
    np.testing.assert_array_equal(s.values, [[10, 3], [12, np.nan]])


@pytest.mark.parametrize(
    ("text", "match"),
    [
        ("REGION,YEAR,WEEK,ILITOTAL\nA,2015,53,4\n", "week 53 does not exist in 2015"),
        ("REGION,YEAR,WEEK,ILITOTAL\nA,2015,3,4\nA,2015,3,5\n", "appears twice"),
        ("REGION,YEAR,WEEK,ILITOTAL\nA,2015,3,-4\n", "negative"),
        ("REGION,YEAR,WEEK,ILITOTAL\nA,2015,3\n", "fields"),
        ("REGION,DATE,ILITOTAL\nA,2015-01-01,4\n", "no header"),
        ("REGION,YEAR,WEEK,ILITOTAL\nA,2015,3,X\n", "no region has a value"),
    ],
    ids=["week53", "duplicate", "negative", "ragged", "no-week", "all-missing"],
)
def test_ilinet_rejects_what_it_would_misread(tmp_path, text, match):
    with pytest.raises(ValueError, match=match):
        load_ilinet(_write(tmp_path / "bad.csv", text))


def test_epiweek_range_years():
    weeks = epiweek_range(201501, 201601)
    assert len(weeks) == 53 and weeks[-2] == 201552
    with pytest.raises(ValueError, match="week 54"):
        epiweek_range(201554, 201601)


def test_semicolon_tables_read_decimal_commas(tmp_path):
    # European CSVs: ';' between fields, ',' inside numbers (once split into extra columns)
    values, cols = read_wide_csv(_write(tmp_path / "eu.csv", "a;b\n1,5;2\n3,25;4,0\n"))
    assert cols == ["a", "b"]
    np.testing.assert_array_equal(values, [[1.5, 2.0], [3.25, 4.0]])


def test_a_row_numbering_the_regions_is_a_header(tmp_path):
    # a header of region numbers 1..N was once read as a week of counts
    text = "1,2,3\n3,10,0\n4,,1\n6,12,2\n5,9,4\n"
    with pytest.warns(UserWarning, match="numbers the columns"):
        values, cols = read_wide_csv(_write(tmp_path / "n.csv", text))
    assert cols == ["1", "2", "3"]
    np.testing.assert_array_equal(values, Y)
    values, cols = read_wide_csv(tmp_path / "n.csv", header=False)
    assert cols is None and values.shape == (5, 3)


STATES = """PERCENTAGE OF VISITS FOR INFLUENZA-LIKE-ILLNESS REPORTED BY SENTINEL PROVIDERS\r
REGION TYPE,REGION,YEAR,WEEK,% WEIGHTED ILI,%UNWEIGHTED ILI,ILITOTAL,NUM. OF PROVIDERS\r
States,Alabama,2019,40,X,1.2,120,30\r
States,Florida,2019,40,X,X,X,X\r
States,Alabama,2019,41,X,1.4,130,30\r
States,Florida,2019,41,X,X,X,X\r
"""


def test_state_export_keeps_an_all_missing_state(tmp_path):
    # FluView's state file reports Florida as X throughout: the whole file was refused
    f = tmp_path / "ILINet.csv"
    f.write_bytes(b"\xef\xbb\xbf" + STATES.encode())  # BOM and CRLF, as downloaded
    with pytest.warns(UserWarning, match=r"\['Florida'\] have no value"):
        s = load_ilinet(f)
    assert s.regions == ["Alabama", "Florida"] and np.isnan(s.values[:, 1]).all()
    kept = s.drop("Florida")
    assert kept.regions == ["Alabama"] and kept.values[:, 0].tolist() == [120, 130]
