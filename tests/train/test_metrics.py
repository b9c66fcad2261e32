"""MetricsLogger / read_metrics: the JSON lines file, resuming, crash tolerance, TensorBoard."""

from __future__ import annotations

import dataclasses
import errno
import json
import math
import os
import struct
from pathlib import Path

import numpy as np
import pytest
import torch

from litebert.train import checkpoint
from litebert.train.metrics import (
    METRICS_NAME,
    TENSORBOARD_DIR,
    MetricsError,
    MetricsLogger,
    read_metrics,
)
from litebert.train.pretrain import pretrain
from litebert.write_errors import WriteFailed
from tests.helpers.pretrain import run_config


def train_record(step: int) -> dict:
    return {"step": step, "loss": 3.0 - step / 10, "mlm_loss": 2.5, "sop_loss": 0.5,
            "lr": 1e-4 * step, "tokens_per_s": 1000.0, "grad_norm": 1.5, "time": float(step)}


def log_steps(run_dir: Path, steps, **kwargs) -> None:
    with MetricsLogger(run_dir, **kwargs) as logger:
        for step in steps:
            logger.log(train_record(step))


def lines(run_dir: Path) -> list[dict]:
    return [json.loads(line) for line in (run_dir / METRICS_NAME).read_text().splitlines()]


def read_events(directory: Path) -> list:
    """Every Event of the TFRecord files in `directory`, checking the framing and CRCs.

    TFRecord: uint64 length, uint32 masked crc of the length, data, uint32 masked crc.
    """
    from tensorboardX.proto.event_pb2 import Event
    from tensorboardX.record_writer import masked_crc32c

    events = []
    for path in sorted(directory.glob("events.out.tfevents.*")):
        data, pos = path.read_bytes(), 0
        while pos < len(data):
            header = data[pos:pos + 8]
            (length,) = struct.unpack("<Q", header)
            (header_crc,) = struct.unpack("<I", data[pos + 8:pos + 12])
            body = data[pos + 12:pos + 12 + length]
            (body_crc,) = struct.unpack("<I", data[pos + 12 + length:pos + 16 + length])
            assert header_crc == masked_crc32c(header) and body_crc == masked_crc32c(body)
            events.append(Event.FromString(body))
            pos += 16 + length
    return events


def scalars(directory: Path) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for event in read_events(directory):
        for value in event.summary.value:
            out.setdefault(value.tag, []).append((event.step, value.simple_value))
    return out


def test_log_writes_plain_lines_and_converts_tensors(tmp_path):
    with MetricsLogger(tmp_path, tensorboard=False) as logger:
        logger.log({"loss": torch.tensor(2.5), "step": np.int64(3), "lr": np.float32(0.5),
                    "mlm_loss": torch.tensor([1.25]), "note": "warmup",
                    "grad_norm": float("nan"), "sop_loss": torch.tensor(float("inf"))})
        # flushed per record: readable before close
        assert lines(tmp_path) == [{"step": 3, "loss": 2.5, "lr": 0.5, "mlm_loss": 1.25,
                                    "note": "warmup", "grad_norm": None, "sop_loss": None}]
    assert isinstance(lines(tmp_path)[0]["step"], int)
    train, evals = read_metrics(tmp_path)
    assert evals == [] and math.isnan(train[0]["grad_norm"]) and train[0]["loss"] == 2.5


def test_log_rejects_bad_records(tmp_path):
    with MetricsLogger(tmp_path, tensorboard=False) as logger:
        with pytest.raises(MetricsError, match="'step'"):
            logger.log({"loss": 1.0})
        with pytest.raises(MetricsError, match="'loss'.*one-element"):
            logger.log({"step": 1, "loss": torch.ones(3)})
        with pytest.raises(MetricsError, match="integer"):
            logger.log({"step": 1.5, "loss": 1.0})
    assert (tmp_path / METRICS_NAME).read_text() == ""


def test_train_and_eval_records_are_split(tmp_path):
    with MetricsLogger(tmp_path, tensorboard=False) as logger:
        logger.log(train_record(1))
        logger.log({"step": 1, "eval_loss": 2.0, "eval_mlm_accuracy": 0.25})
        logger.log(train_record(2))
    train, evals = read_metrics(tmp_path)
    assert [r["step"] for r in train] == [1, 2]
    assert evals == [{"step": 1, "eval_loss": 2.0, "eval_mlm_accuracy": 0.25}]


def test_disabled_logger_writes_nothing(tmp_path):
    run_dir = tmp_path / "run"
    log_steps(run_dir, [1, 2], enabled=False)
    MetricsLogger(run_dir, enabled=False).close()
    assert not run_dir.exists()


def test_resume_step_drops_later_steps(tmp_path):
    log_steps(tmp_path, range(1, 6), tensorboard=False)
    with MetricsLogger(tmp_path, tensorboard=False) as logger:
        logger.log({"step": 4, "eval_loss": 1.0})
    log_steps(tmp_path, [4, 5, 6], resume_step=3, tensorboard=False)
    assert [r["step"] for r in lines(tmp_path)] == [1, 2, 3, 4, 5, 6]
    assert not list(tmp_path.glob(".*tmp*"))  # the atomic rewrite left no temp file


