"""The few fields of a SentencePiece model file that tokenizer.json needs, read without protobuf
(which the `sentencepiece` wheel does not require): pieces with scores and types, the model
type, byte fallback and the normalizer's settings and precompiled character map.

Field numbers are those of sentencepiece_model.proto (ModelProto, TrainerSpec, NormalizerSpec).
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from dataclasses import dataclass, field

from litebert.tokenization.base import TokenizerError

# ModelProto.SentencePiece.Type
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6
# TrainerSpec.ModelType
MODEL_TYPES = {1: "unigram", 2: "bpe", 3: "word", 4: "char"}


@dataclass
class Piece:
    text: str
    score: float = 0.0
    type: int = NORMAL


@dataclass
class SentencePieceModel:
    pieces: list[Piece] = field(default_factory=list)
    model_type: str = "unigram"
    byte_fallback: bool = False
    treat_whitespace_as_suffix: bool = False
    charsmap: bytes = b""  # NormalizerSpec.precompiled_charsmap
    add_dummy_prefix: bool = True
    remove_extra_whitespaces: bool = True
    escape_whitespaces: bool = True


def read_model(data: bytes, source: str) -> SentencePieceModel:
    """The fields above of a serialized ModelProto; TokenizerError naming `source` if broken."""
    model = SentencePieceModel()
    try:
        for number, value in _fields(data):
            if number == 1 and isinstance(value, bytes):
                model.pieces.append(_piece(value))
            elif number == 2 and isinstance(value, bytes):
                _trainer_spec(value, model)
            elif number == 3 and isinstance(value, bytes):
                _normalizer_spec(value, model)
    except (IndexError, UnicodeDecodeError, struct.error, ValueError) as err:
        raise TokenizerError(f"{source}: not a SentencePiece model ({err})") from None
    return model


def _piece(data: bytes) -> Piece:
    piece = Piece("")
    for number, value in _fields(data):
        if number == 1 and isinstance(value, bytes):
            piece.text = value.decode("utf-8")
        elif number == 2 and isinstance(value, bytes):
            piece.score = struct.unpack("<f", value)[0]
        elif number == 3 and isinstance(value, int):
            piece.type = value
    return piece


def _trainer_spec(data: bytes, model: SentencePieceModel) -> None:
    for number, value in _fields(data):
        if number == 3 and isinstance(value, int):
            model.model_type = MODEL_TYPES.get(value, str(value))
        elif number == 35 and isinstance(value, int):
            model.byte_fallback = bool(value)
        elif number == 24 and isinstance(value, int):
            model.treat_whitespace_as_suffix = bool(value)


def _normalizer_spec(data: bytes, model: SentencePieceModel) -> None:
    for number, value in _fields(data):
        if number == 2 and isinstance(value, bytes):
            model.charsmap = value
        elif number in (3, 4, 5) and isinstance(value, int):
            name = {3: "add_dummy_prefix", 4: "remove_extra_whitespaces",
                    5: "escape_whitespaces"}[number]
            setattr(model, name, bool(value))


def _fields(data: bytes) -> Iterator[tuple[int, int | bytes]]:
    """(field number, value) of one message: varints as int, everything else as bytes."""
    pos = 0
    while pos < len(data):
        tag, pos = _varint(data, pos)
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            yield number, value
        elif wire == 2:
            size, pos = _varint(data, pos)
            if pos + size > len(data):
                raise ValueError("truncated field")
            yield number, data[pos:pos + size]
            pos += size
        elif wire in (1, 5):
            size = 8 if wire == 1 else 4
            yield number, data[pos:pos + size]
            pos += size
        else:
            raise ValueError(f"unsupported wire type {wire}")


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = data[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, pos
        shift += 7
