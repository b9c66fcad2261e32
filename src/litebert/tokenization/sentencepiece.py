"""The SentencePiece backend (`spiece.model`): ALBERT's (or XLNet's) ids, as the official code
makes them; the vocabulary's layout (layouts.py) gives the template and default text settings.

SentencePiece ids are those of the official ALBERT code (google-research/albert `FullTokenizer`
with `spm_model_file`): `preprocess_text`, SentencePiece, then the re-split of pieces like
"▁1990," into "▁1990" + "," (see `litebert.tokenization.albert_text`). transformers'
AlbertTokenizer skips that re-split and handles user-defined symbols differently, so it often
disagrees.

Speed: the batch path runs SentencePiece's threaded batch encoder, then applies the re-split
with a per-id table in numpy; a text is re-encoded piece by piece only when an <unk> in it may
hide text that changes the ids (rare vocabularies, see `_unknown_text_risks`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import sentencepiece as spm

from litebert.files import atomic_write
from litebert.tokenization.albert_text import (
    SPIECE_NAME,
    UNDERLINE,
    aligned_preprocess,
    is_number_comma,
    map_span,
    preprocess_batch,
    resplit,
    split_number,
)
from litebert.tokenization.base import PairTemplate, TextSettings, TokenizerError
from litebert.tokenization.hf_json import (
    add_special_tokens,
    sentencepiece_pipeline,
    template_processing,
)
from litebert.tokenization.layouts import layout_of
from litebert.tokenization.spm_proto import read_model


class SentencePieceBackend:
    kind = "sentencepiece"
    pair_separators = 1  # [CLS] A [SEP] B [SEP], or XLNet's A <sep> B <sep> <cls>
    typed_pairs = True
    continuation_prefix = ""  # every text is encoded alike, wherever it sits
    extra: list[dict[str, Any]] = []  # words are added to its tokenizer.json (unigram_json.py)
    # Candidates per special token, first match wins. The sentencepiece sdist's test models
    # have <s> and </s> instead of [CLS] and [SEP].
    special_names: dict[str, tuple[str, ...]] = {
        "pad": ("<pad>", "[PAD]"), "unk": ("<unk>", "[UNK]"), "cls": ("[CLS]", "<cls>", "<s>"),
        "sep": ("[SEP]", "<sep>", "</s>"), "mask": ("[MASK]", "<mask>"), "eod": ("<eod>",)}

    def __init__(self, path: Path, settings: Callable[[TextSettings], TextSettings]):
        """settings: the text settings, given the layout's defaults (a tokenizer_config.json
        and the caller's overrides decide the rest)."""
        self.path = path
        self.model_bytes = path.read_bytes()
        self.sp = spm.SentencePieceProcessor()
        try:
            self.sp.LoadFromSerializedProto(self.model_bytes)
        except (RuntimeError, OSError, TypeError) as err:
            raise TokenizerError(f"{path}: not a SentencePiece model ({err})") from None
        self.pieces = [self.sp.id_to_piece(i) for i in range(self.sp.get_piece_size())]
        self.layout = layout_of(lambda piece: self.token_to_id(piece) is not None)
        self.cls_last, self.pad_type_id = self.layout.cls_last, self.layout.pad_type_id
        self.settings = settings(self.layout.settings)
        self.word_start = np.array([p.startswith(UNDERLINE) for p in self.pieces])
        self.numpy_out = _supports_numpy(self.sp)
        self._build_split_table()
        self.unk_always, self.unk_hazards = self._unknown_text_risks()

    def _build_split_table(self) -> None:
        """Per id, the ids (and word starts) that replace it: itself, or ALBERT's re-split
        of a "digit," piece. The batch path applies the table with numpy alone."""
        extra_ids: list[int] = []
        extra_starts: list[bool] = []
        size = len(self.pieces)
        self.rep_start = np.arange(size, dtype=np.int64)
        self.rep_len = np.ones(size, dtype=np.int64)
        for i, piece in enumerate(self.pieces):
            if is_number_comma(piece):
                pieces = split_number(self.sp, piece)
                self.rep_start[i], self.rep_len[i] = size + len(extra_ids), len(pieces)
                extra_ids += self.ids_of(pieces)
                extra_starts += [p.startswith(UNDERLINE) for p in pieces]
        self.has_splits = bool(extra_ids)
        self.rep_ids = np.concatenate([np.arange(size), extra_ids]).astype(np.int32)
        self.rep_word_start = np.concatenate([self.word_start, np.array(extra_starts, bool)])

    def _unknown_text_risks(self) -> tuple[bool, tuple[str, ...]]:
        """When the text behind an <unk> id can change ids or word starts.

        SentencePiece makes <unk> of runs of characters that have no one-character piece. If
        "," and "▁" have one, such a run never ends in "digit," nor starts with "▁"; and
        piece_to_id(run) is <unk> again unless the run is one of the "hazard" pieces made of
        such characters only (e.g. "[CLS]" in a lower-cased vocabulary).
        """
        sp = self.sp
        known = {p for i, p in enumerate(self.pieces) if len(p) == 1 and not (
            sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i) or sp.is_byte(i))}
        hazards = tuple(p for i, p in enumerate(self.pieces)
                        if not sp.is_unknown(i) and all(c not in known for c in p))
        return "," not in known or UNDERLINE not in known, hazards

    # ---- files --------------------------------------------------------------------------------

    def content(self) -> bytes:
        """Everything this backend read (the fingerprint's input)."""
        return self.model_bytes

    def save(self, directory: Path) -> None:
        target = directory / SPIECE_NAME
        if not (target.exists() and target.samefile(self.path)):
            atomic_write(target, self.model_bytes)

    def hf_config(self, specials: dict[str, str]) -> dict[str, Any]:
        """tokenizer_config.json: the pipeline of tokenizer.json as it is (AlbertTokenizer would
        rebuild its own normalizer and pre-tokenizer around the vocabulary), ALBERT's settings
        for `Tokenizer.from_pretrained`, and token types in the model inputs."""
        names = {f"{name}_token": token for name, token in specials.items()}
        if "cls" in specials and "sep" in specials:  # AlbertTokenizer's bos/eos
            names.update(bos_token=specials["cls"], eos_token=specials["sep"])
        names.update(self.layout.hf_names)  # XLNet's own <s> and </s>
        s = self.settings
        return dict(tokenizer_class="PreTrainedTokenizerFast", do_lower_case=s.do_lower_case,
                    remove_space=s.remove_space, keep_accents=s.keep_accents,
                    model_input_names=["input_ids", "token_type_ids", "attention_mask"],
                    **names)

    def hf_tokenizer(self, specials: dict[str, str], template: PairTemplate | None) -> Any:
        """A tokenizers.Tokenizer with these ids (see hf_json)."""
        model = read_model(self.model_bytes, str(self.path))
        hf = sentencepiece_pipeline(model, self.settings, str(self.path))
        add_special_tokens(hf, specials.values())
        if template is not None:
            hf.post_processor = template_processing(template, specials["cls"], specials["sep"])
        return hf

    # ---- vocabulary and encoding ---------------------------------------------------------------

    def special_mask(self) -> np.ndarray:
        """(V,) bool: True for ids that stand for no text (pad, unknown, control and unused
        pieces), wherever the model puts them; masking never draws them as replacements."""
        sp = self.sp
        return np.array([sp.is_control(i) or sp.is_unknown(i) or sp.is_unused(i)
                         for i in range(len(self.pieces))], dtype=bool)

    def token_to_id(self, token: str) -> int | None:
        i = self.sp.piece_to_id(token)
        return i if self.pieces[i] == token else None

    def batch_encode(self, texts: Sequence[str], num_threads: int
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The ids of all texts in one array, their word-start flags, and each text's length."""
        prepared = preprocess_batch(texts, self.settings)
        if self.numpy_out:
            arrays = self.sp.encode(prepared, out_type="numpy", num_threads=num_threads)
        else:  # sentencepiece < 0.2.1
            arrays = [np.asarray(a, dtype=np.int32) for a in
                      self.sp.encode(prepared, out_type=int, num_threads=num_threads)]
        lengths = np.fromiter((a.size for a in arrays), dtype=np.int64, count=len(arrays))
        flat = np.concatenate(arrays) if arrays else np.zeros(0, dtype=np.int32)
        risky = self._risky_texts(flat, lengths, prepared)
        ids, starts, lengths = self._apply_splits(flat, lengths)
        if risky:
            ids, starts, lengths = self._redo(ids, starts, lengths, risky, prepared)
        return ids, starts, lengths

    def _apply_splits(self, flat: np.ndarray, lengths: np.ndarray
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        if not self.has_splits or not (self.rep_len[flat] > 1).any():
            return flat, self.word_start[flat], lengths
        n = self.rep_len[flat]
        ends = np.cumsum(n)
        index = np.repeat(self.rep_start[flat] - (ends - n), n) + np.arange(ends[-1])
        out_bounds = np.concatenate(([0], ends))[np.concatenate(([0], np.cumsum(lengths)))]
        return self.rep_ids[index], self.rep_word_start[index], np.diff(out_bounds)

    def _risky_texts(self, flat: np.ndarray, lengths: np.ndarray, prepared: list[str]
                     ) -> list[int]:
        """Texts with an <unk> whose text may matter (see _unknown_text_risks)."""
        if not (self.unk_always or self.unk_hazards):
            return []
        owners = np.repeat(np.arange(len(lengths)), lengths)[flat == self.sp.unk_id()]
        return [i for i in np.unique(owners).tolist() if self.unk_always or any(
            h in self.sp.normalize(prepared[i]) for h in self.unk_hazards)]

    def _redo(self, ids: np.ndarray, starts: np.ndarray, lengths: np.ndarray,
              risky: list[int], prepared: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Replace the risky texts' ids by the official piece-by-piece algorithm's."""
        bounds = np.cumsum(lengths)[:-1]
        id_parts, start_parts = np.split(ids, bounds), np.split(starts, bounds)
        for i in risky:
            pieces = resplit(self.sp, self.sp.encode(prepared[i], out_type=str))[0]
            id_parts[i] = np.array(self.ids_of(pieces), dtype=np.int32)
            start_parts[i] = np.array([p.startswith(UNDERLINE) for p in pieces], dtype=bool)
        lengths = np.fromiter((p.size for p in id_parts), dtype=np.int64, count=len(id_parts))
        return np.concatenate(id_parts), np.concatenate(start_parts), lengths

    def ids_of(self, pieces: list[str]) -> list[int]:
        return [self.sp.piece_to_id(p) for p in pieces]

    def encode_with_offsets(self, text: str) -> tuple[list[int], list[tuple[int, int]]]:
        normalized, starts, ends = aligned_preprocess(text, self.settings)
        if not normalized:
            return [], []
        result = self.sp.encode(normalized, out_type="offset_mapping")
        pieces, spans = resplit(self.sp, result["pieces"], list(result["offsets"]))
        offsets = [map_span(b, e, normalized, starts, ends, len(text)) for b, e in spans]
        return self.ids_of(pieces), offsets

    def decode(self, ids: list[int], specials: set[int]) -> str:
        """SentencePiece decoding between special tokens, which are written as names."""
        out: list[str] = []
        run: list[int] = []
        for i in ids:
            if i in specials:
                if run:
                    out.append(self.sp.decode(run))
                    run = []
                out.append(self.pieces[i])
            else:
                run.append(i)
        if run:
            out.append(self.sp.decode(run))
        return " ".join(out)


def _supports_numpy(sp: Any) -> bool:
    try:
        return sp.encode([""], out_type="numpy") is not None
    except (ValueError, TypeError):
        return False
