#!/bin/sh
# make check: `tessera tokenize` and `tessera detokenize` (docs/model-format.md
# §3) give, byte for byte, what tools/spm_reference.py (python3-sentencepiece)
# gives, on tools/make-text-corpus's 2400 lines (every script, emoji, combining
# marks, NFKC forms, runs of spaces and tabs, empty lines, four lines of 100 KB).
#
# Two SentencePiece models are trained here from make-text-corpus --train (in
# well under a second): "unigram" (2000 pieces, no byte fallback, coverage
# 0.9995: unknown characters give <unk>) and "bpe" (1000 pieces, byte
# fallback, coverage 0.98, nmt_nfkc_cf, extra whitespace kept, digits split).
# Each gets a model directory (d_model 8, one layer a side, random weights):
# vocabularies in Marian's order (</s> 0, <unk> 1, then the spm's other pieces:
# <s> 2, <pad> 3, ...) with >>deu<< at 4 in the source one, so that every
# other piece's id differs by side; config eos 0, unk 1, bos 2, pad 3. The
# unigram directory names source.spm and target.spm (copies), the bpe one a
# single shared bpe.spm; "mixed" has the unigram for the source and the bpe
# for the target, to catch a side reading the other's model.
#
# Checked, with tests/tessera-test: tokenize (pieces and --ids, source and
# target, each command's default side once) and detokenize (of the reference's
# ids, --pieces of its pieces, and every vocabulary id in seeded random lines,
# specials and runs of spaces included) equal the reference; so do lines with
# the >>deu<< tag, an unknown tag, near-tags and empty lines, no input, a last
# line without "\n", and CRLF lines (a trailing CR is ignored, §2). Invalid
# UTF-8 (overlong, surrogate, truncated, stray bytes, beyond U+10FFFF) or a
# NUL at line K, and a bad id at line K, give the reference's K-1 lines, one
# line on standard error naming line K, exit 1; a missing, random, truncated
# or empty .spm fails with one line naming the file and no output. A mismatch
# prints its line, the input line, what the reference gives and what tessera
# gives. About 10 s on 2 cores.
#
# Needs /usr/bin/python3 with numpy and sentencepiece (Debian:
# python3-sentencepiece), and a tessera built with SentencePiece, else SKIP.
python_modules="numpy sentencepiece"
. "$(dirname "$0")/convert-lib.sh" # srcdir, build, python, work, fail
tessera="${TESSERA_TEST_RUNNER:-} $build/tests/tessera-test"

# A tessera configured without libsentencepiece reads ids and pieces only.
if $tessera info 2>/dev/null | grep -q '^text: not built in'; then
    echo "SKIP: this tessera was built without SentencePiece: $($tessera info | grep '^text: ')"
    exit 77
fi

# The models, the corpus, the reference's outputs and the bad inputs, in one
# run of Python (see the list of files at its end).
"$python" - "$srcdir" "$work" <<'EOF' || { echo "FAIL: could not make the models or the reference's outputs"; exit 1; }
import argparse, io, json, os, random, shutil, subprocess, sys
import numpy as np
import sentencepiece

srcdir, work = sys.argv[1:]
sys.path.insert(0, os.path.join(srcdir, "tools"))
from converters import files as model_files
import spm_reference as ref

EOS, UNK, BOS, PAD, TAG = 0, 1, 2, 3, ">>deu<<"
SPECIAL = {BOS, EOS, PAD}


def path(*names):
    return os.path.join(work, *names)


def corpus(*flags):
    return subprocess.run([sys.executable, os.path.join(srcdir, "tools", "make-text-corpus")] + list(flags),
                          check=True, stdout=subprocess.PIPE).stdout


with open(path("train.txt"), "wb") as f:
    f.write(corpus("--train"))
with open(path("corpus.txt"), "wb") as f:
    f.write(corpus())
lines = open(path("corpus.txt"), "rb").read().decode("utf-8").split("\n")[:-1]
assert len(lines) >= 2000

# (train() closes its logstream.)
common = dict(input=path("train.txt"), pad_id=PAD, num_threads=2)
sentencepiece.SentencePieceTrainer.train(
    model_prefix=path("unigram"), model_type="unigram", vocab_size=2000, byte_fallback=False,
    character_coverage=0.9995, logstream=open(os.devnull, "w"), **common)
