"""Task heads on any registered backbone, named and shaped like transformers' classes.

Each head builds its backbone with build_backbone(config) (model/backbone.py: config.backbone
chooses it) and holds it at `albert`, the canonical prefix of backbone keys whatever the
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

The classifiers' structure comes from the config: `classifier_head` "pooler" (ALBERT, BERT),
"first_token" (ELECTRA; RoBERTa with tanh; the summary token, first for these backbones) or
"summary" (XLNet: a dense + classifier_act summary of the summary token, then dropout and the
classifier), and multiple choice reads the pooler when the config has one (`use_pooler`), else
that same summary (ELECTRA's and XLNet's sequence summary). Module names are transformers'
for each structure, so the family adapters rename only the backbone (XLNet's classifier is
its `logits_proj`). The beam-search span head with its answer classifier is in beam_qa.py.

Every head calls its backbone with use_mems=False: fine-tuning keeps no memories, even when
the config kept a pre-training mem_len (XLNet).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from litebert.config import AlbertConfig
from litebert.model.backbone import build_backbone
from litebert.model.base import AlbertPreTrainedModel
from litebert.model.layers import activation
from litebert.model.outputs import (
    ClassifierOutput,
    MaskedLMOutput,
    PreTrainingOutput,
    QuestionAnsweringOutput,
)

IGNORE = -100


class AlbertMLMHead(nn.Module):
    """dense H->E, activation, LayerNorm(E), decoder tied to the word embeddings, own bias.

    ALBERT's and BERT's MLM head; ELECTRA's generator head and RoBERTa's LM head (with mlm_act
    "gelu", E == H for RoBERTa).
    """

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.embedding_size)
        self.LayerNorm = nn.LayerNorm(config.embedding_size, eps=config.layer_norm_eps)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.act = activation(config.mlm_activation)

    def forward(self, h, word_embeddings):  # h (..., H); word_embeddings (V, E)
        h = self.LayerNorm(self.act(self.dense(h)))  # (..., E)
        return F.linear(h, word_embeddings, self.bias)  # (..., V)


class AlbertSOPHead(nn.Module):
    """Two-way classifier on the pooled output: sentence order (SOP) or next sentence (NSP)."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.dropout = nn.Dropout(config.classifier_dropout_prob)
        self.classifier = nn.Linear(config.hidden_size, 2)

    def forward(self, pooled):  # (B, H) -> (B, 2)
        return self.classifier(self.dropout(pooled))


def _two_labels(config: AlbertConfig) -> AlbertConfig:
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


class AlbertForPreTraining(AlbertPreTrainedModel):
    """MLM + sentence-order prediction (the same 2-way head serves NSP).

    The SOP head reads the pooler, so this model has one even when config.use_pooler is
    false (an ELECTRA generator directory loads here with the pair head newly initialised).
    """

    def __init__(self, config: AlbertConfig):
        super().__init__()
        config = _two_labels(config)
        self.config = config
        self.albert = build_backbone(config, add_pooling_layer=True)
        self.predictions = AlbertMLMHead(config)
        self.sop_classifier = AlbertSOPHead(config)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None, sentence_order_label=None, next_sentence_label=None,
                masked_positions=None, masked_ids=None, masked_weights=None,
                document_ids=None):
        out = self.albert(input_ids, attention_mask, token_type_ids, position_ids, use_mems=False,
                          **documents(document_ids))
        words = self.albert.input_embeddings  # (V, E)
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


class AlbertForMaskedLM(AlbertPreTrainedModel):

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.config = config
        self.albert = build_backbone(config, add_pooling_layer=False)
        self.predictions = AlbertMLMHead(config)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None, masked_positions=None, masked_ids=None, masked_weights=None,
                document_ids=None):
        out = self.albert(input_ids, attention_mask, token_type_ids, position_ids, use_mems=False,
                          **documents(document_ids))
        words = self.albert.input_embeddings  # (V, E)
        loss, logits = _mlm(self.predictions, out.last_hidden_state, words, labels,
                            (masked_positions, masked_ids, masked_weights))
        return MaskedLMOutput(loss=loss, logits=logits, last_hidden_state=out.last_hidden_state)


class FirstTokenClassifier(nn.Module):
    """summary token -> dropout -> dense H->H -> act -> dropout -> out_proj (ELECTRA's
    ElectraClassificationHead with GELU; RoBERTa's head is the same with tanh). The summary
    token is the backbone's `summary_position`: the first ([CLS]) for BERT-style templates."""

    def __init__(self, config: AlbertConfig, out_features: int):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.dropout = nn.Dropout(config.classifier_dropout_prob)
        self.act = activation(config.classifier_act)
        self.out_proj = nn.Linear(config.hidden_size, out_features)

    def forward(self, summary):  # (B, H) -> (B, out_features)
        x = self.act(self.dense(self.dropout(summary)))  # (B, H)
        return self.out_proj(self.dropout(x))


