"""Probe data writers on a small generated corpus, and one probe fine-tuned end to end."""

from __future__ import annotations

import json

import pytest
import torch

import litebert
from litebert.studies.probes import ProbeError, probe_data, run_probes
from litebert.tasks.race import read_race
from litebert.tasks.tables import read_table
from litebert.tokenization import train_sentencepiece

TOPICS = ["business", "sport", "tech"]
WORDS = "market goal chip price team phone bank match screen trade score data".split()


def fake_bbc(corpus_dir, per_topic: int = 10):
    """bbc-news.jsonl as fetch writes it: headline paragraph, then the article's paragraphs."""
    corpus_dir.mkdir(parents=True, exist_ok=True)
    lines = []
    for t, topic in enumerate(TOPICS):
        for i in range(per_topic):
            words = [WORDS[(t * 4 + i + k) % len(WORDS)] for k in range(6)]
            text = (f"{topic} headline {i} {words[0]}\n\n{' '.join(words)} today.\n\n"
                    f"the {words[1]} rose {i} times in {topic}.")
            lines.append(json.dumps({"id": f"{topic}/{i:03d}", "text": text, "label": topic}))
    (corpus_dir / "bbc-news.jsonl").write_text("\n".join(lines) + "\n")
    return corpus_dir


def test_topics_are_a_jsonl_table_with_a_fixed_split_cached(tmp_path):
    corpus = fake_bbc(tmp_path / "corpus")
    data, info = probe_data("bbc-topics", corpus, quick=False)
    assert data == corpus / "probes" / "bbc-topics"
    train, _ = read_table(data / "train.jsonl", text_a="text")
    dev, _ = read_table(data / "dev.jsonl", text_a="text")
    assert (len(train), len(dev)) == (24, 6) == (info["train"], info["dev"])
    assert {ex.label for ex in train + dev} == set(TOPICS)
    assert not {ex.guid for ex in train} & {ex.guid for ex in dev}
    assert "bbc-news" in info["data"] and "24 train / 6 dev" in info["data"]
    (corpus / "bbc-news.jsonl").unlink()  # cached: the corpus is not read again
    assert probe_data("bbc-topics", corpus, quick=False)[1] == info


def test_headlines_are_race_files_with_same_topic_distractors(tmp_path):
    corpus = fake_bbc(tmp_path / "corpus", per_topic=25)  # dev: 15 articles, 5 a topic
    data, info = probe_data("bbc-headlines", corpus, quick=True)
    examples = {}
    for split in ("train", "dev"):
        read, report = read_race(data, split)
        assert report.skipped == 0 and len(read) == info[split]
        examples[split] = read
    # Articles whose topic has fewer than 4 distinct headlines in their split are left out.
    assert info["train"] == 60 and 5 <= info["dev"] <= 15 and 0.25 <= info["baseline"] <= 1
    for ex in examples["train"] + examples["dev"]:
        topic = ex.options[ex.label].split()[0]
        assert all(o.split()[0] == topic for o in ex.options)  # one topic: no topic shortcut
        assert len(set(ex.options)) == 4
        assert "headline" not in ex.article  # the passage is the body alone
        assert ex.question == "Which headline fits?"
    dev_options = {o for ex in examples["dev"] for o in ex.options}
    assert not dev_options & {o for ex in examples["train"] for o in ex.options}


def test_unknown_probe_is_named(tmp_path):
    with pytest.raises(ProbeError, match="unknown probe 'x'"):
        run_probes([{"name": "x"}], tmp_path, tmp_path, tmp_path, quick=True)


@pytest.fixture(scope="module")
def micro_model(tmp_path_factory):
    root = tmp_path_factory.mktemp("micro")
    corpus = fake_bbc(root / "corpus", per_topic=25)
    text = root / "text.txt"
    text.write_text("\n".join(json.loads(x)["text"] for x in
                              (corpus / "bbc-news.jsonl").read_text().splitlines()))
    tok = litebert.Tokenizer.from_file(train_sentencepiece([text], root / "tok", vocab_size=60))
    torch.manual_seed(0)
    config = litebert.ModelConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1,
                                   num_attention_heads=2, intermediate_size=32,
                                   embedding_size=8, max_position_embeddings=64)
    litebert.EncoderForPreTraining(config).save_pretrained(root / "model")
    tok.save_pretrained(root / "model")
    return root / "model", corpus


def test_headline_probe_fine_tunes_with_two_seeds(micro_model, tmp_path):
    model, corpus = micro_model
    spec = {"name": "bbc-headlines", "seeds": 2, "steps": 2, "max_seq_length": 48}
    result = run_probes([spec], model, tmp_path / "work", corpus, quick=True)["bbc-headlines"]
    assert result["seeds"] == [42, 43] and len(result["values"]) == 2
    assert result["metric"] == "all" and result["min"] <= result["median"] <= result["max"]
    assert "RACE layout" in result["data"] and 0 < result["baseline"] <= 1
    assert (tmp_path / "work" / "bbc-headlines" / "seed-43" / "results.json").is_file()


def test_probe_inputs_are_cut_to_the_models_positions(tmp_path):
    """A --quick study pre-trains with 64 positions; a probe asking for 128 must fit it."""
    import litebert
    from litebert.studies.probes import _fitting_length
    from tests.helpers.models import small_config

    litebert.AlbertModel(small_config(max_position_embeddings=64)).save_pretrained(tmp_path)
    assert _fitting_length(tmp_path, 128) == 64
    assert _fitting_length(tmp_path, 32) == 32
