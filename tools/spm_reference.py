#!/usr/bin/python3
"""The reference of tessera's text rules (docs/model-format.md §3), written from
that contract with Debian's python3-sentencepiece.

Tokenize (a side's text to pieces and ids): a leading target-language tag, the
text starting with `>>`, 1 to 32 of A-Z a-z 0-9 _ -, then `<<`, is one token
when the tag is a line of the vocabulary, and the rest of the text is encoded
alone; else the whole text is. The SentencePiece model encodes the text to
pieces (`encode(text, out_type=str)`: its own normalization, no sampling, no
bos or eos); each piece is looked up in the model directory's vocabulary (line
number = id), an absent one giving unk_id. The pieces written are the
SentencePiece model's own (an unknown character's piece is the character, its
id unk_id).

Detokenize (ids to text): bos_id, eos_id and pad_id are dropped, every other id
becomes its vocabulary line, and `decode_pieces` makes the text. (sentencepiece
0.1.97 writes `<unk>` as " \u2047 ", a control piece as nothing, and any other
piece it does not know, the tag `>>deu<<` say, as the piece itself, U+2581
included.) With --pieces the input's pieces are first mapped to ids through
the vocabulary, an absent one giving unk_id (§2: tokens map through the
vocabulary files), so the same ids are dropped and an unknown piece is <unk>.

    spm_reference.py tokenize   --spm F --vocab V --unk-id N [--ids]
    spm_reference.py detokenize --spm F --vocab V --bos-id B --eos-id E --pad-id P
                                [--unk-id N] [--pieces]
    spm_reference.py tokenize|detokenize -m MODEL_DIR [--side source|target] [...]

Standard input to standard output, one line out per line in, as `tessera
tokenize` and `tessera detokenize` write them: pieces or ids separated by
single spaces; an empty line (or one whose text encodes to no piece) gives an
empty line. Lines end at "\\n" only; one CR before it is ignored (§2: a
trailing CR is ignored), a CR elsewhere is text. A line that is not valid
UTF-8, or holds a NUL byte, or (detokenize) a token that is not an id of the
vocabulary, stops the run after every earlier line's output with one line on
standard error naming its number (from 1), exit status 1; so does a
SentencePiece file that cannot be loaded, naming it. With -m the
SentencePiece file, vocabulary and special ids are read from the model
directory's config.json (`tokenizer`, the §1 defaults for absent ids).
"""

import argparse
import json
import os
import re
import sys

PROG = "spm_reference.py"
TAG = re.compile(r">>[A-Za-z0-9_-]{1,32}<<")
SIDES = {"source": "vocab.src.txt", "target": "vocab.tgt.txt"}
DEFAULT_IDS = {"bos_id": 2, "eos_id": 3, "pad_id": 1, "unk_id": 0}


class InputError(Exception):
    """A bad input line: the message names it."""


def load_vocab(path):
    """The vocabulary file's lines (id = line number) and piece -> first id.
    Lines end at "\\n" only: a piece may hold any other character."""
    with open(path, "rb") as f:
        data = f.read().decode("utf-8")
    lines = data.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    index = {}
    for i, piece in enumerate(lines):
        index.setdefault(piece, i)
    return lines, index


def load_spm(path):
    """The SentencePiece model of the file; InputError naming it when it
    cannot be read or is not a model."""
    import sentencepiece
    try:
        return sentencepiece.SentencePieceProcessor(model_file=path)
    except (OSError, RuntimeError) as e:
        raise InputError("%s: not a SentencePiece model: %s" % (path, (str(e).splitlines() or ["?"])[0]))


def split_tag(index, text):
    """([tag], the rest) when text starts with a tag that is a vocabulary
    line, else ([], text)."""
    tag = TAG.match(text)
    if tag and tag.group(0) in index:
        return [tag.group(0)], text[tag.end():]
    return [], text


def tokenize(sp, vocab, text, unk_id):
    """text (str) -> (pieces, ids). vocab: (lines, piece -> id) of load_vocab."""
    _, index = vocab
    tag, rest = split_tag(index, text)
    pieces = tag + sp.encode(rest, out_type=str)
    return pieces, [index.get(piece, unk_id) for piece in pieces]


def tokenize_lines(sp, vocab, texts, unk_id, threads=2):
    """tokenize of each of texts, the SentencePiece model encoding them in
    one batch on threads threads."""
    _, index = vocab
    split = [split_tag(index, text) for text in texts]
    encoded = sp.encode([rest for _, rest in split], out_type=str, num_threads=threads) if texts else []
    out = []
    for (tag, _), pieces in zip(split, encoded):
        pieces = tag + pieces
        out.append((pieces, [index.get(piece, unk_id) for piece in pieces]))
    return out