sentencepiece.SentencePieceTrainer.train(
    model_prefix=path("bpe"), model_type="bpe", vocab_size=1000, byte_fallback=True,
    character_coverage=0.98, normalization_rule_name="nmt_nfkc_cf", remove_extra_whitespaces=False,
    split_digits=True, logstream=open(os.devnull, "w"), **common)
spms = {name: ref.load_spm(path(name + ".model")) for name in ("unigram", "bpe")}


def vocabularies(sp):
    """Marian's order: </s>, <unk>, then the spm's other pieces; the source's
    with the tag after <s> and <pad>."""
    pieces = [sp.id_to_piece(i) for i in range(sp.get_piece_size())]
    assert pieces[:4] == ["<unk>", "<s>", "</s>", "<pad>"], pieces[:4]
    target = ["</s>", "<unk>", "<s>", "<pad>"] + pieces[4:]
    return target[:4] + [TAG] + target[4:], target


def weights(src_vocab, tgt_vocab, d=8, ff=16, seed=36):
    rng = np.random.default_rng(seed)
    shapes = {"src_tok_emb.embedding.weight": [src_vocab, d], "tgt_tok_emb.embedding.weight": [tgt_vocab, d],
              "generator.weight": [tgt_vocab, d], "generator.bias": [tgt_vocab]}
    def attention(prefix):
        shapes.update({prefix + ".in_proj_weight": [3 * d, d], prefix + ".in_proj_bias": [3 * d],
                       prefix + ".out_proj.weight": [d, d], prefix + ".out_proj.bias": [d]})
    for stack, norms in (("encoder", 2), ("decoder", 3)):
        layer = "transformer.%s.layers.0." % stack
        attention(layer + "self_attn")
        if stack == "decoder":
            attention(layer + "multihead_attn")
        shapes.update({layer + "linear1.weight": [ff, d], layer + "linear1.bias": [ff],
                       layer + "linear2.weight": [d, ff], layer + "linear2.bias": [d]})
        for k in range(1, norms + 1):
            shapes.update({layer + "norm%d.weight" % k: [d], layer + "norm%d.bias" % k: [d]})
    return {name: rng.normal(0, 0.3, size=shape).astype(np.float32) for name, shape in sorted(shapes.items())}


def model_dir(name, source, target, files):
    """source, target: spm names; files: (source file, target file) names."""
    directory = path(name)
    os.makedirs(directory)
    src_vocab, _ = vocabularies(spms[source])
    _, tgt_vocab = vocabularies(spms[target])
    model_files.write_vocab(os.path.join(directory, "vocab.src.txt"), src_vocab)
    model_files.write_vocab(os.path.join(directory, "vocab.tgt.txt"), tgt_vocab)
    for spm_name, file_name in ((source, files[0]), (target, files[1])):
        shutil.copyfile(path(spm_name + ".model"), os.path.join(directory, file_name))
    config = {"d_model": 8, "n_heads": 2, "d_ff": 16, "n_encoder_layers": 1, "n_decoder_layers": 1,
              "src_vocab_size": len(src_vocab), "tgt_vocab_size": len(tgt_vocab),
              "bos_id": BOS, "eos_id": EOS, "pad_id": PAD, "unk_id": UNK,
              "tokenizer": {"type": "sentencepiece", "source": files[0], "target": files[1]}}
    with open(os.path.join(directory, "config.json"), "w") as f:
        json.dump(config, f, indent=2)
    model_files.write_safetensors(os.path.join(directory, "model.safetensors"),
                                  weights(len(src_vocab), len(tgt_vocab)), {})


model_dir("unigram", "unigram", "unigram", ("source.spm", "target.spm"))
model_dir("bpe", "bpe", "bpe", ("bpe.spm", "bpe.spm"))
model_dir("mixed", "unigram", "bpe", ("source.spm", "target.spm"))
os.makedirs(path("want"))
os.makedirs(path("in"))


def write_lines(file_name, rows):
    with open(file_name, "wb") as f:
        for row in rows:
            f.write(row.encode("utf-8") + b"\n")


def vocab_of(name, side):
    return ref.load_vocab(path(name, ref.SIDES[side]))