class SequenceSummary(nn.Module):
    """act(dense(summary token)): what multiple choice reads when the backbone has no pooler
    and what the "summary" classifier reads (ELECTRA's sequence summary: first token,
    projection, GELU; XLNet's: last token, projection, tanh; the dropout after it is the
    head's)."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        self.summary = nn.Linear(config.hidden_size, config.hidden_size)
        self.act = activation(config.classifier_act)

    def forward(self, summary):  # (B, H) -> (B, H)
        return self.act(self.summary(summary))


class _Classifier(AlbertPreTrainedModel):
    """Backbone + dropout + a classifier; subclasses say which classifier, what it reads and
    how it is scored, then call init_weights."""

    def __init__(self, config: AlbertConfig, classifier: nn.Module, pooling: bool):
        super().__init__()
        self.config = config
        self.num_labels = config.num_labels
        self.albert = build_backbone(config, add_pooling_layer=pooling)
        self.dropout = nn.Dropout(config.classifier_dropout_prob)
        self.classifier = classifier

    def summary_token(self, hidden):  # (B, T, H) -> (B, H): the token that sums a sequence up
        return hidden[:, self.albert.summary_position]


class AlbertForSequenceClassification(_Classifier):
    """num_labels logits from the pooled output ("pooler" head), the summary token
    ("first_token" head) or its sequence summary ("summary" head: XLNet's, where
    `sequence_summary.summary` is its namesake and `classifier` its `logits_proj`);
    num_labels == 1 is regression (MSE)."""

    def __init__(self, config: AlbertConfig):
        kind = config.classifier_head
        head = (FirstTokenClassifier(config, config.num_labels) if kind == "first_token"
                else nn.Linear(config.hidden_size, config.num_labels))
        super().__init__(config, head, pooling=kind == "pooler")
        self.sequence_summary = SequenceSummary(config) if kind == "summary" else None
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None):
        out = self.albert(input_ids, attention_mask, token_type_ids, position_ids, use_mems=False)
        if isinstance(self.classifier, FirstTokenClassifier):
            logits = self.classifier(self.summary_token(out.last_hidden_state))  # (B, labels)
        elif self.sequence_summary is not None:
            summary = self.sequence_summary(self.summary_token(out.last_hidden_state))  # (B, H)
            logits = self.classifier(self.dropout(summary))  # (B, num_labels)
        else:
            logits = self.classifier(self.dropout(out.pooler_output))  # (B, num_labels)
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


class AlbertForTokenClassification(_Classifier):
    """Every position -> num_labels logits (B, T, num_labels); -100 labels ignored."""

    def __init__(self, config: AlbertConfig):
        super().__init__(config, nn.Linear(config.hidden_size, config.num_labels), pooling=False)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None):
        out = self.albert(input_ids, attention_mask, token_type_ids, position_ids, use_mems=False)
        logits = self.classifier(self.dropout(out.last_hidden_state))  # (B, T, num_labels)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, self.num_labels), labels.view(-1))
        return ClassifierOutput(loss=loss, logits=logits, last_hidden_state=out.last_hidden_state)


class AlbertForMultipleChoice(_Classifier):
    """Inputs (B, C, T): each choice scored from its pooled output, or without a pooler from
    the summary of its summary token; logits (B, C)."""

    def __init__(self, config: AlbertConfig):
        super().__init__(config, nn.Linear(config.hidden_size, 1), pooling=config.use_pooler)
        self.sequence_summary = None if config.use_pooler else SequenceSummary(config)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                labels=None):
        B, C, T = input_ids.shape
        flat = [None if x is None else x.reshape(B * C, T)
                for x in (attention_mask, token_type_ids, position_ids)]
        out = self.albert(input_ids.reshape(B * C, T), *flat, use_mems=False)
        if self.sequence_summary is None:
            pooled = out.pooler_output  # (B * C, H)
        else:
            pooled = self.sequence_summary(self.summary_token(out.last_hidden_state))  # (B*C, H)
        logits = self.classifier(self.dropout(pooled)).view(B, C)  # (B, C)
        loss = None if labels is None else F.cross_entropy(logits, labels)
        return ClassifierOutput(loss=loss, logits=logits, last_hidden_state=out.last_hidden_state)


class AlbertForQuestionAnswering(AlbertPreTrainedModel):
    """Start/end logits per token. SQuAD 2.0 "no answer" is start = end = 0 ([CLS])."""

    def __init__(self, config: AlbertConfig):
        super().__init__()
        config = _two_labels(config)
        self.config = config
        self.albert = build_backbone(config, add_pooling_layer=False)
        self.qa_outputs = nn.Linear(config.hidden_size, config.num_labels)
        self.init_weights()

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, position_ids=None,
                start_positions=None, end_positions=None):
        out = self.albert(input_ids, attention_mask, token_type_ids, position_ids, use_mems=False)
        logits = self.qa_outputs(out.last_hidden_state)  # (B, T, 2)
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