def detokenize(sp, vocab, ids, special_ids):
    """ids -> text: the ids of special_ids (bos, eos, pad) dropped, the others'
    vocabulary lines decoded by the SentencePiece model."""
    lines, _ = vocab
    pieces = [lines[i] for i in ids if i not in special_ids]
    # §3: a NUL the pieces decode to (byte piece <0x00>) is a space.
    return sp.decode_pieces(pieces).replace("\0", " ")


def as_line(text):
    """§3: the command writes text as one line, TAB, CR and LF as spaces."""
    return text.replace("\t", " ").replace("\r", " ").replace("\n", " ")


def read_lines(stream):
    """Yields (number, bytes) for each "\\n"-ended line (and a last one
    without), one trailing CR taken off (docs/model-format.md §2: a trailing
    CR is ignored)."""
    data = stream.read()
    lines = data.split(b"\n")
    if lines[-1] == b"":
        lines.pop()
    for number, line in enumerate(lines, 1):
        yield number, line[:-1] if line.endswith(b"\r") else line


def text_of(number, line):
    if b"\0" in line:
        raise InputError("line %d: a NUL byte in the text" % number)
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError("line %d: invalid UTF-8 at byte %d" % (number, e.start + 1))


def ids_of(number, line, vocab, unk_id, pieces):
    text = text_of(number, line)
    lines, index = vocab
    if pieces:
        return [index.get(piece, unk_id) for piece in text.split(" ") if piece != ""]
    ids = []
    for token in text.split(" "):
        if token == "":
            continue
        if not re.fullmatch(r"[0-9]+", token) or int(token) >= len(lines):
            raise InputError("line %d: '%s' is not an id of the vocabulary (0..%d)"
                             % (number, token, len(lines) - 1))
        ids.append(int(token))
    return ids


def from_model_dir(args):
    """Fills --spm, --vocab and the special ids from MODEL_DIR/config.json."""
    with open(os.path.join(args.model, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    tokenizer = config.get("tokenizer")
    if not isinstance(tokenizer, dict) or tokenizer.get("type") != "sentencepiece":
        raise InputError("%s/config.json: no sentencepiece tokenizer" % args.model)
    if args.side not in tokenizer:
        raise InputError("%s/config.json: the tokenizer has no %s" % (args.model, args.side))
    args.spm = args.spm or os.path.join(args.model, tokenizer[args.side])
    args.vocab = args.vocab or os.path.join(args.model, SIDES[args.side])
    for key, default in DEFAULT_IDS.items():
        if getattr(args, key) is None:
            setattr(args, key, config.get(key, default))
    if config.get("decoder_start") == "zeros":
        args.bos_id = None  # §3: a placeholder then, not a token to drop


def run(args, stdin, stdout):
    sp = load_spm(args.spm)
    vocab = load_vocab(args.vocab)
    special = {i for i in (args.bos_id, args.eos_id, args.pad_id) if i is not None}
    for number, line in read_lines(stdin):
        if args.command == "tokenize":
            pieces, ids = tokenize(sp, vocab, text_of(number, line), args.unk_id)
            out = " ".join(str(i) for i in ids) if args.ids else " ".join(pieces)
        else:
            out = as_line(detokenize(sp, vocab, ids_of(number, line, vocab, args.unk_id,
                                                        args.pieces), special))
        stdout.write(out.encode("utf-8") + b"\n")


def main(argv):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=("tokenize", "detokenize"))
    parser.add_argument("-m", "--model", help="a model directory: the rest from its config.json")
    parser.add_argument("--side", choices=tuple(SIDES), help="with -m: default source for "
                        "tokenize, target for detokenize")
    parser.add_argument("--spm", help="the SentencePiece model file")
    parser.add_argument("--vocab", help="the vocabulary: one piece per line, line number = id")
    for key in DEFAULT_IDS:
        parser.add_argument("--" + key.replace("_", "-"), dest=key, type=int)
    parser.add_argument("--ids", action="store_true", help="tokenize: write ids, not pieces")
    parser.add_argument("--pieces", action="store_true", help="detokenize: read pieces, not ids")
    args = parser.parse_args(argv)
    try:
        if args.model:
            args.side = args.side or ("source" if args.command == "tokenize" else "target")
            from_model_dir(args)
        if not args.spm or not args.vocab:
            parser.error("--spm and --vocab are needed (or -m)")
        if args.unk_id is None and (args.command == "tokenize" or args.pieces):
            parser.error("--unk-id is needed (or -m)")
        run(args, sys.stdin.buffer, sys.stdout.buffer)
    except InputError as e:
        sys.stdout.flush()
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