# The reference's outputs of the corpus: pieces, ids, and the text of the ids.
outputs = {}
for name in ("unigram", "bpe"):
    sp = spms[name]
    for side in ("source", "target"):
        vocab = vocab_of(name, side)
        tokens = ref.tokenize_lines(sp, vocab, lines, UNK)
        texts = [ref.detokenize(sp, vocab, ids, SPECIAL) for _, ids in tokens]
        outputs[name, side] = tokens
        stem = path("want", "%s.%s." % (name, side))
        write_lines(stem + "pieces", [" ".join(pieces) for pieces, _ in tokens])
        write_lines(stem + "ids", [" ".join(map(str, ids)) for _, ids in tokens])
        write_lines(stem + "text", texts)
        # The reference itself: the batch gives what one line at a time
        # gives, and ids through the target vocabulary lose only unknown
        # pieces.
        for text, (pieces, ids) in zip(lines[::50], tokens[::50]):
            assert (pieces, ids) == ref.tokenize(sp, vocab, text, UNK), (name, side, text)
        for text, (pieces, ids), back in zip(lines, tokens, texts):
            if side == "target" and UNK not in ids:
                assert back == sp.decode_pieces(pieces), (name, side, text)
        # Every vocabulary id, in seeded random order, 1 to 12 a line; a line
        # of specials alone; runs of spaces around and between ids. The byte
        # piece <0x0A> decodes to "\n", written as a space (§3: one line out
        # per line in); it comes last.
        rng = random.Random(36)
        newline = [i for i, piece in enumerate(vocab[0]) if piece == "<0x0A>"]
        ids = [i for i in range(len(vocab[0])) if i not in newline]
        rng.shuffle(ids)
        rows = []
        while ids:
            rows.append(ids[:rng.randint(1, 12)])
            del ids[:len(rows[-1])]
        a, b, c, d, e = [i for i, piece in enumerate(vocab[0])
                         if i not in SPECIAL and not sp.is_byte(sp.piece_to_id(piece))][5:10]
        rows += [[EOS, BOS, PAD], [], [BOS, a, b, EOS]] + [[a] + newline + [b]] * bool(newline)
        text_rows = [" ".join(map(str, row)) for row in rows] + ["  %d   %d %d " % (c, d, e)]
        rows.append([c, d, e])
        write_lines(path("in", "%s.%s.allids" % (name, side)), text_rows)
        write_lines(stem + "alltext",
                    [ref.as_line(ref.detokenize(sp, vocab, row, SPECIAL)) for row in rows])

unigram_source = outputs["unigram", "source"]
assert any(UNK in ids for _, ids in unigram_source), "the unigram model has no unknown character"
assert not any(UNK in ids for _, ids in outputs["bpe", "target"]), "bpe's byte fallback gave <unk>"
assert any(p.startswith("<0x") for pieces, _ in outputs["bpe", "target"] for p in pieces), "no byte piece"
for text, (pieces, ids), (tpieces, _) in zip(lines, unigram_source, outputs["unigram", "target"]):
    tagged = text.startswith(TAG)
    assert (pieces[:1] == [TAG] and ids[0] == 4) == tagged, text
    assert tpieces[:1] != [TAG], text

# Tags and empty lines on their own (the corpus has them too, among 2400):
# >>deu<< is a line of the source vocabulary only, >>fra<< of neither.
tags = [">>deu<< Hallo Welt", ">>deu<<", ">>deu<<   ", "", ">>deu<<>>deu<<", ">>fra<< Bonjour", ">>fra<<",
        " >>deu<<", "x >>deu<<", ">>deu<", ">>" + "d" * 33 + "<<", "", ""]
write_lines(path("in", "tags"), tags)
for name in ("unigram", "bpe"):
    for side in ("source", "target"):
        vocab = vocab_of(name, side)
        pieces, rows = zip(*(ref.tokenize(spms[name], vocab, text, UNK) for text in tags))
        tagged = [row[:1] == [4] and p[:1] == [TAG] for p, row in zip(pieces, rows)]
        assert tagged == [side == "source"] * 3 + [False, side == "source"] + [False] * 8, (name, side)
        assert rows[1] == [4] if side == "source" else TAG not in pieces[1]
        assert rows[3] == rows[11] == rows[12] == []
        write_lines(path("want", "tags.%s.%s" % (name, side)), [" ".join(map(str, row)) for row in rows])

