"""The one writer of a tessera model directory's files, with numpy alone
(docs/model-format.md), for every converter: write_model() writes config.json,
model.safetensors, the vocabulary files and the SentencePiece models with
config.json's `tokenizer` (plan_tokenizer; checked with python3-sentencepiece,
imported only then).

safetensors: an 8-byte little-endian header length, the JSON header (tensors
in name order, then "__metadata__"; compact, space-padded to a multiple of 8
bytes so that the data is aligned), then each tensor's little-endian bytes in
that order.
"""

import filecmp
import glob
import json
import os
import shutil
import struct
import sys

import numpy as np

from .errors import ConvertError

F16_MAX = 65504.0


def tensor_bytes(values, dtype):
    """The little-endian bytes of values as dtype "F32", "F16", "BF16" (rounded to
    nearest even) or "I8" (values already integers). ValueError for a value beyond
    F16's range."""
    if dtype == "I8":
        return np.ascontiguousarray(values, dtype=np.int8).tobytes()
    values = np.ascontiguousarray(values, dtype=np.float32)
    if dtype == "F32":
        return values.astype("<f4").tobytes()
    if dtype == "F16":
        if np.any(np.abs(values) > F16_MAX):
            raise ValueError("values beyond F16's range")
        return values.astype("<f2").tobytes()
    if dtype == "BF16":
        bits = values.view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype("<u2").tobytes()
    raise ValueError("unknown dtype %r" % dtype)


def write_safetensors(path, tensors, metadata, dtype="F32", dtypes=None):
    """tensors: name -> array; each stored as dtypes[name] where given, else dtype;
    metadata: str -> str. ConvertError names a tensor too large for F16."""
    dtypes = dtypes or {}
    header, blobs, offset = {}, [], 0
    for name in sorted(tensors):
        kind = dtypes.get(name, dtype)
        try:
            data = tensor_bytes(tensors[name], kind)
        except ValueError as e:
            raise ConvertError("tensor '%s' has %s; convert with f32" % (name, e))
        header[name] = {"dtype": kind, "shape": list(np.shape(tensors[name])),
                        "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    raw = json.dumps(header, separators=(",", ":")).encode("utf-8")
    raw += b" " * (-len(raw) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(raw)))
        f.write(raw)
        for data in blobs:
            f.write(data)


def quantize_int8(weight):
    """Symmetric per-row int8 of a [out, in] weight (docs/model-format.md): (q, scale)
    with scale = max|row| / 127 (1 for an all-zero row), q = round(w / scale), ties
    to even, within [-127, 127]; float32 throughout."""
    weight = np.asarray(weight, dtype=np.float32)
    scale = (np.abs(weight).max(axis=1) / np.float32(127.0)).astype(np.float32)
    scale = np.where(scale > 0, scale, np.float32(1.0)).astype(np.float32)
    q = np.clip(np.round(weight / scale[:, None]), -127, 127).astype(np.int8)
    return q, scale


def write_vocab(path, pieces):
    """One piece per line, line number = id (bytes lines written as they are)."""
    with open(path, "wb") as f:
        for piece in pieces:
            f.write((piece if isinstance(piece, bytes) else piece.encode("utf-8")) + b"\n")


def write_model(out_dir, config, tensors, metadata, dtype="F32", dtypes=None,
                vocabs=(None, None), tokenizer=None):
    """A conversion's files in out_dir (created if needed): config.json (config, with
    the tokenizer's key when there is one), model.safetensors (write_safetensors),
    vocab.src.txt / vocab.tgt.txt (vocabs: each side's pieces in id order, or None:
    no file, a stale one removed) and the tokenizer's models (a Tokenizer, or None).
    The tensors are written first: a refusal there leaves no config.json behind."""
    if tokenizer:
        config["tokenizer"] = tokenizer.key
    os.makedirs(out_dir, exist_ok=True)
    write_safetensors(os.path.join(out_dir, "model.safetensors"), tensors, metadata, dtype,
                      dtypes)
    with open(os.path.join(out_dir, "config.json"), "w", encoding="utf-8") as f:
        json.dump(config, f, indent=2)
        f.write("\n")
    for side, pieces in zip(("src", "tgt"), vocabs):
        path = os.path.join(out_dir, "vocab.%s.txt" % side)
        if pieces is not None:
            write_vocab(path, pieces)
        elif os.path.exists(path):
            os.remove(path)
    if tokenizer:
        tokenizer.write(out_dir)


# ---- SentencePiece models: config.json's `tokenizer` (docs/model-format.md §1, §3) ----

SPM_NAMES = ("source.spm", "target.spm")
# One file for both sides (Marian's vocab.spm, or --source-spm and --target-spm
# naming the same model) is written once, under this name.
SHARED_SPM_NAME = "shared.spm"
# Fewer of an spm's own pieces than this in the vocabulary it feeds: the wrong spm.
SPM_AGREEMENT = 0.9
VOCAB_SIDES = {"source": "src", "target": "tgt"}


class TokenizerError(ConvertError):
    """A SentencePiece model tessera-convert refuses, as one line naming the file."""


def warn(message):
    print("tessera-convert: warning: %s" % message, file=sys.stderr)


def carried_spm(directory):
    """(source, target): the SentencePiece models a model directory carries, None
    for a side it has none for: source.spm and target.spm (OPUS-MT, MarianMT),
    else the directory's one *.spm for both sides (Marian's vocab.spm)."""
    found = [os.path.join(directory, name) for name in SPM_NAMES]
    found = [path if os.path.isfile(path) else None for path in found]
    if any(found):
        return found[0], found[1]
    single = sorted(p for p in glob.glob(os.path.join(glob.escape(directory), "*.spm"))
                    if os.path.isfile(p))
    if len(single) == 1:
        return single[0], single[0]
    return None, None


