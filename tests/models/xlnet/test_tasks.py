"""Fine-tuning and evaluation take XLNet directories (ours and transformers') with an XLNet
tokenizer: `A <sep> B <sep> <cls>`, left padding with pad type 3, the summary of the last
token, SQuAD as C <sep> Q <sep> <cls> through the beam head, RACE, Table 8's defaults with
XLNet's layer-decay rule; transformers reads what they write."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch
import transformers

import litebert
from litebert.cli import main
from litebert.compat import model_tokenizer_mismatch
from litebert.model import EncoderForBeamQuestionAnswering, EncoderForPermutationLM
from litebert.model.hub import read_config
from litebert.models.albert.model import AlbertModel
from litebert.models.xlnet.model import XLNetModel
from litebert.tasks.base import finetune_config
from litebert.tasks.finetune import adapter_for, finetune, finetune_groups
from litebert.tasks.squad import make_features, read_squad
from litebert.tasks.squad_beam import beam_p_mask
from litebert.tokenization import train_tokenizer
from tests.helpers.family_configs import hf_xlnet_config, xlnet_config
from tests.helpers.finetune import fast, sentence, squad_json, sst2_dir

MICRO = dict(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0, mem_len=16)


@pytest.fixture(scope="module")
def xlnet_model(xlnet_tokenizer, tmp_path_factory):
    """A micro pre-trained XLNet (our permutation LM, saved as XLNetLMHeadModel, mem_len kept
    in its config as pre-training leaves it) with its tokenizer."""
    root = tmp_path_factory.mktemp("xlnet-model")
    torch.manual_seed(0)
    config = xlnet_config(vocab_size=len(xlnet_tokenizer), **MICRO)
    EncoderForPermutationLM(config).save_pretrained(root)
    xlnet_tokenizer.save_pretrained(root)
    assert json.loads((root / "config.json").read_text())["architectures"] == ["XLNetLMHeadModel"]
    return root


def test_batches_are_left_padded_with_cls_last(xlnet_model, tmp_path):
    task = adapter_for(finetune_config(task="sst2", data=str(sst2_dir(tmp_path / "S", 8, 4)),
                                      model=str(xlnet_model), out=str(tmp_path / "o")))
    tok = task.tokenizer
    batch = task.collate(task.train_rows[:6])
    assert (batch["input_ids"][:, -1] == tok.cls_token_id).all()
    assert (batch["token_type_ids"][:, -1] == 2).all()
    pads = batch["attention_mask"] == 0
    assert pads.any() and (batch["input_ids"][pads] == tok.pad_token_id).all()
    assert (batch["token_type_ids"][pads] == 3).all()
    assert not pads[:, -1].any()  # the padding is on the left
    # types 0-3 are only compared: no token-type embedding to outgrow
    assert model_tokenizer_mismatch(read_config(xlnet_model), tok, reader=XLNetModel,
                                    summary=True) is None


def test_a_model_that_cannot_read_the_tokenizers_types_or_summary_is_refused(
        xlnet_model, xlnet_tokenizer, tmp_path, capsys):
    """ALBERT's backbone has one embedding row per token type: XLNet's <cls> type 2 and pad
    type 3 have none in its 2. XLNet's backbone reads the summary from the last token: a
    tokenizer with [CLS] first (padded on the right) would feed it padding. Both stop
    before any step, naming the files."""
    albert = xlnet_config(vocab_size=len(xlnet_tokenizer)).replace(
        backbone="albert", model_type="albert", type_vocab_size=2)
    why = model_tokenizer_mismatch(albert, xlnet_tokenizer, reader=AlbertModel)
    assert "makes token type 3" in why and "embeds 2 token types" in why
    wide = albert.replace(type_vocab_size=4)  # rows enough, but [CLS] is not first
    assert model_tokenizer_mismatch(wide, xlnet_tokenizer, reader=AlbertModel) is None
    why = model_tokenizer_mismatch(wide, xlnet_tokenizer, reader=AlbertModel, summary=True)
    assert "from the first token ([CLS])" in why
    rng = np.random.default_rng(1)
    (tmp_path / "t.txt").write_text("\n".join(sentence(rng, i % 2 == 0) for i in range(200)))
    cls_first = litebert.Tokenizer.from_pretrained(train_tokenizer(
        "sentencepiece", [tmp_path / "t.txt"], tmp_path / "tok", vocab_size=60).parent)
    model = tmp_path / "model"
    config = read_config(xlnet_model).replace(vocab_size=len(cls_first),
                                              pad_token_id=cls_first.pad_token_id)
    EncoderForPermutationLM(config).save_pretrained(model)
    cls_first.save_pretrained(model)
    data = sst2_dir(tmp_path / "S", 8, 4)
    assert main(["finetune", "--task", "sst2", "--data", str(data), "--model", str(model),
                 "--out", str(tmp_path / "o"), "--max-steps", "1"]) != 0
    err = capsys.readouterr().err
    assert f"{model / 'config.json'} and" in err and "from the last token" in err


def test_sst2_learns_with_table_8_defaults_and_transformers_reads_it(xlnet_model, tmp_path):
    data = sst2_dir(tmp_path / "SST-2", n_train=160, n_dev=32)
    given = {k: v for k, v in fast(max_steps=120, eval_every=60, lr=3e-3).items()}
    result = finetune(finetune_config(task="sst2", data=str(data), model=str(xlnet_model),
                                     out=str(tmp_path / "out"), **given))
    assert result["dev"]["accuracy"] > result["dev"]["majority_baseline"] + 0.2
    saved = json.loads((tmp_path / "out" / "results.json").read_text())
    assert saved["optimizer"] == {"lr": 3e-3, "weight_decay": 0.0, "layer_decay": 1.0,
                                  "layer_decay_rule": "layers-only", "adam_beta2": 0.999,
                                  "adam_epsilon": 1e-6}
    assert "Table 8" in saved["defaults"]["source"]
    model_dir = tmp_path / "out" / "model"
    config = json.loads((model_dir / "config.json").read_text())
    assert config["architectures"] == ["XLNetForSequenceClassification"]
    theirs = transformers.XLNetForSequenceClassification.from_pretrained(model_dir).eval()
    ours = litebert.AutoModelForSequenceClassification.from_pretrained(model_dir).eval()
    tok = litebert.Tokenizer.from_pretrained(model_dir)
    batch = tok.pad([tok("the film was great"), tok("the film was awful", "it was long")])
    with torch.no_grad():
        torch.testing.assert_close(ours(**batch).logits,
                                   theirs(**batch, use_mems=False).logits, atol=1e-5, rtol=0)


def test_squad_windows_are_context_question_cls(xlnet_model, tmp_path):
    (tmp_path / "dev.json").write_text(json.dumps(squad_json(True, 3, 1)))
    tok = litebert.Tokenizer.from_pretrained(xlnet_model)
    examples = read_squad(tmp_path / "dev.json")[0]
    features = make_features(examples, tok, max_seq_length=24, doc_stride=4,
                             max_query_length=8)
    for feature in features:
        example = examples[feature.example_index]
        question = tok.encode(example.question, add_special_tokens=False)[:8]
        n = len(feature.input_ids)
        assert feature.input_ids[-len(question) - 2:] == [*question, tok.sep_token_id,
                                                          tok.cls_token_id]
        assert feature.cls_index == n - 1
        assert feature.token_type_ids[-1] == 2 and set(feature.token_type_ids[:-1]) == {0, 1}
        context = [i for i, o in enumerate(feature.offsets) if o is not None]
        assert context == list(range(len(context)))  # the window comes first
        assert beam_p_mask(feature, feature.cls_index) == [
            0 if i in context or i == n - 1 else 1 for i in range(n)]
        if feature.is_impossible:
            assert feature.start_position == feature.end_position == n - 1
        else:
            span = feature.input_ids[feature.start_position:feature.end_position + 1]
            assert tok.decode(span).strip() == example.answers[0]["text"]
    assert any(f.is_impossible for f in features) and not all(f.is_impossible for f in features)


def test_squad2_trains_the_beam_head_and_writes_the_official_files(xlnet_model, tmp_path):
    (tmp_path / "train-v2.0.json").write_text(json.dumps(squad_json(True, 16, 5)))
    (tmp_path / "dev-v2.0.json").write_text(json.dumps(squad_json(True, 4, 6)))
    cfg = finetune_config(task="squad2", data=str(tmp_path), model=str(xlnet_model),
                         out=str(tmp_path / "sq"), doc_stride=16, max_query_length=16,
                         **fast(max_steps=6, eval_every=3, max_seq_length=48, batch_size=8))
    assert (cfg.lr, cfg.layer_decay, cfg.layer_decay_rule) == (2e-3, 0.75, "layers-only")
    task = adapter_for(cfg)
    assert task.beam and isinstance(task.build_model(), EncoderForBeamQuestionAnswering)
    rows = task.train_rows[:8]
    batch = task.collate(rows)
    T = batch["input_ids"].shape[1]
    for b, row in enumerate(rows):  # positions moved with the padding on the left
        shift = T - len(row["input_ids"])
        assert batch["input_ids"][b, batch["start_positions"][b]] == \
            row["input_ids"][row["start_positions"]]
        assert batch["cls_index"][b] == T - 1 == row["cls_index"] + shift
        assert (batch["p_mask"][b, :shift] == 1).all()
    assert set(batch["is_impossible"].tolist()) == {0, 1}
    result = finetune(cfg)
    assert {"exact", "f1", "HasAns_f1", "NoAns_f1", "best_f1",
            "null_score_diff_threshold"} <= set(result["dev"])
    predictions = json.loads((tmp_path / "sq" / "predictions.json").read_text())
    null_odds = json.loads((tmp_path / "sq" / "null_odds.json").read_text())
    assert set(predictions) == set(null_odds) == {f"{p}{i}" for p in "qn" for i in range(4)}
    squad = json.loads((tmp_path / "sq" / "model" / "squad.json").read_text())
    assert squad["head"] == "beam"
    theirs = transformers.XLNetForQuestionAnswering.from_pretrained(tmp_path / "sq" / "model")
    assert theirs.config.start_n_top == 5
    assert _evaluated(tmp_path, "squad2", tmp_path / "sq")["best_f1"] == \
        pytest.approx(result["dev"]["best_f1"])


def _evaluated(data, task: str, run, *extra: str) -> dict:
    """`litebert evaluate` on a fine-tuned SQuAD model, its --qa-head left at auto."""
    out = run / "evaluated"
    assert main(["evaluate", "--task", task, "--data", str(data), "--model", str(run / "model"),
                 "--out", str(out), "--doc-stride", "16", "--max-query-length", "16",
                 "--max-seq-length", "48", *extra]) == 0
    return json.loads((out / "results.json").read_text())["dev"]


def test_evaluate_reads_back_the_squad_head_the_directory_holds(xlnet_model, tmp_path):
    """An XLNet fine-tuned with --qa-head span holds the span head: `litebert evaluate`, left
    at auto, scores it with that head (not the beam head auto picks for a pre-trained
    XLNet) and reproduces the fine-tuning's dev figures."""
    (tmp_path / "train-v1.1.json").write_text(json.dumps(squad_json(False, 16, 5)))
    (tmp_path / "dev-v1.1.json").write_text(json.dumps(squad_json(False, 4, 6)))
    cfg = finetune_config(task="squad1", data=str(tmp_path), model=str(xlnet_model),
                         out=str(tmp_path / "sq"), doc_stride=16, max_query_length=16,
                         qa_head="span", **fast(max_steps=4, eval_every=4, max_seq_length=48,
                                                batch_size=8))
    result = finetune(cfg)
    config = json.loads((tmp_path / "sq" / "model" / "config.json").read_text())
    assert config["architectures"] == ["XLNetForQuestionAnsweringSimple"]
    scored = _evaluated(tmp_path, "squad1", tmp_path / "sq")
    assert scored["f1"] == pytest.approx(result["dev"]["f1"])
    assert scored["exact"] == pytest.approx(result["dev"]["exact"])


