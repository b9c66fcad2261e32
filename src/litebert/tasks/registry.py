"""The fine-tuning tasks, one entry each: what `--task NAME` runs.

A task is its adapter module (tasks/sequence.py, tasks/qa.py, ...: reader, head, batches,
loss, metrics, prediction files; the protocol is in tasks/base.py) and one `TASKS` entry here
naming it, with the task's recipe and the dataclass of its own options. The entries import
no torch: `finetune --help` lists every task's options without loading a model, and the
adapter's module is imported only when the task runs.

An options class is declared once and shared by the tasks that read the same fields (SQuAD
1.1 and 2.0; the generic tables). `finetune --help` shows each class's fields under the names
of the tasks that take them; `cfg.task_options` holds the chosen task's instance.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from litebert.cpus import usable_cpus
from litebert.options import option


@dataclass(frozen=True, kw_only=True)
class TaskRecipe:
    """A task's fine-tuning schedule (ALBERT's Table 14 where the paper has the task; its
    classifier dropout is 0.1 for all)."""

    lr: float
    batch_size: int
    dropout: float  # ALBERT's hidden and attention dropout
    max_steps: int
    warmup_steps: int
    max_seq_length: int | None = 512  # None: the task reads it off the model directory


# ---- the tasks' own options -----------------------------------------------------------------

@dataclass
class TableCacheOptions:
    """tokenizing a table once into a cache (tasks/table_cache.py)"""

    workers: int = option(None, "processes that tokenize a table the cache does not hold yet",
                          shown="the CPUs this process may use")
    cache_dir: str | None = option(
        None, "where tokenized tables are kept, found again by every later seed and run with "
              "the same table and tokenizer (safe to delete)",
        shown="$LITEBERT_DATA/tables, else ~/.cache/litebert/tables")

    def __post_init__(self) -> None:
        if self.workers is None:
            self.workers = usable_cpus()
        if self.workers < 1:
            raise ValueError(f"workers={self.workers}: must be at least 1")


@dataclass
class TableOptions(TableCacheOptions):
    """the columns of your own table, and a dev split carved from train when it has none"""

    text_a: str = option("sentence", "the column (field) of the first text")
    text_b: str | None = option(None, "the column of the second text, if any")
    label_column: str = option("label", "the column of the label")
    dev_fraction: float = option(0.1, "without a dev file: the share of train held out as dev")


QA_HEADS = ("auto", "span", "beam")


@dataclass
class SquadOptions:
    """windows over long contexts and answer decoding"""

    doc_stride: int = option(128, "tokens between the starts of a context's windows")
    max_query_length: int = option(64, "question tokens kept")
    n_best_size: int = option(20, "start and end candidates per window")
    max_answer_length: int = option(30, "longest answer, in tokens")
    qa_head: str = option(
        "auto", "'span' (a start and an end logit per token, BERT's), 'beam' (XLNet's: a "
                "start, an end conditioned on it and an answer classifier, decoded by beam "
                "search), or 'auto': beam for a backbone whose summary token is the last one "
                "(XLNet's <cls>), else span", choices=QA_HEADS)

    def __post_init__(self) -> None:
        if self.qa_head not in QA_HEADS:
            raise ValueError(f"qa_head={self.qa_head!r}: choose {', '.join(QA_HEADS)}")


@dataclass
class ChoiceOptions:
    """the columns of a multiple-choice table (SWAG's names by default)"""

    context_column: str = option("sent1", "the column of the context, each choice's first "
                                          "text (cut first when a pair is too long)")
    start_column: str | None = option(
        "sent2", "the column of the start that each ending continues: a choice's second text "
                 "is start + ' ' + ending; '' for none (the ending alone)")
    ending_prefix: str = option("ending", "the endings are the columns PREFIX0, PREFIX1, ...: "
                                          "that many choices in every row")
    endings_column: str = option(
        "endings", "without PREFIX0: the column holding each row's list of endings (JSON lines, "
                   "Parquet, saved datasets); rows may differ in their number")
    label_column: str = option("label", "the column of the right ending's index, 0 to N-1")
    num_choices: int | None = option(
        None, "the number of endings each row's list must hold (rows with another are skipped)",
        shown="any number from 2")


@dataclass
class TokenOptions:
    """word-level tags (token classification): where the words and tags are, and scoring"""

    tag_column: int | None = option(
        None, "CoNLL files: the 0-based column of the tag (negative counts from the end; "
              "column 0 is the word)", shown="the last")
    tokens_column: str = option("tokens", "tables: the column of each sentence's words "
                                          "(a list of strings)")
    tags_column: str = option("ner_tags", "tables: the column of each sentence's tags (a list "
                                          "of strings, or of integers with names)")
    label_names: str | None = option(
        None, "the names of integer tags in id order, comma-separated (O,B-PER,I-PER,...), "
              "for a table whose features do not name them",
        shown="the table's features (datasets' ClassLabel), else the tags as written")
    label_scheme: str = option(
        "auto", "the tagging scheme strict scoring follows: IOB1, IOB2 (BIO) or BIOES; auto "
                "reads it off the tags (BIOES with S-/E- tags, IOB1 where an entity starts "
                "with I-, else IOB2)", choices=("auto", "IOB1", "IOB2", "BIOES"))
    strict: bool = option(False, "score entities as seqeval's strict mode (only the "
                                 "scheme's transitions make entities), not conlleval's")
    word_stride: int | None = option(
        None, "sentences longer than a window: the most word pieces consecutive windows "
              "share (every word is scored once, in the window where it is most central)",
        shown="a quarter of the window")


@dataclass
class EmbeddingOptions:
    """sentence embeddings: the pair or triplet columns, the pooling, the contrastive loss and
    the dev data (tasks/embedding.py)"""

    anchor_column: str = option("anchor", "the column of the anchor text (a query, a "
                                          "sentence)")
    positive_column: str = option("positive", "the column of the text that matches the anchor")
    negative_column: str | None = option(
        None, "the column of a hard negative (a text that does not match the anchor); none: "
              "the batch's other positives are the only negatives")
    pooling: str | None = option(
        None, "how a sentence is read off the last hidden states: 'mean' of the tokens, "
              "'cls' (the first token), or 'family' (the summary token its sequence "
              "classifier reads: the first, or XLNet's last)", choices=("mean", "cls", "family"),
        shown="a sentence-transformers directory's own pooling, else mean")
    scale: float = option(20.0, "the contrastive loss's scale: cross-entropy over scale x "
                                "cosine (1 / temperature; sentence-transformers' 20)")
    chunk_size: int | None = option(
        None, "GradCache: embed a batch this many rows at a time, so a large batch fits in "
              "memory, with the gradient of the whole batch", shown="off (the whole batch)")
    dev: str | None = option(
        None, "the dev data: a table (STS pairs with scores, or pairs/triplets in the training "
              "columns) or a BEIR folder (corpus.jsonl, queries.jsonl, qrels/)",
        shown="DATA's dev file, else a share of train")
    dev_format: str = option(
        "auto", "what the dev data is: 'sts' (Spearman of the cosines), 'pairs' (retrieval of "
                "each anchor's positive among all dev texts), 'beir' (nDCG@10); auto: beir for "
                "a folder, sts for a table with the score column, else pairs",
        choices=("auto", "sts", "pairs", "beir"))
    sentence1_column: str = option("sentence1", "STS dev: the column of the first sentence")
    sentence2_column: str = option("sentence2", "STS dev: the column of the second sentence")
    score_column: str = option("score", "STS dev: the column of the gold similarity")
    qrels_split: str | None = option(None, "BEIR dev: qrels/SPLIT.tsv",
                                     shown="dev if the folder has it, else test")
    retrieval_ks: str = option("1,3,5,10,100", "BEIR dev: the k of nDCG@k, MRR@k and "
                                               "recall@k, comma-separated (10 always)")
    pairs_dev_fraction: float = option(0.1, "without dev data: the share of the training "
                                            "pairs held out as dev")

    def __post_init__(self) -> None:
        if not self.scale > 0:  # also NaN
            raise ValueError(f"scale={self.scale}: must be positive")
        if self.chunk_size is not None and self.chunk_size < 1:
            raise ValueError(f"chunk_size={self.chunk_size}: must be at least 1 (or unset)")


# ---- the registry -------------------------------------------------------------------------

@dataclass(frozen=True)
class TaskSpec:
    """One task: its adapter ("module:Class", imported when the task runs), its recipe, the
    dataclass of its own options (None: it has none), a line for --help, and whether a model
    family's fine-tuning defaults (tasks/family_defaults.py) apply to it: not to a task that
    no family's paper fine-tunes, whose recipe is the same for every family."""

    adapter: str
    recipe: TaskRecipe
    options: type | None = None
    summary: str = ""
    family_defaults: bool = True


def _glue(lr: float, batch_size: int, dropout: float, max_steps: int, warmup_steps: int,
          summary: str) -> TaskSpec:
    recipe = TaskRecipe(lr=lr, batch_size=batch_size, dropout=dropout, max_steps=max_steps,
                        warmup_steps=warmup_steps)
    return TaskSpec("litebert.tasks.sequence:SequenceTask", recipe, TableCacheOptions,
                    f"GLUE {summary}")


_SQUAD = "litebert.tasks.qa:SquadTask"
_CHOICE = "litebert.tasks.choice:ChoiceTask"
# BERT's SWAG fine-tuning (Devlin et al. 2019, Section 4.4): "3 epochs with a learning rate of
# 2e-5 and a batch size of 16". As steps: 3 epochs of SWAG's 73,546 training questions, each
# epoch ceil(73,546 / 16) batches (the loop's last batch of an epoch is a short one). Dropout
# 0.1 was "always kept" in fine-tuning (Appendix A.3). The paper gives no fine-tuning warm-up:
# 10% of the steps is the official BERT code's warmup_proportion (run_classifier.py). Not in
# the paper either: 128 tokens, ample for a SWAG pair (a caption and the start of the next).
_SWAG_STEPS = 3 * -(-73_546 // 16)
_SWAG = TaskRecipe(lr=2e-5, batch_size=16, dropout=0.1, max_steps=_SWAG_STEPS,
                   warmup_steps=_SWAG_STEPS // 10, max_seq_length=128)
# sentence-transformers' common settings (not ALBERT's paper): lr 2e-5 is the default of
# SentenceTransformer.fit, batch 32 the batch of its encode and of its cached losses'
# mini-batches, warm-up 10% the warmup_ratio of its training examples. The length is the
# starting directory's (a sentence-transformers directory's sentence_bert_config.json), else
# EMBEDDING_LENGTH.
_EMBEDDING = TaskRecipe(lr=2e-5, batch_size=32, dropout=0.1, max_steps=1000, warmup_steps=100,
                        max_seq_length=None)
EMBEDDING_LENGTH = 128
# Not in the paper: the generic tables get a short, safe schedule.
_GENERIC = TaskRecipe(lr=2e-5, batch_size=32, dropout=0.0, max_steps=1000, warmup_steps=100,
                      max_seq_length=128)

# BERT on CoNLL-2003 (Devlin et al. 2019, Section 5.3: the first piece of each word is
# tagged; Appendix A.3: fine-tuning takes batch 16 or 32, lr 5e-5, 3e-5 or 2e-5, 2 to 4 epochs,
# dropout 0.1; the paper names no per-task pick for NER). Here batch 32, lr 5e-5 and 3 epochs
# of CoNLL-2003's 14,041 training sentences: 3 * ceil(14041 / 32) = 3 * 439 = 1317 steps,
# warm-up over 10% of them (the released BERT code's warmup_proportion; the paper gives none).
CONLL2003_TRAIN_SENTENCES = 14041
_NER_STEPS = 3 * -(-CONLL2003_TRAIN_SENTENCES // 32)
_TOKENS = "litebert.tasks.tokens:TokenTask"
_NER = TaskRecipe(lr=5e-5, batch_size=32, dropout=0.1, max_steps=_NER_STEPS,
                  warmup_steps=_NER_STEPS // 10, max_seq_length=128)

TASKS: dict[str, TaskSpec] = {  # recipes: ALBERT's Table 14 (choice, ner: BERT's, above)
    "cola": _glue(1e-5, 16, 0.0, 5336, 320, "CoLA: acceptability, Matthews correlation"),
    "stsb": _glue(2e-5, 16, 0.0, 3598, 214, "STS-B: similarity, Pearson/Spearman"),
    "sst2": _glue(1e-5, 32, 0.0, 20935, 1256, "SST-2: sentiment, accuracy"),
    "mnli": _glue(3e-5, 128, 0.0, 10000, 1000, "MNLI: entailment, matched/mismatched acc."),
    "qnli": _glue(1e-5, 32, 0.0, 33112, 1986, "QNLI: question entailment, accuracy"),
    "qqp": _glue(5e-5, 128, 0.1, 14000, 1000, "QQP: paraphrase, F1 and accuracy"),
    "rte": _glue(3e-5, 32, 0.1, 800, 200, "RTE: entailment, accuracy"),
    "mrpc": _glue(2e-5, 32, 0.0, 800, 200, "MRPC: paraphrase, F1 and accuracy"),
    "wnli": _glue(2e-5, 16, 0.1, 2000, 250, "WNLI: coreference entailment, accuracy"),
    "squad1": TaskSpec(_SQUAD, TaskRecipe(lr=5e-5, batch_size=48, dropout=0.0, max_steps=3649,
                                          warmup_steps=365, max_seq_length=384),
                       SquadOptions, "SQuAD 1.1: extractive QA, exact match and F1"),
    "squad2": TaskSpec(_SQUAD, TaskRecipe(lr=3e-5, batch_size=48, dropout=0.0, max_steps=8144,
                                          warmup_steps=814),
                       SquadOptions, "SQuAD 2.0: extractive QA with unanswerable questions"),
    "race": TaskSpec(_CHOICE, TaskRecipe(lr=2e-5, batch_size=32, dropout=0.1, max_steps=12000,
                                         warmup_steps=1000),
                     None, "RACE: reading comprehension, 4 options, accuracy"),
    "classification": TaskSpec("litebert.tasks.sequence:SequenceTask", _GENERIC, TableOptions,
                               "your table of texts and labels: accuracy, F1"),
    "regression": TaskSpec("litebert.tasks.sequence:SequenceTask", _GENERIC, TableOptions,
                           "your table of texts and numbers: Pearson/Spearman"),
    "choice": TaskSpec(_CHOICE, _SWAG, ChoiceOptions,
                       "multiple choice, SWAG's columns or your own (any number of endings): "
                       "accuracy"),
    "ner": TaskSpec(_TOKENS, _NER, TokenOptions,
                    "named entities (CoNLL-2003): entity F1 as conlleval scores it"),
    "tokens": TaskSpec(_TOKENS, _GENERIC, TokenOptions,
                       "your words with tags (CoNLL files or tables): entity F1 when the "
                       "tags are B-/I-/E-/S- entities, else token accuracy"),
    "embedding": TaskSpec("litebert.tasks.embedding:EmbeddingTask", _EMBEDDING,
                          EmbeddingOptions, "sentence embeddings from pairs or triplets "
                          "(contrastive, in-batch negatives): STS Spearman, nDCG@10",
                          family_defaults=False),
}
GLUE = ("cola", "sst2", "mrpc", "stsb", "qqp", "mnli", "qnli", "rte", "wnli")


def task_names() -> list[str]:
    return list(TASKS)


def option_fields(task: str) -> tuple[dataclasses.Field, ...]:
    """The fields of `task`'s own options (none when it has none)."""
    options = TASKS[task].options
    return dataclasses.fields(options) if options is not None else ()


def takers(name: str) -> list[str]:
    """The tasks whose options include the field `name`."""
    return [task for task in TASKS if any(f.name == name for f in option_fields(task))]


def option_classes() -> dict[type, list[str]]:
    """Each class that declares options -> the tasks that take its fields, in registry
    order: one --help group each (a field shows under the class that declares it)."""
    groups: dict[type, list[str]] = {}
    for task, spec in TASKS.items():
        for cls in spec.options.__mro__ if spec.options is not None else ():
            if dataclasses.is_dataclass(cls) and own_fields(cls):
                groups.setdefault(cls, []).append(task)
    return groups


def own_fields(cls: type) -> list[dataclasses.Field]:
    """The fields `cls` declares itself (not those it inherits)."""
    declared = cls.__dict__.get("__annotations__", {})
    return [f for f in dataclasses.fields(cls) if f.name in declared]