def test_truncated_last_line_is_tolerated_and_repaired(tmp_path):
    log_steps(tmp_path, [1, 2], tensorboard=False)
    path = tmp_path / METRICS_NAME
    with path.open("a") as f:
        f.write('{"step": 3, "loss": 1.')  # killed mid-write
    train, _ = read_metrics(tmp_path)
    assert [r["step"] for r in train] == [1, 2]
    # appending must not glue the next record onto the partial line
    log_steps(tmp_path, [3], tensorboard=False)
    assert [r["step"] for r in lines(tmp_path)] == [1, 2, 3]


def test_malformed_middle_line_names_file_and_line(tmp_path):
    log_steps(tmp_path, [1], tensorboard=False)
    path = tmp_path / METRICS_NAME
    with path.open("a") as f:
        f.write("not json\n")
    log_steps(tmp_path / "other", [2], tensorboard=False)
    path.write_text(path.read_text() + (tmp_path / "other" / METRICS_NAME).read_text())
    with pytest.raises(MetricsError, match=rf"{METRICS_NAME}:2: malformed"):
        read_metrics(tmp_path)
    with pytest.raises(MetricsError, match=rf"{METRICS_NAME}:2: malformed"):
        MetricsLogger(tmp_path, resume_step=1, tensorboard=False)


def test_missing_metrics_file_is_a_clear_error(tmp_path):
    with pytest.raises(MetricsError, match="no metrics.jsonl"):
        read_metrics(tmp_path)
    with pytest.raises(MetricsError, match="no such run directory"):
        read_metrics(tmp_path / "absent")


def test_tensorboard_scalars(tmp_path):
    with MetricsLogger(tmp_path) as logger:
        logger.log(train_record(1))
        logger.log({"step": 1, "eval_mlm_accuracy": torch.tensor(0.25), "eval_loss": 2.0})
        logger.log(train_record(2))
    found = scalars(tmp_path / TENSORBOARD_DIR)
    assert found["train/loss"] == [(1, pytest.approx(2.9)), (2, pytest.approx(2.8))]
    assert found["eval/mlm_accuracy"] == [(1, 0.25)]
    assert found["eval/loss"] == [(1, 2.0)]
    assert {"train/lr", "train/sop_loss", "train/tokens_per_s", "train/time"} <= set(found)
    assert not any(tag.endswith("step") for tag in found)


def test_tensorboard_purges_after_resume_step(tmp_path):
    log_steps(tmp_path, [1, 2, 3])
    log_steps(tmp_path, [3], resume_step=2)
    events = read_events(tmp_path / TENSORBOARD_DIR)
    starts = [e.step for e in events if e.HasField("session_log")]
    # TensorBoard hides events with step >= 3 written before this marker
    assert starts == [3]
    assert len(list((tmp_path / TENSORBOARD_DIR).glob("events.out.tfevents.*"))) == 2


# ---- a write that fails: a full disk ---------------------------------------------------------

def full_disk_after(monkeypatch, records: int) -> None:
    """Writes to metrics.jsonl take `records` records, then the disk fills up half-way through
    the next one (the kernel takes what fits, the next write fails), as a real disk does."""
    real, state = os.write, {"records": 0, "full": False}

    def write(fd: int, data) -> int:
        if not os.readlink(f"/proc/self/fd/{fd}").endswith(METRICS_NAME):
            return real(fd, data)
        if state["full"]:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if state["records"] == records:
            state["full"] = True
            return real(fd, bytes(data)[:len(data) // 2])
        state["records"] += 1
        return real(fd, data)

    monkeypatch.setattr(os, "write", write)


def test_a_full_disk_leaves_whole_lines_and_logging_goes_on_after(tmp_path, monkeypatch):
    logger = MetricsLogger(tmp_path, tensorboard=False)
    for step in (1, 2):
        logger.log(train_record(step))
    before = (tmp_path / METRICS_NAME).read_bytes()
    full_disk_after(monkeypatch, 0)
    with pytest.raises(WriteFailed) as caught:
        logger.log(train_record(3))
    assert str(caught.value).startswith(
        f"could not write metrics.jsonl to {tmp_path / METRICS_NAME}: no space left on the "
        f"device (it needs about ")
    assert "free there); nothing complete was damaged, but no checkpoint was written" \
        in str(caught.value)
    assert (tmp_path / METRICS_NAME).read_bytes() == before  # the half line is cut off again
    monkeypatch.undo()
    logger.log(train_record(3))
    logger.close()
    assert [x["step"] for x in lines(tmp_path)] == [1, 2, 3]


def test_a_full_disk_while_logging_names_the_checkpoint_and_the_run_resumes(tmp_path,
                                                                           monkeypatch,
                                                                           data_dir):
    run = tmp_path / "run"
    cfg = run_config(data_dir, run, max_steps=6, save_every=2, eval_every=100, export=False)
    full_disk_after(monkeypatch, 4)  # steps 1-4 logged, step 5 fails
    with pytest.raises(WriteFailed) as caught:
        pretrain(cfg)
    newest = checkpoint.checkpoint_dir(run) / "step-00000004"
    assert f"the newest intact checkpoint is {newest}: free some space, then run the same " \
           f"command again" in str(caught.value)
    assert [x["step"] for x in lines(run)] == [1, 2, 3, 4]
    monkeypatch.undo()
    pretrain(dataclasses.replace(cfg, resume="auto"))
    assert [x["step"] for x in read_metrics(run)[0]] == [1, 2, 3, 4, 5, 6]
