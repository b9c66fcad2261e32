"""The lite-vs-bert communication counts: what DDP and FSDP send per step at two gloo
processes, on a tiny ALBERT row whose one attention and one FFN module serve every depth."""

from __future__ import annotations

import os
import socket
import time

import pytest

from litebert.studies.lite_vs_bert import communication
from litebert.studies.lite_vs_bert.children import child_context
from litebert.studies.lite_vs_bert.communication import (
    MODES,
    compare_losses,
    count_collectives,
    count_modes,
)
from litebert.studies.lite_vs_bert.rows import meta_model, row_config

LAYERS = 3  # uses of each shared module per forward
TINY = dict(num_hidden_layers=LAYERS, hidden_size=64, num_attention_heads=2,
            intermediate_size=128, embedding_size=32)
SHARED = ("backbone.encoder.attentions.0", "backbone.encoder.ffns.0")


@pytest.fixture(scope="module")
def counts():
    return count_modes("albert-base", MODES, overrides=TINY)


def grad_bytes() -> int:
    """Bytes of every trainable parameter, each once (tied and shared ones too)."""
    model = meta_model(row_config("albert-base", **TINY))
    return sum(p.numel() * p.element_size() for p in model.parameters() if p.requires_grad)


def test_ddp_all_reduces_every_gradient_once_and_a_ring_sends_twice_that_less_a_share(counts):
    ddp = counts["ddp"]
    assert ddp["all_reduce"]["bytes"] == grad_bytes() == ddp["param_bytes"]
    assert ddp["all_reduce"]["calls"] >= 1
    assert ddp["sent_per_rank_bytes"] == round(2 * (2 - 1) / 2 * ddp["all_reduce"]["bytes"])
    assert ddp["all_gather"] == ddp["reduce_scatter"] == {"calls": 0, "bytes": 0}
    assert ddp["shard_bytes_per_rank"] == ddp["param_bytes"]  # every rank holds it all


def test_fsdp_before_the_fix_gathers_a_shared_unit_once_per_use(counts):
    """Once in forward (kept gathered across its uses there), then again before the backward
    of every use but the last one run forward (each use's backward resharded it)."""
    per_use = counts["fsdp-per-use"]
    assert per_use["gathers_per_unit"] == {"root": 1, **{unit: LAYERS for unit in SHARED}}
    assert per_use["scatters_per_unit"] == {"root": 1, **{unit: 1 for unit in SHARED}}
    assert per_use["all_gather"]["calls"] == 1 + 2 * LAYERS


def test_fsdp_gathers_and_reduce_scatters_every_unit_once_per_step(counts):
    fsdp = counts["fsdp"]
    assert fsdp["gathers_per_unit"] == {"root": 1, **{unit: 1 for unit in SHARED}}
    assert fsdp["scatters_per_unit"] == fsdp["gathers_per_unit"]
    assert fsdp["all_reduce"] == {"calls": 0, "bytes": 0}
    # Each gather's output is every rank's padded shard: the bytes held per rank, twice.
    assert fsdp["all_gather"]["bytes"] == fsdp["reduce_scatter"]["bytes"] \
        == 2 * fsdp["shard_bytes_per_rank"] >= fsdp["param_bytes"]
    assert fsdp["all_gather"]["bytes"] < counts["fsdp-per-use"]["all_gather"]["bytes"]
    # LAMB's trust ratio needs each parameter's norm over both shards: a few small reductions.
    assert 0 < fsdp["optimizer_all_reduce"]["bytes"] < 1000
    assert fsdp["sent_per_rank_bytes"] == round(
        (fsdp["all_gather"]["bytes"] + fsdp["reduce_scatter"]["bytes"]) / 2
        + fsdp["optimizer_all_reduce"]["bytes"])
    assert len(fsdp["losses"]) == len(fsdp["seconds"]) == 2


def test_every_mode_trains_the_same_steps(counts):
    ddp = counts["ddp"]["losses"]
    for mode in ("fsdp-per-use", "fsdp"):
        assert counts[mode]["losses"] == pytest.approx(ddp, rel=1e-5), mode
    assert ddp[0] != ddp[1]  # the second step saw other batches after an update


def test_fsdp_losses_and_weights_match_ddp_over_three_steps():
    result = compare_losses("albert-base", steps=3, overrides=TINY)
    assert len(result["ddp"]) == len(result["fsdp"]) == 3
    assert result["max_rel_diff"] < 1e-5
    assert result["weights_max_abs_diff"] < 1e-5


def test_wrong_arguments_are_sentences_before_any_process_starts():
    with pytest.raises(ValueError, match="unknown mode 'zero': choose one of ddp, "):
        count_collectives("albert-base", "zero")
    with pytest.raises(ValueError, match="unknown row 'albert-huge'"):
        count_collectives("albert-huge", "ddp")
    with pytest.raises(ValueError, match="ranks must be at least 2"):
        count_collectives("albert-base", "fsdp", ranks=1)
    with pytest.raises(ValueError, match="steps must be at least 2"):
        count_collectives("albert-base", "fsdp", steps=1)
    with pytest.raises(ValueError, match="length 600 is longer than the 512 positions"):
        count_collectives("albert-base", "fsdp", length=600)
    with pytest.raises(ValueError, match=r"overrides \['hidden_sise'\] do not fit"):
        count_collectives("albert-base", "fsdp", overrides={"hidden_sise": 64})


def test_a_failed_process_stops_the_others_and_becomes_a_sentence(tmp_path):
    ctx = child_context(communication.__name__)  # as the study starts its ranks
    procs = [ctx.Process(target=time.sleep, args=(60,)), ctx.Process(target=os._exit, args=(3,))]
    for p in procs:
        p.start()
    started = time.monotonic()
    with pytest.raises(RuntimeError, match="^testing: process 1 ended with status 3"):
        communication._wait(procs, 60, tmp_path, "testing")
    assert time.monotonic() - started < 30 and not procs[0].is_alive()


def test_a_process_past_the_time_allowed_is_stopped(tmp_path):
    proc = child_context(communication.__name__).Process(target=time.sleep, args=(60,))
    proc.start()
    with pytest.raises(RuntimeError, match="did not finish within 1 s and were stopped"):
        communication._wait([proc], 1, tmp_path, "testing")
    assert not proc.is_alive()


def test_an_error_in_a_process_reaches_the_caller_as_its_message(monkeypatch):
    """Rank 0 cannot serve the rendezvous on a port already taken: the caller reads its
    error's first line, and rank 1, left waiting there, is stopped."""
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        monkeypatch.setattr(communication, "free_port", lambda: taken.getsockname()[1])
        with pytest.raises(RuntimeError, match="counting albert-base's collectives: process 0 "
                                               "failed: "):
            count_collectives("albert-base", "ddp", overrides=TINY, timeout_s=120)