def load_spm(path, what):
    """path's SentencePieceProcessor (python3-sentencepiece), or None when that
    module is not installed. TokenizerError when path is not a SentencePiece
    model; what names where the path came from (a flag, a file of the input)."""
    try:
        import sentencepiece
    except ImportError:
        return None
    if not os.path.isfile(path):
        raise TokenizerError("%s %s: no such file" % (what, path))
    try:
        return sentencepiece.SentencePieceProcessor(model_file=path)
    except (RuntimeError, OSError):
        raise TokenizerError("%s %s: not a SentencePiece model" % (what, path))


def spm_pieces(path, what):
    """The pieces of a SentencePiece model in its id order (a Marian vocabulary
    that is an .spm file: Marian's ids are the model's)."""
    processor = load_spm(path, what)
    if processor is None:
        raise TokenizerError("%s %s is a SentencePiece model: reading it needs "
                             "python3-sentencepiece" % (what, path))
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())]


def check_spm_agreement(processor, pieces, path, side):
    """Warns (one line) when fewer than SPM_AGREEMENT of the model's own pieces
    (its control, unknown and unused ones aside) are vocabulary entries: the
    model is not the one the vocabulary was built from."""
    known = set(pieces)
    own = [processor.id_to_piece(i) for i in range(processor.get_piece_size())
           if not (processor.is_control(i) or processor.is_unknown(i) or processor.is_unused(i))]
    found = sum(piece in known for piece in own)
    if own and found < SPM_AGREEMENT * len(own):
        warn("%s: only %d of its %d pieces are in the %s vocabulary (%.0f%%): is it this "
             "model's SentencePiece model?" % (path, found, len(own), side, 100.0 * found / len(own)))


class Tokenizer:
    """What a conversion writes for text: config.json's `tokenizer` (key) and
    the SentencePiece models copied beside it (copies: (path, name) pairs)."""

    def __init__(self, key, copies):
        self.key = key
        self.copies = copies

    def write(self, out_dir):
        for path, name in self.copies:
            shutil.copyfile(path, os.path.join(out_dir, name))

    def names(self):
        return [name for _, name in self.copies]


class SpmFiles:
    """The two SentencePiece models of a conversion, checked: paths, where each
    came from (a flag, or the input), their processors (None without
    python3-sentencepiece) and whether they are one model."""

    def __init__(self, paths, labels, processors, shared):
        self.paths = paths
        self.labels = labels
        self.processors = processors
        self.shared = shared


def resolve_spm(flags, carried, note):
    """The SpmFiles of a conversion, or None (no text support); called before
    the conversion says anything, so that a refusal is its one line.

    flags: (--source-spm, --target-spm), None where not given; a flag takes the
    place of carried, the (source, target) models the input holds
    (carried_spm). Both sides are needed: a flag without the other side is
    refused, a carried model without one is noted and left out. Each file is
    loaded with python3-sentencepiece when it is installed (else noted):
    TokenizerError names one that is not a SentencePiece model."""
    source = flags[0] or carried[0]
    target = flags[1] or carried[1]
    if not source and not target:
        return None
    if not (source and target):
        if flags[0] or flags[1]:
            raise TokenizerError("%s %s needs %s too: text is tokenized on both sides"
                                 % (("--source-spm", source, "--target-spm") if source
                                    else ("--target-spm", target, "--source-spm")))
        note("%s has no %s SentencePiece model beside it: no tokenizer written (give "
             "--source-spm and --target-spm)" % (os.path.basename(source or target),
                                                 "target" if source else "source"))
        return None
    labels = ("--source-spm" if flags[0] else "the input's",
              "--target-spm" if flags[1] else "the input's")
    processors = [load_spm(source, labels[0])]
    shared = os.path.realpath(source) == os.path.realpath(target) or (
        os.path.isfile(target) and filecmp.cmp(source, target, shallow=False))
    processors.append(processors[0] if shared else load_spm(target, labels[1]))
    if processors[0] is None:
        note("python3-sentencepiece is not installed: %s copied without being checked"
             % " and ".join(sorted({source, target})))
    return SpmFiles((source, target), labels, processors, shared)


def plan_tokenizer(files, vocabs):
    """The Tokenizer that writes files (SpmFiles, or None: no text support),
    checked before anything is written.

    vocabs: (source pieces, target pieces) in id order, None for a side whose
    vocabulary file the conversion does not write: pieces map to ids through
    them (never through the models' own ids). A model fewer than
    SPM_AGREEMENT of whose pieces the vocabulary holds gets a warning.
    Identical files are copied once, as SHARED_SPM_NAME."""
    if files is None:
        return None
    for side, path, pieces, label in zip(("source", "target"), files.paths, vocabs, files.labels):
        if pieces is None:
            raise TokenizerError("%s %s: the %s vocabulary (vocab.%s.txt), through which pieces "
                                 "map to ids, is not written by this conversion"
                                 % (label, path, side, VOCAB_SIDES[side]))
    source, target = files.paths
    if files.shared and files.processors[0]:
        check_spm_agreement(files.processors[0], list(vocabs[0]) + list(vocabs[1]), source,
                            "source or target")
    elif files.processors[0]:
        check_spm_agreement(files.processors[0], vocabs[0], source, "source")
        check_spm_agreement(files.processors[1], vocabs[1], target, "target")
    if files.shared:
        names, copies = (SHARED_SPM_NAME, SHARED_SPM_NAME), [(source, SHARED_SPM_NAME)]
    else:
        names, copies = SPM_NAMES, [(source, SPM_NAMES[0]), (target, SPM_NAMES[1])]
    key = {"type": "sentencepiece", "source": names[0], "target": names[1]}
    return Tokenizer(key, copies)
