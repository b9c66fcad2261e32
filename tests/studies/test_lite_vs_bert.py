"""`litebert study run lite-vs-bert`: every part, resumable, and its report (quick: the rows
shrunk to 2 layers of width 64; each part's own module has its tests beside this one)."""

from __future__ import annotations

import json

import pytest

from litebert.cli import main
from litebert.studies.lite_vs_bert.study import PARTS, LiteVsBertError, measured_before, run

ROWS = ["albert-base", "bert-base", "bert-large"]  # a pair, and the reference


@pytest.fixture(scope="module")
def study_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("lite-vs-bert")
    assert main(["study", "run", "lite-vs-bert", "--quick", "--out", str(out),
                 "--only", *ROWS]) == 0
    return out


def test_every_part_is_written_and_the_report_has_each_table(study_dir):
    assert sorted(p.stem for p in (study_dir / "parts").glob("*.json")) == sorted(PARTS)
    report = (study_dir / "report.md").read_text()
    for heading in ("beside Table 1", "Bytes communicated per step", "beside Table 2",
                    "2 gloo processes on this machine", "Activation memory",
                    "Dropout, not sharing"):
        assert heading in report
    assert (study_dir / "speedup.png").stat().st_size > 10_000
    results = json.loads((study_dir / "results.json").read_text())
    assert set(results["predictions"]["links"]) >= {"nvlink-8xh100", "tpu-v3-128"}
    for link in results["predictions"]["links"].values():
        assert link["ddp"]["bert-large"] == pytest.approx(1.0)


def test_albert_sends_fewer_bytes_and_fsdp_gathers_its_shared_units_once(study_dir):
    counted = json.loads((study_dir / "parts" / "communication.json").read_text())["result"]
    albert, bert = counted["albert-base"], counted["bert-base"]
    assert albert["how"].startswith("counted")
    assert albert["ddp"]["all_reduce"]["bytes"] < bert["ddp"]["all_reduce"]["bytes"]
    assert set(albert["fsdp"]["gathers_per_unit"].values()) == {1}
    assert max(albert["fsdp-per-use"]["gathers_per_unit"].values()) == 2  # 2 layers: per use
    assert albert["losses"]["max_rel_diff"] < 1e-5


def test_the_dropout_part_measures_only_the_setting_the_activations_part_did_not(study_dir):
    parts = study_dir / "parts"
    dropout = json.loads((parts / "dropout.json").read_text())["result"]
    activations = json.loads((parts / "activations.json").read_text())["result"]
    own = {"albert-base": "dropout 0.0", "bert-base": "dropout 0.1"}  # the presets' settings
    for name, key in own.items():
        assert dropout[name]["reused"] == [key]
        length = str(dropout[name]["length"])
        assert dropout[name][key] == activations[name]["lengths"][length]["per_sequence_bytes"]
        assert set(dropout[name]) >= {"dropout 0.0", "dropout 0.1"}  # the other one measured


def test_a_measurement_is_found_at_its_depth_also_inside_an_extrapolation():
    shallow = [{"layers": 2, "per_sequence_bytes": 2.0}, {"layers": 3, "per_sequence_bytes": 3.0}]
    row = {"lengths": {"512": {"layers": 12, "per_sequence_bytes": 12.0,
                               "extrapolated": {"layers": 12, "method": "extrapolated",
                                                "measured": shallow}},
                       "128": {"layers": 12, "method": "extrapolated", "measured": shallow}}}
    assert measured_before(row, 512, 3)["per_sequence_bytes"] == 3.0
    assert measured_before(row, 512, 12)["per_sequence_bytes"] == 12.0
    assert measured_before(row, 128, 2)["per_sequence_bytes"] == 2.0
    assert measured_before(row, 128, 12) is None  # extrapolated, not measured
    assert measured_before(row, 64, 2) is None and measured_before(None, 512, 3) is None


def test_a_finished_part_is_not_run_again(study_dir, monkeypatch):
    def fail(*args):
        raise AssertionError("a finished part ran again")
    monkeypatch.setattr("litebert.studies.lite_vs_bert.study.PARTS",
                        {name: fail for name in PARTS})
    done = run(study_dir, quick=True, only=ROWS)
    assert set(done) == set(PARTS)


def test_another_plan_in_the_same_directory_is_refused(study_dir):
    with pytest.raises(LiteVsBertError, match="another --out"):
        run(study_dir, quick=False, only=ROWS)


def test_bad_requests_are_sentences(tmp_path, capsys):
    assert main(["study", "run", "lite-vs-bert", "--out", str(tmp_path / "a"),
                 "--only", "albert-huge"]) == 2
    assert "albert-huge: not a row of lite-vs-bert" in capsys.readouterr().err
    assert main(["study", "run", "lite-vs-bert", "--out", str(tmp_path / "b"),
                 "--steps", "3"]) == 2
    assert "trains no run" in capsys.readouterr().err
    assert main(["study", "report", str(tmp_path / "nowhere")]) == 2


def test_a_failed_part_is_a_sentence_that_keeps_the_parts_before_it(tmp_path, monkeypatch,
                                                                     capsys):
    def broken(plan, done):
        raise RuntimeError("process 1 failed: gloo connection reset")
    monkeypatch.setattr("litebert.studies.lite_vs_bert.study.PARTS",
                        {"footprint": PARTS["footprint"], "communication": broken})
    out = tmp_path / "study"
    assert main(["study", "run", "lite-vs-bert", "--quick", "--out", str(out),
                 "--only", "albert-base"]) == 2
    err = capsys.readouterr().err
    assert "the communication part failed: process 1 failed" in err
    assert "the same command continues" in err
    assert (out / "parts" / "footprint.json").is_file()
    assert not (out / "parts" / "communication.json").exists()