def test_race_scores_options_from_the_last_token(xlnet_model, tmp_path):
    race = tmp_path / "RACE"
    for split in ("train", "dev"):
        folder = race / split / "middle"
        folder.mkdir(parents=True)
        (folder / "1.txt").write_text(json.dumps({
            "id": "1.txt", "article": "the film was great .", "questions": ["the film was _ ."],
            "options": [["great", "awful", "long", "in a town"]], "answers": ["A"]}))
    cfg = finetune_config(task="race", data=str(race), model=str(xlnet_model),
                         out=str(tmp_path / "race"), **fast(max_steps=2, eval_every=2,
                                                            batch_size=1, max_seq_length=96))
    task = adapter_for(cfg)
    batch = task.collate(task.train_rows)
    assert batch["input_ids"].shape[:2] == (1, 4)
    assert (batch["input_ids"][..., -1] == task.tokenizer.cls_token_id).all()
    sep = task.tokenizer.sep_token_id
    # the article <sep> question with the option <sep> <cls>, as XLNet's run_race.py
    first = batch["input_ids"][0, 0][batch["attention_mask"][0, 0] == 1].tolist()
    article = task.tokenizer.encode("the film was great .", add_special_tokens=False)
    assert first[:len(article) + 1] == [*article, sep] and first[-2] == sep
    result = finetune(cfg)
    assert "all" in result["dev"]
    transformers.XLNetForMultipleChoice.from_pretrained(tmp_path / "race" / "model")