# CRLF: one CR before "\n" is no text (§2), a CR elsewhere is (bpe keeps
# whitespace, so a CR given to it would show): the corpus's first 300 lines
# with CRLF, then CR runs.
crlf = b"".join(line.encode("utf-8") + b"\r\n" for line in lines[:300]) + b"ab\r\r\n\r\na\rb\r\nend\r"
with open(path("in", "crlf"), "wb") as f:
    f.write(crlf)
args = argparse.Namespace(command="tokenize", spm=path("bpe", "bpe.spm"), vocab=path("bpe", "vocab.src.txt"),
                          ids=True, unk_id=UNK, bos_id=None, eos_id=None, pad_id=None)
out = io.BytesIO()
ref.run(args, io.BytesIO(crlf), out)
with open(path("want", "crlf"), "wb") as f:
    f.write(out.getvalue())
assert out.getvalue().split(b"\n")[:300] == open(path("want", "bpe.source.ids"), "rb").read().split(b"\n")[:300]

# Bad lines at line K: the corpus's first K-1 lines, the bad line, then 3 more.
# (case name, K, the bad line's bytes, the command that reads it)
bad = [
    ("overlong-2", 5, b"a \xc0\xaf b", "tokenize"),
    ("overlong-3", 17, b"\xe0\x80\xaf", "tokenize"),
    ("overlong-4", 31, b"x\xf0\x80\x80\xafy", "tokenize"),
    ("surrogate-high", 44, b"\xed\xa0\x80", "tokenize"),
    ("surrogate-low", 52, b"word \xed\xbf\xbf", "tokenize"),
    ("truncated-inner", 63, b"caf\xc3 au lait", "tokenize"),
    ("truncated-end", 70, b"end \xe2\x82", "tokenize"),
    ("truncated-4", 71, b"\xf0\x9f\x98", "tokenize"),
    ("continuation", 2, b"\x80abc", "tokenize"),
    ("byte-ff", 1, b"\xff", "tokenize"),
    ("beyond-10ffff", 90, b"\xf4\x90\x80\x80", "tokenize"),
    ("nul", 9, b"before\x00after", "tokenize"),
    ("nul-alone", 100, b"\x00", "tokenize"),
    ("id-range", 7, b"5 999999", "detokenize"),
    ("id-word", 12, b"5 abc 6", "detokenize"),
    ("id-negative", 3, b"-1", "detokenize"),
]
raw = open(path("corpus.txt"), "rb").read().split(b"\n")[:-1]
ids_raw = open(path("want", "unigram.target.ids"), "rb").read().split(b"\n")[:-1]
os.makedirs(path("bad"))
with open(path("bad", "cases"), "w") as cases:
    for case, k, line, command in bad:
        before = raw if command == "tokenize" else ids_raw
        data = b"".join(l + b"\n" for l in before[:k - 1] + [line] + before[k - 1:k + 2])
        with open(path("bad", case + ".in"), "wb") as f:
            f.write(data)
        cases.write("%s %d %s\n" % (case, k, command))
        # The reference stops there too, naming line K.
        args = argparse.Namespace(command=command, spm=path("unigram", "target.spm"),
                                  vocab=path("unigram", "vocab.tgt.txt"), ids=True, pieces=False,
                                  unk_id=UNK, bos_id=BOS, eos_id=EOS, pad_id=PAD)
        out = io.BytesIO()
        try:
            ref.run(args, io.BytesIO(data), out)
            raise AssertionError("the reference took %s" % case)
        except ref.InputError as e:
            assert str(e).startswith("line %d: " % k), (case, str(e))
        want = "want/unigram.target.%s" % ("ids" if command == "tokenize" else "text")
        expected = open(path(want), "rb").read().split(b"\n")[:k - 1]
        assert out.getvalue() == b"".join(l + b"\n" for l in expected), case

