"""Fine-tuning and evaluation take a RoBERTa directory (byte-level BPE, `<s> A </s></s> B </s>`,
one token type) for GLUE, SQuAD and RACE like any other; transformers reads what they write."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers

import litebert
import litebert.tasks.finetune
from litebert.config import ConfigError
from litebert.tasks.base import finetune_config
from litebert.tasks.finetune import evaluate_model, finetune
from litebert.tasks.squad import make_features, read_squad
from litebert.tokenization.train import train_bpe
from litebert.train.optimizers import build_optimizer
from tests.helpers.family_configs import hf_roberta_config
from tests.helpers.finetune import BAD, GOOD, fast, sentence, squad_json, sst2_dir, write_tsv


@pytest.fixture(scope="module")
def roberta_model(tmp_path_factory):
    """A micro RobertaForMaskedLM written by transformers, with a byte-level BPE trained on
    the tasks' kind of text."""
    root = tmp_path_factory.mktemp("roberta")
    rng = np.random.default_rng(0)
    lines = [sentence(rng, i % 2 == 0) + " what is who where? which one" for i in range(400)]
    (root / "text.txt").write_text("\n".join(lines))
    tok = litebert.Tokenizer.from_pretrained(train_bpe([root / "text.txt"], root / "tok",
                                                       vocab_size=400))
    torch.manual_seed(0)
    config = hf_roberta_config(vocab_size=len(tok), num_hidden_layers=2,
                               max_position_embeddings=130)
    transformers.RobertaForMaskedLM(config).save_pretrained(root / "model")
    tok.save_pretrained(root / "model")
    return root / "model"


def test_squad_features_follow_roberta_template(roberta_model, tmp_path):
    (tmp_path / "dev.json").write_text(json.dumps(squad_json(False, 2, 1)))
    tok = litebert.Tokenizer.from_pretrained(roberta_model)
    examples = read_squad(tmp_path / "dev.json")[0]
    feature = make_features(examples, tok, max_seq_length=64, max_query_length=16)[0]
    question = tok.encode(examples[0].question, add_special_tokens=False)
    head = [tok.cls_token_id, *question, tok.sep_token_id, tok.sep_token_id]
    assert feature.input_ids[:len(head)] == head  # <s> Q </s></s> C </s>
    assert feature.input_ids[-1] == tok.sep_token_id
    assert set(feature.token_type_ids) == {0}  # one token type
    # The answer's tokens spell the answer.
    answer = examples[0].answers[0]["text"]
    span = feature.input_ids[feature.start_position:feature.end_position + 1]
    assert tok.decode(span).strip() == answer


def test_glue_pairs_finetune_and_evaluate(roberta_model, tmp_path):
    rng = np.random.default_rng(3)
    rows = [[str(int(a == b)), f"the film was {a}", f"the film was {b}"]
            for a, b in ((rng.choice(GOOD), rng.choice(GOOD + BAD)) for _ in range(48))]
    header = ["Quality", "#1 ID", "#2 ID", "#1 String", "#2 String"]
    for split, part in (("train", rows[:40]), ("dev", rows[40:])):
        write_tsv(tmp_path / "MRPC" / f"{split}.tsv", header,
                  [[q, str(i), str(i), a, b] for i, (q, a, b) in enumerate(part)])
    out = tmp_path / "out"
    result = finetune(finetune_config(task="mrpc", data=str(tmp_path / "MRPC"),
                                     model=str(roberta_model), out=str(out),
                                     **fast(max_steps=10, eval_every=10)))
    config = json.loads((out / "model" / "config.json").read_text())
    assert config["model_type"] == "roberta"
    assert config["architectures"] == ["RobertaForSequenceClassification"]
    theirs = transformers.RobertaForSequenceClassification.from_pretrained(out / "model").eval()
    ours = litebert.AutoModelForSequenceClassification.from_pretrained(out / "model").eval()
    hf_tok = transformers.AutoTokenizer.from_pretrained(out / "model")
    enc = hf_tok(["the film was good"], ["the film was bad"], return_tensors="pt")
    assert enc["input_ids"][0].tolist() == litebert.Tokenizer.from_pretrained(out / "model")(
        "the film was good", "the film was bad")["input_ids"]
    with torch.no_grad():
        torch.testing.assert_close(ours(enc["input_ids"]).logits, theirs(**enc).logits,
                                   atol=1e-5, rtol=0)
    again = evaluate_model(finetune_config(task="mrpc", data=str(tmp_path / "MRPC"),
                                          model=str(out / "model"), out=str(tmp_path / "ev")))
    assert again["dev"]["accuracy"] == result["dev"]["accuracy"]


