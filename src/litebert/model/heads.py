"""Task heads on any registered backbone, named and shaped like transformers' classes.

Each head builds its backbone with build_backbone(config) (model/backbone.py: config.backbone
chooses it) and holds it at `backbone`, the canonical prefix of backbone keys whatever the
backbone. What a head reads of it: last_hidden_state, pooler_output, `input_embeddings` (the
tied MLM decoder) and `summary_position` (the token the summary heads read: [CLS] first for
BERT-style templates, <cls> last for XLNet's).

Losses follow transformers: -100 labels are ignored; SequenceClassification with
num_labels == 1 is regression (MSE). One deliberate difference: given `labels`, the MLM heads
compute logits only at the masked positions (labels != -100), so `prediction_logits` /
`logits` are (N, V) there. At 15% masking that skips ~85% of the E x V decoder. Given the
static prediction slots of a pre-training batch instead (`masked_positions`, `masked_ids`,
`masked_weights`, (B, P) each: litebert.data.loader.prediction_slots), they score the P slots
of every row, logits (B, P, V), and the loss is the weighted mean over the used slots: the
same loss with shapes fixed per data directory and no read back to the host, so
torch.compile(fullgraph=True) takes the step (cramming's way). The slots win when a batch
carries both.

Every head is built from parts (model/head_parts.py): what it reads of the backbone, a
transform, dropout and an output layer (the tied decoder for MLM), as the config's fields say
(`classifier_head`, `classifier_pooling`, `classifier_act`, `mlm_act`, `use_pooler` and the
heads' biases: head_parts.classifier_spec and mlm_spec are the one place that reads them).
Module names are transformers' for each structure (ELECTRA's `classifier.out_proj`, XLNet's
`sequence_summary.summary`, ModernBERT's `head.norm` and `drop`), so the family adapters
rename only the backbone (XLNet's classifier is its `logits_proj`). The beam-search span
head with its answer classifier is in beam_qa.py.

Every head calls its backbone with use_mems=False: fine-tuning keeps no memories, even when
the config kept a pre-training mem_len (XLNet).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from litebert.config import ModelConfig
from litebert.model.backbone import build_backbone
from litebert.model.base import PreTrainedModel
from litebert.model.head_parts import (
    ClassificationHead,
    MLMHead,
    Task,
    add_classifier,
    classifier_spec,
    classify,
    mlm_spec,
    pool,
)
from litebert.model.outputs import (
    ClassifierOutput,
    MaskedLMOutput,
    PreTrainingOutput,
    QuestionAnsweringOutput,
)

IGNORE = -100


class MaskedLMHead(MLMHead):
    """dense H->E, activation, LayerNorm(E), decoder tied to the word embeddings, own bias
    (head_parts.mlm_spec). ALBERT's and BERT's MLM head; ELECTRA's generator head and
    RoBERTa's LM head (with mlm_act "gelu", E == H for RoBERTa); ModernBERT's without the
    dense and norm biases."""

    def __init__(self, config: ModelConfig):
        super().__init__(mlm_spec(config), config.hidden_size, config.embedding_size,
                         config.vocab_size)


class SentencePairHead(ClassificationHead):
    """Two-way classifier on the pooled output: sentence order (SOP) or next sentence (NSP);
    dropout, then `classifier`."""

    def __init__(self, config: ModelConfig):
        super().__init__(classifier_spec(config, "pair"), config.hidden_size, 2)


def _two_labels(config: ModelConfig) -> ModelConfig:
    """transformers sizes the SOP and span heads by num_labels: keep it at their 2 outputs."""
    return config if config.num_labels == 2 else config.replace(num_labels=2, id2label=None)


def documents(document_ids) -> dict:
    """The pre-training heads' document_ids for the backbone, only when given: a backbone
    without document attention (XLNet's) takes no such argument."""
    return {} if document_ids is None else {"document_ids": document_ids}


def _masked_lm(head, hidden, embeddings, labels):
    """MLM logits and mean loss; with labels, logits only where labels != -100."""
    if labels is None:
        return None, head(hidden, embeddings)  # (B, T, V)
    masked = labels != IGNORE  # (B, T)
    logits = head(hidden[masked], embeddings)  # (N, V)
    target = labels[masked]  # (N,)
    # Sum / max(N, 1): a batch without masked tokens gives 0, not NaN.
    loss = F.cross_entropy(logits, target, reduction="sum") / max(target.numel(), 1)
    return loss, logits


def _slot_lm(head, hidden, embeddings, positions, ids, weights):
    """MLM logits (B, P, V) at the P slots of every row and the mean loss over the used ones
    (weight > 0); no data-dependent shape, no host sync. Without ids: logits only."""
    H = hidden.shape[-1]
    picked = hidden.gather(1, positions[..., None].expand(-1, -1, H))  # (B, P, H)
    logits = head(picked, embeddings)  # (B, P, V)
    if ids is None:
        return None, logits
    if weights is None:
        weights = torch.ones_like(ids, dtype=logits.dtype)
    losses = F.cross_entropy(logits.flatten(0, 1), ids.flatten(), reduction="none")  # (B*P,)
    # Sum / max(used, 1) on the device: a batch without masked tokens gives 0, not NaN.
    loss = (losses * weights.flatten()).sum() / weights.sum().clamp(min=1)
    return loss, logits


def _mlm(head, hidden, embeddings, labels, slots):
    """The slot path when the batch has masked_positions, else the labels path. A
    pre-training batch carries both: its slots where the step must not wait on the host (on
    CUDA, and in a compiled graph, which wants one shape), its labels in a CPU's eager step,
    where the boolean index costs no sync and scores the masked tokens without the unused
    slots (about 2% of the tiny step: benchmarks/bench_static_step.py)."""
    positions, ids, weights = slots
    eager_cpu = not (hidden.is_cuda or torch.compiler.is_compiling())
    if positions is not None and (labels is None or not eager_cpu):
        return _slot_lm(head, hidden, embeddings, positions, ids, weights)
    return _masked_lm(head, hidden, embeddings, labels)


class EncoderForPreTraining(PreTrainedModel):
    """MLM + sentence-order prediction (the same 2-way head serves NSP).

    The SOP head reads the pooler, so this model has one even when config.use_pooler is
    false (an ELECTRA generator directory loads here with the pair head newly initialised).
    """

    def __init__(self, config: ModelConfig):
        super().__init__()
        config = _two_labels(config)
        self.config = config
        self.backbone = build_backbone(config, add_pooling_layer=True)
        self.predictions = MaskedLMHead(config)
        self.sop_classifier = SentencePairHead(config)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None, sentence_order_label=None, next_sentence_label=None,
                masked_positions=None, masked_ids=None, masked_weights=None,
                document_ids=None):
        out = self.backbone(input_ids, attention_mask, token_type_ids, position_ids, use_mems=False,
                          **documents(document_ids))
        words = self.backbone.input_embeddings  # (V, E)
        mlm_loss, logits = _mlm(self.predictions, out.last_hidden_state, words, labels,
                                (masked_positions, masked_ids, masked_weights))
        sop_logits = self.sop_classifier(out.pooler_output)  # (B, 2)
        order = sentence_order_label if sentence_order_label is not None else next_sentence_label
        sop_loss = F.cross_entropy(sop_logits, order.view(-1)) if order is not None else None
        parts = [x for x in (mlm_loss, sop_loss) if x is not None]
        return PreTrainingOutput(
            loss=sum(parts) if parts else None, mlm_loss=mlm_loss, sop_loss=sop_loss,
            prediction_logits=logits, sop_logits=sop_logits,
            last_hidden_state=out.last_hidden_state)