def test_squad_layer_decay_follows_xlnets_rule(xlnet_model, tmp_path):
    """Table 8's 0.75 for SQuAD, the official rule: layer l of L at 0.75 ** (L - 1 - l), the
    word embeddings, mask_emb and the head at the lr."""
    cfg = finetune_config(task="squad2", data="d", model=str(xlnet_model), out="o", lr=1.0)
    model = EncoderForBeamQuestionAnswering.from_pretrained(xlnet_model)
    rate = {}
    for group in finetune_groups(model, cfg):
        for p in group["params"]:
            rate[id(p)] = group["lr"]
    named = dict(model.named_parameters())
    assert rate[id(named["backbone.word_embedding.weight"])] == 1.0
    assert rate[id(named["backbone.mask_emb"])] == 1.0
    assert rate[id(named["start_logits.dense.weight"])] == 1.0
    assert rate[id(named["backbone.encoder.attentions.1.q"])] == 1.0  # the top layer
    assert rate[id(named["backbone.encoder.ffns.0.layer_1.weight"])] == 0.75


def test_cli_finetunes_a_transformers_xlnet_directory(xlnet_tokenizer, tmp_path):
    """XLNetForSequenceClassification saved by transformers + our XLNet tokenizer, through
    `litebert finetune`."""
    model_dir = tmp_path / "hf"
    torch.manual_seed(1)
    transformers.XLNetForSequenceClassification(hf_xlnet_config(
        2, vocab_size=len(xlnet_tokenizer), mem_len=16)).save_pretrained(model_dir)
    xlnet_tokenizer.save_pretrained(model_dir)
    data = sst2_dir(tmp_path / "SST-2", n_train=32, n_dev=8)
    out = tmp_path / "out"
    assert main(["finetune", "--task", "sst2", "--data", str(data), "--model", str(model_dir),
                 "--out", str(out), "--max-steps", "4", "--eval-every", "2",
                 "--batch-size", "8", "--max-seq-length", "32"]) == 0
    saved = json.loads((out / "results.json").read_text())
    assert saved["defaults"]["family"] == "xlnet" and saved["optimizer"]["lr"] == 2e-5
    assert json.loads((out / "model" / "config.json").read_text())["model_type"] == "xlnet"
    transformers.XLNetForSequenceClassification.from_pretrained(out / "model")
