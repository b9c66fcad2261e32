"""How a run's batch splits into micro-batches on its ranks: a recipe's micro-batch lowered
to fit the batch asked for, one the user gave kept or refused naming both flags
(litebert.train.batch_split, through load_run_config)."""

from __future__ import annotations

import logging

import pytest

from litebert.cli import main
from litebert.provenance import FLAG, SET, Source
from litebert.train.batch_split import fitted
from litebert.train.run_config import PretrainConfig, RunConfigError, load_run_config

BATCH_FLAG = {"batch_size": Source(FLAG, "--batch-size", "batch_size")}


@pytest.mark.parametrize(("batch", "micro", "world", "expected"), [
    (16, 32, 1, 16), (48, 32, 1, 24), (30, 32, 1, 30), (17, 32, 1, 17), (34, 32, 1, 17),
    (64, 32, 1, 32), (16, 32, 2, 8), (48, 32, 2, 24), (36, 8, 4, 3),
])
def test_fitted_is_the_largest_micro_batch_at_most_the_recipes_that_splits_the_batch(
        batch, micro, world, expected):
    assert fitted(batch, micro, world) == expected
    assert (batch // world) % expected == 0 and expected <= micro


def lowered_lines(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records if "micro-batch lowered" in r.getMessage()]


def test_a_recipes_micro_batch_is_lowered_to_fit_the_batch_with_one_line(caplog):
    caplog.set_level(logging.INFO, logger="litebert")
    cfg = load_run_config("tiny-cpu", {"batch_size": 16}, BATCH_FLAG)  # recipe: 32 and 32
    assert (cfg.batch_size, cfg.micro_batch_size, cfg.accumulation(1)) == (16, 16, 1)
    [line] = lowered_lines(caplog)
    assert line.startswith("recipe ") and ("tiny-cpu.yaml: micro_batch_size=32 does not split "
                                           "--batch-size 16 on 1 rank: micro-batch lowered "
                                           "to 16") in line
    caplog.clear()
    assert load_run_config("tiny-cpu", {"batch_size": 64}).micro_batch_size == 32  # it splits
    assert load_run_config(None, {"batch_size": 20}).micro_batch_size == 20  # the default's
    assert len(lowered_lines(caplog)) == 1


def test_the_micro_batch_fits_the_ranks_of_the_launch(monkeypatch, caplog):
    monkeypatch.setenv("WORLD_SIZE", "2")
    monkeypatch.setenv("RANK", "1")  # only rank 0 says so
    cfg = load_run_config("tiny-cpu", {"batch_size": 48}, BATCH_FLAG)
    assert (cfg.micro_batch_size, cfg.accumulation(2)) == (24, 1)
    assert lowered_lines(caplog) == []
    with pytest.raises(RunConfigError, match=r"^--batch-size 17: 2 ranks cannot share it "
                                             r"evenly; give a multiple of 2$"):
        load_run_config("tiny-cpu", {"batch_size": 17}, BATCH_FLAG)


def test_a_micro_batch_the_user_gave_that_does_not_split_is_an_error_naming_both(capsys):
    for given in (["--micro-batch-size", "12"], ["--set", "micro_batch_size=12"]):
        assert main(["pretrain", "--config", "tiny-cpu", "--batch-size", "16", *given]) == 2
        err = capsys.readouterr().err
        assert f"error: {' '.join(given)}: does not split batch_size=16 on 1 rank" in err
        assert err.strip().endswith("(--batch-size 16)")
        assert "--micro-batch-size that divides 16" in err


def test_the_command_with_a_smaller_batch_goes_on_to_its_data(capsys, caplog):
    """`--batch-size 16` with tiny-cpu (micro-batch 32) was refused; it now stops only for
    the data this test does not give."""
    caplog.set_level(logging.INFO, logger="litebert")
    assert main(["pretrain", "--config", "tiny-cpu", "--batch-size", "16"]) == 2
    assert "no training data" in capsys.readouterr().err
    assert len(lowered_lines(caplog)) == 1


def test_each_phase_is_split_on_its_own(caplog):
    caplog.set_level(logging.INFO, logger="litebert")
    # bert-base: 256 a step in micro-batches of 32, its second phase of 8.
    cfg = load_run_config("bert-base", {"batch_size": 20}, BATCH_FLAG)
    assert [p.get("micro_batch_size") for p in cfg.phases] == [20, 5]
    assert len(lowered_lines(caplog)) == 2 and lowered_lines(caplog)[1].startswith("phase 2: ")
    with pytest.raises(RunConfigError, match=r"^--set phases.2.micro_batch_size=6: does not "
                                             r"split batch_size=20"):
        load_run_config("bert-base", {"batch_size": 20, "phases.2.micro_batch_size": 6},
                        {**BATCH_FLAG, "phases.2.micro_batch_size":
                            Source(SET, key="phases.2.micro_batch_size")})


def test_a_config_built_in_code_is_checked_when_it_trains():
    cfg = PretrainConfig(batch_size=16, micro_batch_size=32)
    with pytest.raises(RunConfigError, match=r"^pretrain config micro_batch_size=32: does not "
                                             r"split batch_size=16 on 1 rank"):
        cfg.accumulation(1)
    assert PretrainConfig(batch_size=64, micro_batch_size=16).accumulation(2) == 2