class EncoderForMaskedLM(PreTrainedModel):

    def __init__(self, config: ModelConfig):
        super().__init__()
        self.config = config
        self.backbone = build_backbone(config, add_pooling_layer=False)
        self.predictions = MaskedLMHead(config)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None, masked_positions=None, masked_ids=None, masked_weights=None,
                document_ids=None):
        out = self.backbone(input_ids, attention_mask, token_type_ids, position_ids, use_mems=False,
                          **documents(document_ids))
        words = self.backbone.input_embeddings  # (V, E)
        loss, logits = _mlm(self.predictions, out.last_hidden_state, words, labels,
                            (masked_positions, masked_ids, masked_weights))
        return MaskedLMOutput(loss=loss, logits=logits, last_hidden_state=out.last_hidden_state)


class _Classifier(PreTrainedModel):
    """Backbone + the classifier that config gives `task` (head_parts.classifier_spec), its
    parts at transformers' names; subclasses say how it is scored, then call init_weights."""

    def __init__(self, config: ModelConfig, task: Task, out_features: int):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.spec = classifier_spec(config, task)
        self.backbone = build_backbone(config, add_pooling_layer=self.spec.pooling == "pooler")
        add_classifier(self, self.spec, config.hidden_size, out_features)

    def classifier_logits(self, out, attention_mask):
        """The backbone's output -> logits: (B, out) pooled, (B, T, out) per token."""
        pooled = pool(self.spec.pooling, out, attention_mask, self.backbone.summary_position)
        return classify(self, self.spec, pooled)


