"""make bench's host side (ci/bench.py) on saved real runs: the parser,
the medians and the table, without booting anything. tests/data/bench/
holds a quick run on the series kernel and one on the unpatched base
(README there). Timings are never asserted: only what the counts say."""
import os
import shutil

import pytest

import bench
from vmtest import kvline

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data",
                    "bench")
SERIES = os.path.join(DATA, "series")
BASE = os.path.join(DATA, "base")


def load(run):
    with open(os.path.join(run, "results.log")) as f:
        return bench.parse(f.read())


def console(run):
    with open(os.path.join(run, "console.log")) as f:
        return f.read()


def copy(run, tmp_path):
    dst = tmp_path / os.path.basename(run)
    shutil.copytree(run, dst)
    return str(dst)


def test_parser_reads_every_line_of_a_series_run():
    p = load(SERIES)
    assert p["done"] and p["exit"] == 0
    assert p["feature"]["defer_callchain"] == "yes"
    assert p["counters"] == {"perf_callchain_user": "ok",
                             "unwind_user_walk": "ok"}
    st = p["start"]
    assert st["plan"] == "quick" and st["reps"] == 3
    ks = [int(k) for k in st["k"].split(",")]
    assert len(p["runs"]) == p["end"]["runs"] == \
        st["workloads"] * len(ks) * 3 * st["reps"]
    r = p["runs"][0]
    assert isinstance(r["samples"], int) and r["mode"] in bench.MODES
    assert bench.problems(p, console(SERIES)) == []


def test_series_rows_keep_deferrals_limits_and_the_model():
    rows = bench.aggregate(load(SERIES))
    assert rows and all(r[m]["status"] == "ok" for r in rows
                        for m in bench.MODES)
    assert bench.limit_failures(rows) == []
    for r in rows:
        d, i, n = r["deferred"], r["inplace"], r["none"]
        assert d["reps"] == 3
        assert 0.97 <= d["records_per_entry"] <= 1.0 + bench.LIMIT_SLACK
        assert d["walks_deferred"] <= 1.0 + bench.LIMIT_SLACK
        # No user chain, no user walk; in place, one per sample.
        assert n["walks_inplace"] == n["walks_deferred"] == 0
        assert i["walks_deferred"] == 0 and i["walks_inplace"] > 0.9
        assert d["floor"] > n["bytes"] + bench.MARKER_BYTES
        assert i["bytes_nofallback"] == i["bytes"]
        if r["workload"].startswith("long") and r["events"] == "task":
            # The bar: deferred bytes within 5 % of the floor
            # (at depth 128 only without the fallback samples' 1 KiB
            # in-place chains), and smaller than in place.
            assert abs(d["floor_dev_nofallback"]) < 0.05, r
            if r["depth"] < 100:
                assert abs(d["floor_dev"]) < 0.05, r
            assert d["bytes"] < i["bytes"]


def test_table_has_one_line_per_row_and_names_the_columns():
    rows = bench.aggregate(load(SERIES))
    text = bench.table(rows).splitlines()
    assert text[0] == bench.HEADER and set(text[1]) == {"-"}
    assert len(text) == 2 + len(rows)
    for line, row in zip(text[2:], rows):
        assert line.split()[0] == row["workload"]
        assert f"{row['deferred']['bytes']:.0f}" in line
        assert f"{row['deferred']['floor_dev']:+.1%}" in line


def test_main_writes_csv_json_and_summary(tmp_path, capsys):
    run = copy(SERIES, tmp_path)
    assert bench.main([run, "--no-plot"]) == 0
    out = capsys.readouterr().out
    assert "bench: OK" in out and bench.HEADER in out
    for f in ("runs.csv", "summary.csv", "summary.json", "summary.txt"):
        assert os.path.getsize(os.path.join(run, f)) > 0
    with open(os.path.join(run, "runs.csv")) as f:
        assert len(f.read().splitlines()) == 1 + len(load(SERIES)["runs"])
    with open(os.path.join(run, "summary.txt")) as f:
        assert "B/sample deferred" in f.read()


def test_plot_is_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    rows = bench.aggregate(load(SERIES))
    out = tmp_path / "bench.png"
    bench.plot(rows, str(out))
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_base_run_says_unsupported_and_passes(tmp_path, capsys):
    p = load(BASE)
    assert p["feature"]["defer_callchain"] == "no"
    assert p["counters"]["unwind_user_walk"] != "ok"
    rows = bench.aggregate(p)
    assert rows and all(r["deferred"]["status"] == "unsupported"
                        for r in rows)
    assert all(r["inplace"]["status"] == "ok" for r in rows)
    assert "unsupported" in bench.table(rows)
    assert bench.main([copy(BASE, tmp_path), "--no-plot"]) == 0
    assert "unsupported by this kernel" in capsys.readouterr().out


def test_a_run_cut_short_fails(tmp_path, capsys):
    run = copy(SERIES, tmp_path)
    path = os.path.join(run, "results.log")
    with open(path) as f:
        lines = f.read().splitlines()
    cut = [i for i, l in enumerate(lines) if l.startswith("bench-run")][5]
    with open(path, "w") as f:
        f.write("\n".join(lines[:cut]) + "\n")
    assert bench.main([run, "--no-plot"]) == 1
    out = capsys.readouterr().out
    assert "no done marker" in out and "did not finish" in out


def test_deferral_over_its_limit_fails(tmp_path, capsys):
    """Two records for every entry: the dedup property is broken."""
    run = copy(SERIES, tmp_path)
    path = os.path.join(run, "results.log")
    with open(path) as f:
        text = f.read()
    out = []
    for line in text.splitlines():
        if line.startswith("bench-run") and "mode=deferred" in line:
            f = kvline.fields(line)
            line = line.replace(f"records={f['records']} ",
                                f"records={2 * f['records']} ")
        out.append(line)
    with open(path, "w") as f:
        f.write("\n".join(out) + "\n")
    assert bench.main([run, "--no-plot"]) == 1
    assert "deferred records per entry" in capsys.readouterr().out


def test_fields_parses_numbers_and_words():
    f = kvline.fields("bench-run workload=long k=4 mode=none status=ok "
                      "samples=12 reason=Invalid_argument")
    assert f == {"workload": "long", "k": 4, "mode": "none",
                 "status": "ok", "samples": 12,
                 "reason": "Invalid_argument"}