def test_sst2_squad_and_race_run(roberta_model, tmp_path, monkeypatch):
    data = sst2_dir(tmp_path / "SST-2", n_train=32, n_dev=8)
    betas = []  # what the optimiser is built with

    def build(*args, **kw):
        betas.append(kw["betas"])
        return build_optimizer(*args, **kw)

    monkeypatch.setattr(litebert.tasks.finetune, "build_optimizer", build)
    given = fast(max_steps=4, eval_every=4)
    del given["warmup_steps"]  # the family's share of the steps, then
    finetune(finetune_config(task="sst2", data=str(data), model=str(roberta_model),
                            out=str(tmp_path / "sst2"), **given))
    assert betas == [(0.9, 0.98)]
    # results.json names the family and the paper's table, and the values taken from it.
    saved = json.loads((tmp_path / "sst2" / "results.json").read_text())
    assert saved["defaults"] == {
        "family": "roberta", "source": "RoBERTa (Liu et al. 2019), Table 10, GLUE",
        "values": {"warmup_share": 0.06, "dropout": 0.1, "weight_decay": 0.1,
                   "layer_decay": 1.0, "adam_beta2": 0.98, "adam_epsilon": 1e-6,
                   "layer_decay_rule": "head-to-embeddings"}}
    assert saved["optimizer"] == {"lr": 2e-3, "weight_decay": 0.1, "layer_decay": 1.0,
                                  "adam_beta2": 0.98, "adam_epsilon": 1e-6,
                   "layer_decay_rule": "head-to-embeddings"}  # fast()'s lr wins
    (tmp_path / "train-v2.0.json").write_text(json.dumps(squad_json(True, 16, 5)))
    (tmp_path / "dev-v2.0.json").write_text(json.dumps(squad_json(True, 4, 6)))
    result = finetune(finetune_config(task="squad2", data=str(tmp_path), model=str(roberta_model),
                                     out=str(tmp_path / "sq"),
                                     **fast(max_steps=4, eval_every=4, max_seq_length=64),
                                     doc_stride=16, max_query_length=16))
    assert {"exact", "f1", "best_f1"} <= set(result["dev"])
    transformers.RobertaForQuestionAnswering.from_pretrained(tmp_path / "sq" / "model")
    race = tmp_path / "RACE"
    for split in ("train", "dev"):
        folder = race / split / "middle"
        folder.mkdir(parents=True)
        (folder / "1.txt").write_text(json.dumps({
            "id": "1.txt", "article": "the film was good .", "questions": ["the film was _ ."],
            "options": [["good", "bad", "dull", "long"]], "answers": ["A"]}))
    result = finetune(finetune_config(task="race", data=str(race), model=str(roberta_model),
                                     out=str(tmp_path / "race"),
                                     **fast(max_steps=2, eval_every=2, batch_size=1)))
    assert "all" in result["dev"]
    transformers.RobertaForMultipleChoice.from_pretrained(tmp_path / "race" / "model")


def test_a_roberta_model_with_an_albert_tokenizer_stops_naming_both(roberta_model, tmp_path):
    """ALBERT's SentencePiece pairs give B token type 1: a RoBERTa model has one type."""
    mixed = tmp_path / "mixed"
    mixed.mkdir()
    for name in ("config.json", "model.safetensors"):
        (mixed / name).write_bytes((roberta_model / name).read_bytes())
    words = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "film", "was", "good"]
    (mixed / "vocab.txt").write_text("\n".join(words) + "\n")
    (mixed / "tokenizer_config.json").write_text('{"tokenizer_class": "BertTokenizer"}')
    data = sst2_dir(tmp_path / "SST-2", n_train=8, n_dev=4)
    with pytest.raises(ConfigError, match=r"mixed/config.json and .*mixed/vocab.txt disagree"):
        finetune(finetune_config(task="sst2", data=str(data), model=str(mixed),
                                out=str(tmp_path / "out"), **fast(max_steps=2, eval_every=2)))
