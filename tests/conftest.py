"""Shared fixtures: the seed, the session's table cache, and what the tests build once per
session (tokenizers, data directories, micro models). A built thing is read-only to tests:
a test that changes one copies it first. The plain helpers are in tests/helpers/."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

import litebert
from litebert.model import EncoderForPermutationLM
from litebert.tasks import table_cache
from litebert.tokenization import train_sentencepiece, train_tokenizer
from tests import hf_dirs
from tests.helpers.family_configs import xlnet_config
from tests.helpers.finetune import MICRO, sentence
from tests.helpers.plm import build_plm_data
from tests.helpers.pretrain import tiny_data
from tests.helpers.scheduling import SharedBuildScheduling

if os.environ.get("PYTEST_XDIST_WORKER"):
    # `make test` runs two workers on two cores: one torch thread each, not two apiece
    # contending for the same cores; the processes a test starts inherit it.
    torch.set_num_threads(1)
    os.environ.setdefault("OMP_NUM_THREADS", "1")


def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, with the folders whose files share long builds sent to one worker
    (tests/helpers/scheduling.py)."""
    return SharedBuildScheduling(config, log) if config.getvalue("dist") == "loadfile" else None


@pytest.fixture(autouse=True)
def _seed():
    torch.manual_seed(1234)


@pytest.fixture(autouse=True, scope="session")
def _table_cache_in_tmp(tmp_path_factory):
    """Fine-tuning's tokenized tables (tasks/table_cache.py) go to one temporary folder for
    the session, not to ~/.cache."""
    tables = tmp_path_factory.mktemp("tables")
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(table_cache, "default_table_cache", lambda: tables)
        yield


@pytest.fixture(scope="session")
def hf_tokenizer_dir(tmp_path_factory):
    """hf_tokenizer_dir(family, layout="tokenizer.json"): a tokenizer directory as
    transformers writes it (tests/hf_dirs.py), written once per session; read it only."""
    made: dict[tuple[str, str], object] = {}

    def make(family: str, layout: str = "tokenizer.json"):
        if (family, layout) not in made:
            folder = tmp_path_factory.mktemp(f"hf-{family}-tokenizer")
            made[family, layout] = hf_dirs.write_tokenizer_dir(family, layout, folder)
        return made[family, layout]

    return make


@pytest.fixture(scope="session")
def hf_model_dir(tmp_path_factory):
    """hf_model_dir(family, head_class=None, layout="tokenizer.json"): a transformers model
    directory with random weights and its tokenizer (tests/hf_dirs.py), written once per
    session; read it only (copy it to change it)."""
    made: dict[tuple[str, str | None, str], object] = {}

    def make(family: str, head_class: str | None = None, layout: str = "tokenizer.json"):
        key = (family, head_class, layout)
        if key not in made:
            folder = tmp_path_factory.mktemp(f"hf-{family}-model")
            made[key] = hf_dirs.write_model_dir(family, folder, head_class, layout)
        return made[key]

    return make


@pytest.fixture(scope="session")
def data_dir(tmp_path_factory):
    """Pre-training data with SOP pairs (tests/helpers/pretrain.py's tiny_data)."""
    return tiny_data(tmp_path_factory.mktemp("pretrain"))


@pytest.fixture(scope="session")
def packed_data(tmp_path_factory):
    """Pre-training data of packed full sentences, no pairs (MLM alone)."""
    return tiny_data(tmp_path_factory.mktemp("packed"), objective="none",
                     packing="full-sentences")


@pytest.fixture(scope="session")
def plm_data(tmp_path_factory):
    """XLNet's pre-training streams (tests/helpers/plm.py's build_plm_data)."""
    return build_plm_data(tmp_path_factory.mktemp("plm-pretrain"))


@pytest.fixture(scope="session")
def base_model(tmp_path_factory):
    """A micro ALBERT with a SentencePiece tokenizer, saved like `litebert export`."""
    root = tmp_path_factory.mktemp("base")
    rng = np.random.default_rng(0)
    text = root / "text.txt"
    text.write_text("\n".join(sentence(rng, i % 2 == 0) + " what is who where? which one"
                              for i in range(400)))
    tok = litebert.Tokenizer.from_file(train_sentencepiece([text], root / "tok",
                                                           vocab_size=120))
    torch.manual_seed(0)
    model = litebert.EncoderForPreTraining(litebert.ModelConfig(vocab_size=len(tok), **MICRO))
    model.save_pretrained(root / "model")
    tok.save_pretrained(root / "model")
    return root / "model"


@pytest.fixture(scope="session")
def xlnet_tokenizer(tmp_path_factory):
    """An XLNet SentencePiece tokenizer of the fine-tuning sentences (helpers/finetune.py)."""
    root = tmp_path_factory.mktemp("xlnet-tok")
    rng = np.random.default_rng(0)
    lines = [sentence(rng, i % 2 == 0) + " what was the film ? who was the actor ? it played "
             "in a town and the story was long" for i in range(300)]
    (root / "text.txt").write_text("\n".join(lines))
    return litebert.Tokenizer.from_pretrained(
        train_tokenizer("xlnet", [root / "text.txt"], root / "tok", vocab_size=120).parent)


@pytest.fixture(scope="session")
def lively_xlnet(xlnet_tokenizer, tmp_path_factory):
    """A micro XLNet, as lively: padded on the left, its summary the last token, and a
    parameter fine-tuning never uses (mask_emb, pre-training's query stream input)."""
    root = tmp_path_factory.mktemp("lively-xlnet")
    torch.manual_seed(0)
    config = xlnet_config(vocab_size=len(xlnet_tokenizer), initializer_range=0.2, mem_len=16)
    EncoderForPermutationLM(config).save_pretrained(root)
    xlnet_tokenizer.save_pretrained(root)
    return root