class EncoderForSequenceClassification(_Classifier):
    """num_labels logits from what classifier_head reads: the pooled output ("pooler"), the
    summary token or the mean of the tokens (classifier_pooling) through ELECTRA's
    ClassificationHead ("first_token"), XLNet's sequence summary ("summary": its
    `sequence_summary.summary`; `classifier` is its `logits_proj`) or ModernBERT's head
    ("pooled_norm"); num_labels == 1 is regression (MSE)."""

    def __init__(self, config: ModelConfig):
        super().__init__(config, "sequence", config.num_labels)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None):
        out = self.backbone(input_ids, attention_mask, token_type_ids, position_ids, use_mems=False)
        logits = self.classifier_logits(out, attention_mask)  # (B, num_labels)
        loss = None if labels is None else self._loss(logits, labels)
        return ClassifierOutput(loss=loss, logits=logits, last_hidden_state=out.last_hidden_state)

    def _loss(self, logits, labels):
        kind = self.config.problem_type
        if kind is None:
            if self.num_labels == 1:
                kind = "regression"
            elif labels.dtype in (torch.long, torch.int):
                kind = "single_label_classification"
            else:
                kind = "multi_label_classification"
        if kind == "regression":
            if self.num_labels == 1:
                return F.mse_loss(logits.squeeze(), labels.squeeze().to(logits.dtype))
            return F.mse_loss(logits, labels.to(logits.dtype))
        if kind == "single_label_classification":
            return F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        return F.binary_cross_entropy_with_logits(logits, labels.to(logits.dtype))


class EncoderForTokenClassification(_Classifier):
    """Every position -> num_labels logits (B, T, num_labels); -100 labels ignored.

    The loss is transformers': the mean over the batch's labelled tokens. `row_loss_tokens`
    = c (not saved; fine-tuning's token tasks set it to the mean labelled tokens per
    training row) makes it the sum over labelled tokens / (c * rows with a label): every
    token still weighs the same, but each row's part stands alone, so torchrun's ranks, whose mean
    losses the loop weights by their rows (tasks/runtime.py), add up to one process's loss
    (a mean over tokens would weigh a rank's tokens by its rows instead)."""

    row_loss_tokens: float | None = None

    def __init__(self, config: ModelConfig):
        super().__init__(config, "tokens", config.num_labels)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None):
        out = self.backbone(input_ids, attention_mask, token_type_ids, position_ids, use_mems=False)
        logits = self.classifier_logits(out, attention_mask)  # (B, T, num_labels)
        loss = None
        if labels is not None and self.row_loss_tokens is None:
            loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        elif labels is not None:  # a row without a label adds 0, never NaN
            total = F.cross_entropy(logits.view(-1, self.num_labels).float(), labels.view(-1),
                                    reduction="sum")
            # Rows with a label: a batch's filler rows (all -100, tasks/batching.pad_rows)
            # are not counted; fine-tuning trains on no row without one.
            rows = (labels != -100).any(-1).sum().clamp(min=1)
            loss = total / (rows * self.row_loss_tokens)
        return ClassifierOutput(loss=loss, logits=logits, last_hidden_state=out.last_hidden_state)


class EncoderForMultipleChoice(_Classifier):
    """Inputs (B, C, T): each choice scored from its pooled output, or without a pooler from
    the sequence summary of its summary token (or ModernBERT's head); logits (B, C).

    `choice_mask` (B, C), 1 for a real choice, lets questions with fewer than C choices share
    a batch: a padded choice's logit is the dtype's lowest, so it never wins, and its softmax
    share (so its part of the loss and gradient) is 0. Without it every choice is real, as in
    transformers' BertForMultipleChoice."""

    def __init__(self, config: ModelConfig):
        super().__init__(config, "choice", 1)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None, choice_mask=None):
        B, C, T = input_ids.shape
        mask, types, positions = [None if x is None else x.reshape(B * C, T)
                                  for x in (attention_mask, token_type_ids, position_ids)]
        out = self.backbone(input_ids.reshape(B * C, T), mask, types, positions, use_mems=False)
        logits = self.classifier_logits(out, mask).view(B, C)  # (B, C)
        if choice_mask is not None:
            logits = logits.masked_fill(choice_mask == 0, torch.finfo(logits.dtype).min)
        loss = None if labels is None else F.cross_entropy(logits, labels)
        return ClassifierOutput(loss=loss, logits=logits, last_hidden_state=out.last_hidden_state)


class EncoderForQuestionAnswering(_Classifier):
    """Start/end logits per token. SQuAD 2.0 "no answer" is start = end = 0 ([CLS])."""

    def __init__(self, config: ModelConfig):
        super().__init__(_two_labels(config), "spans", 2)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                start_positions=None, end_positions=None):
        out = self.backbone(input_ids, attention_mask, token_type_ids, position_ids, use_mems=False)
        logits = self.classifier_logits(out, attention_mask)  # (B, T, 2)
        start, end = (x.squeeze(-1).contiguous() for x in logits.split(1, dim=-1))  # (B, T)
        loss = None
        if start_positions is not None and end_positions is not None:
            # Positions outside the window (clamped to T) are ignored, as in transformers.
            T = start.size(1)
            s = start_positions.view(-1).clamp(0, T)
            e = end_positions.view(-1).clamp(0, T)
            loss = (F.cross_entropy(start, s, ignore_index=T)
                    + F.cross_entropy(end, e, ignore_index=T)) / 2
        return QuestionAnsweringOutput(loss=loss, start_logits=start, end_logits=end,
                                       last_hidden_state=out.last_hidden_state)