# Broken .spm files: the unigram directory with its target.spm missing,
# random bytes, cut in half, empty. The reference refuses each too.
good = open(path("unigram.model"), "rb").read()
broken = {"missing": None, "random": np.random.default_rng(7).bytes(4096),
          "truncated": good[:len(good) // 2], "empty": b""}
for case, content in broken.items():
    directory = path("spm-" + case)
    shutil.copytree(path("unigram"), directory)
    os.remove(os.path.join(directory, "target.spm"))
    if content is not None:
        with open(os.path.join(directory, "target.spm"), "wb") as f:
            f.write(content)
    try:
        ref.load_spm(os.path.join(directory, "target.spm"))
        raise AssertionError("python3-sentencepiece loads the %s target.spm" % case)
    except ref.InputError:
        pass
# Files: train.txt corpus.txt unigram.model bpe.model; unigram/ bpe/ mixed/
# (model directories); want/NAME.SIDE.{pieces,ids,text,alltext};
# in/NAME.SIDE.allids; bad/cases (NAME K COMMAND), bad/NAME.in; spm-CASE/.
EOF
corpus_lines=$(wc -l <"$work/corpus.txt")

# difference WANT GOT [INPUT]: the first line where GOT differs from WANT
# (lines end at "\n" only): its number, the input line, what the reference
# gives and what tessera gives (Python's repr of 200 characters from a little
# before the first differing one, at character C), and how many lines differ.
difference() {
    "$python" - "$@" <<'EOF'
import sys

def lines(name):
    data = open(name, "rb").read().split(b"\n")
    return data[:-1] if data[-1] == b"" else data

def text(line):
    return line.decode("utf-8", "surrogateescape")

want, got = lines(sys.argv[1]), lines(sys.argv[2])
inputs = lines(sys.argv[3]) if len(sys.argv) > 3 and sys.argv[3] else []
differ = [i for i in range(max(len(want), len(got)))
          if i >= len(want) or i >= len(got) or want[i] != got[i]]
if not differ:
    print("the same lines but not the same bytes", end="")
    sys.exit(0)
i = differ[0]
w = text(want[i]) if i < len(want) else None
g = text(got[i]) if i < len(got) else None
c = next((k for k, (a, b) in enumerate(zip(w or "", g or "")) if a != b), min(len(w or ""), len(g or "")))
start = max(0, c - 40)
out = "line %d (character %d" % (i + 1, c + 1)
if i < len(inputs):
    out += ", input %r" % text(inputs[i])[:200]
out += "): reference %s, tessera %s" % ("no line" if w is None else repr(w[start:start + 200]),
                                       "no line" if g is None else repr(g[start:start + 200]))
print("%s (%d line(s) differ)" % (out, len(differ)), end="")
EOF
}

# check WHAT WANT INPUT ARGS...: tessera ARGS <INPUT succeeds, writes nothing
# on stderr, and writes WANT byte for byte.
got=$work/got
mkdir "$got" || exit 99
checks=0
check() {
    check_what=$1 check_want=$2 check_input=$3
    shift 3
    checks=$((checks + 1))
    check_out=$got/$checks
    $tessera "$@" <"$check_input" >"$check_out" 2>"$check_out.err"
    check_code=$?
    if [ "$check_code" -ne 0 ] || [ -s "$check_out.err" ]; then
        fail "$check_what: exit $check_code: $(head -c 300 "$check_out.err")"
    elif cmp -s "$check_want" "$check_out"; then
        echo "PASS: $check_what"
    else
        fail "$check_what: $(difference "$check_want" "$check_out" "$check_input")"
    fi
}

corpus=$work/corpus.txt
for name in unigram bpe; do
    model=$work/$name
    for side in source target; do
        want=$work/want/$name.$side
        # Each command's default side once: tokenize's is source, detokenize's target.
        tokenize_side="--side $side" detokenize_side="--side $side"
        [ "$side" = source ] && tokenize_side=""
        [ "$side" = target ] && detokenize_side=""
        check "$name: tokenize ${tokenize_side:-(no --side: source)}, $corpus_lines lines" "$want.pieces" \
            "$corpus" tokenize -m "$model" $tokenize_side
        check "$name: tokenize --side $side --ids" "$want.ids" "$corpus" tokenize -m "$model" --side $side --ids
        check "$name: detokenize ${detokenize_side:-(no --side: target)} of the reference's ids" \
            "$want.text" "$want.ids" \
            detokenize -m "$model" $detokenize_side
        check "$name: detokenize --side $side --pieces of the reference's pieces" "$want.text" "$want.pieces" \
            detokenize -m "$model" --side $side --pieces
        check "$name: detokenize --side $side of every id" "$want.alltext" "$work/in/$name.$side.allids" \
            detokenize -m "$model" --side $side
        check "$name: tokenize --side $side --ids of tags (>>deu<< in the source vocabulary) and empty lines" \
            "$work/want/tags.$name.$side" "$work/in/tags" tokenize -m "$model" --side $side --ids
    done
done

# mixed: the unigram's source side and the bpe's target side.
check "mixed: tokenize --side source --ids reads source.spm" "$work/want/unigram.source.ids" "$corpus" \
    tokenize -m "$work/mixed" --side source --ids
check "mixed: tokenize --side target --ids reads target.spm" "$work/want/bpe.target.ids" "$corpus" \
    tokenize -m "$work/mixed" --side target --ids
check "mixed: detokenize reads target.spm" "$work/want/bpe.target.text" "$work/want/bpe.target.ids" \
    detokenize -m "$work/mixed"

# No input; empty lines and a last line without "\n" (the reference's CLI
# with its own flags); CRLF.
: >"$work/in/empty"
check "tokenize of no input is no output" "$work/in/empty" "$work/in/empty" tokenize -m "$work/unigram"
printf '\n\nHello world' >"$work/in/last"
printf '\n\n%s\n' "$(printf 'Hello world\n' | "$python" "$srcdir/tools/spm_reference.py" tokenize \
    --spm "$work/unigram.model" --vocab "$work/unigram/vocab.src.txt" --unk-id 1 --ids)" >"$work/want/last"
check "empty lines and a last line without a newline" "$work/want/last" "$work/in/last" \
    tokenize -m "$work/unigram" --ids
check "CRLF: a trailing CR is ignored, an inner one is text" "$work/want/crlf" "$work/in/crlf" \
    tokenize -m "$work/bpe" --ids

# Bad lines: K-1 lines of output, one line naming line K, exit 1 (the
# unigram directory's target side: tokenize --ids, detokenize).
while read -r case k command; do
    flags="--side target"
    [ "$command" = tokenize ] && flags="$flags --ids"
    want=$work/want/unigram.target.ids
    [ "$command" = detokenize ] && want=$work/want/unigram.target.text
    $tessera "$command" -m "$work/unigram" $flags <"$work/bad/$case.in" >"$got/$case" 2>"$got/$case.err"
    code=$?
    head -n $((k - 1)) "$want" >"$got/$case.want"
    errs=$(wc -l <"$got/$case.err")
    if [ "$code" -ne 1 ] || [ "$errs" -ne 1 ] || ! grep -q "line $k\([^0-9]\|$\)" "$got/$case.err"; then
        fail "$command $case at line $k: exit $code, $errs line(s) on stderr" \
            "(want 1, one line naming line $k): $(head -c 300 "$got/$case.err")"
    elif cmp -s "$got/$case.want" "$got/$case"; then
        echo "PASS: $command $case at line $k: $(cat "$got/$case.err")"
    else
        fail "$command $case at line $k: the output before it: $(difference "$got/$case.want" "$got/$case")"
    fi
done <"$work/bad/cases"

# Broken target.spm: one line naming the file, no output, a failure status.
head -n 20 "$work/corpus.txt" >"$work/in/head"
head -n 20 "$work/want/unigram.target.ids" >"$work/in/head.ids"
for case in missing random truncated empty; do
    for command in tokenize detokenize; do
        input=$work/in/head
        [ "$command" = detokenize ] && input=$work/in/head.ids
        $tessera "$command" -m "$work/spm-$case" --side target <"$input" >"$got/spm-$case" 2>"$got/spm-$case.err"
        code=$?
        errs=$(wc -l <"$got/spm-$case.err")
        if [ "$code" -eq 0 ] || [ "$code" -gt 125 ] || [ "$errs" -ne 1 ] || [ -s "$got/spm-$case" ] ||
            ! grep -q "target\.spm" "$got/spm-$case.err"; then
            fail "$command with target.spm $case: exit $code, $errs line(s) on stderr," \
                "$(wc -c <"$got/spm-$case") bytes out (want a failure, one line naming target.spm," \
                "nothing out): $(head -c 300 "$got/spm-$case.err")"
        else
            echo "PASS: $command with target.spm $case (exit $code): $(cat "$got/spm-$case.err")"
        fi
    done
done

[ "$status" -eq 0 ] && echo "PASS"
exit "$status"
