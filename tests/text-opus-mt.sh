#!/bin/sh
# make check: an OPUS-MT-style Marian model on text, end to end. In a scratch
# directory: real SentencePiece models are trained (python3-sentencepiece,
# unigram, a few hundred pieces, from generated bilingual-ish text), a
# synthetic Marian directory with random weights is written as OPUS-MT ships
# one (tools/write-marian-checkpoint's weights and files: model.npz, one joint
# vocabulary *.yml of the pieces of both models in Marian's order, </s> 0,
# <unk> 1, two >>tag<< entries; source.spm, target.spm, decoder.yml), and
# tools/tessera-convert converts it (found as Marian without --from).
#
# The converter: config.json's "tokenizer" names the copied models; the
# vocabulary keeps Marian's ids; --source-spm / --target-spm take the place of
# the input's models (one shared.spm when they are the same), for Hugging
# Face MarianMT too; a Marian vocabulary that is an .spm model, or a
# directory's one vocab.spm, gives shared.spm; a file that is not a
# SentencePiece model is refused in one line naming it (exit 1, no
# traceback, no output directory); a model few of whose pieces are in the
# vocabulary gets a one-line warning.
#
# tessera on text: `translate -m MODEL` of 29 lines of varied text
# (diacritics, CJK, emoji, an unknown character, tags in and out of the
# vocabulary, NFKC forms, a tab, a CR, empty lines, lines of the training
# text) equals tools/text_pipeline_reference.py
# (python3-sentencepiece, Marian's vocabulary, tools/marian_reference.py's
# forward pass and search), greedy and --beam 4, --batch 1 and 8, under every
# kernel set tests/tessera-test (else ./tessera) lists as usable, the
# emulated ones included. An empty line, or one of spaces, gives an empty line
# (README "Text"). Lines whose reference decisions come within 0.001 of
# flipping are left out, as tests/golden/families does (with these seeds, one
# line under --beam 4; more than 3 fails). `tessera tokenize --ids` of the same
# lines and `tessera detokenize` of random target ids are checked against the
# reference too.
#
# Exit 77 (SKIP) without /usr/bin/python3's numpy, yaml or sentencepiece, or
# when tessera reads no text (no --pieces in translate --help, or `tessera
# info` says text is not built in), once the converter's checks have passed.
#
# Every tessera command runs behind the words of $TESSERA_TEST_RUNNER (qemu
# in a cross build, .ci/neon), the Python parts' too.
python_modules="numpy yaml sentencepiece"
. "$(dirname "$0")/convert-lib.sh" # srcdir, build, python, convert, work, fail, converts
tools=$srcdir/tools
# tests/tessera-test is the command linked with the test library, which also
# holds the emulated kernel sets; ./tessera when Criterion did not build it.
tessera=$build/tests/tessera-test
[ -x "$tessera" ] || tessera=$build/tessera
if ! [ -x "$tessera" ]; then
    echo "ERROR: neither $build/tests/tessera-test nor $build/tessera is built"
    exit 99
fi
runner=${TESSERA_TEST_RUNNER:-}
export TESSERA_NUM_THREADS=1 # make -j2 runs two tests at once on 2 cores

# ---- the models and the sentences --------------------------------------------
# $work/marian: the OPUS-MT-style directory; $work/spm-vocab: a Marian model
# whose vocabularies are one Marian-trained vocab.spm; $work/wrong.spm: a model
# of other text; $work/not.spm: no model; $work/in.txt: the sentences.
"$python" - "$tools" "$work" >"$work/make.log" 2>&1 <<'EOF' || { cat "$work/make.log"; echo "FAIL: could not make the models"; exit 1; }
import importlib.machinery, io, os, random, shutil, sys
import sentencepiece as spm

tools, work = sys.argv[1:]
wmc = importlib.machinery.SourceFileLoader(
    "write_marian_checkpoint", os.path.join(tools, "write-marian-checkpoint")).load_module()
rng = random.Random(3606)
spm.set_random_generator_seed(3606)


def lexicon(onsets, nuclei, codas, count, extra):
    words = set(extra)
    while len(words) < count:
        words.add("".join(rng.choice(onsets) + rng.choice(nuclei) + rng.choice(codas)
                          for _ in range(rng.choice((1, 1, 2, 2, 3)))))
    return sorted(words)


def corpus(words, count):
    lines = []
    for _ in range(count):
        line = " ".join(rng.choice(words) for _ in range(rng.randint(2, 14)))
        if rng.random() < 0.3:
            line = line[0].upper() + line[1:]
        lines.append(line + rng.choice(["", "", ".", "?", "!", ","]))
    return lines


def train(name, lines, size, **options):
    """A unigram model of about size pieces, written to work/name (bytes that
    depend on the text alone: no model_prefix stored)."""
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(lines), model_writer=model,
                                   vocab_size=size, model_type="unigram", character_coverage=1.0,
                                   num_threads=1, hard_vocab_limit=False, minloglevel=2, **options)
    with open(os.path.join(work, name), "wb") as f:
        f.write(model.getvalue())
    return spm.SentencePieceProcessor(model_file=os.path.join(work, name))


def own_pieces(processor):
    return [processor.id_to_piece(i) for i in range(processor.get_piece_size())
            if not (processor.is_control(i) or processor.is_unknown(i))]


def write_marian(directory, spec, vocab_files, pieces=None):
    """tools/write-marian-checkpoint's weights and files for spec; pieces: the
    *.yml vocabulary's (None: the vocabularies are .spm files put there)."""
    os.makedirs(directory, exist_ok=True)
    items = wmc.build_weights(spec, spec["eos_bias"])
    items[wmc.META_ITEM] = wmc.meta_item(wmc.model_yml(spec, vocab_files))
    wmc.write_npz(os.path.join(directory, "opus.spm-spm.transformer.npz"), items)
    if pieces:
        with open(os.path.join(directory, vocab_files[0]), "w", encoding="utf-8") as f:
            f.write(wmc.vocab_yaml(pieces))
    with open(os.path.join(directory, "decoder.yml"), "w", encoding="utf-8") as f:
        f.write(wmc.decoder_yml(vocab_files).replace(wmc.MODEL_FILE, "opus.spm-spm.transformer.npz"))


SOURCE = lexicon("bcdfghjklmnprstvwz", list("aeiouéèüöñçï"), ["", "", "n", "r", "s", "t", "ß"],
                 400, ["東京", "日本語", "テスト", "😀", "Ça", "NATO", "2024", "42"])
TARGET = lexicon("bdgklmnpstvz", list("aeiouåøæ"), ["", "k", "l", "m"], 300,
                 ["東京", "北京", "中文", "🙂", "Øre", "EU", "2024", "7"])
source = train("source.spm", corpus(SOURCE, 3000), 300)
target = train("target.spm", corpus(TARGET, 3000), 260)
train("wrong.spm", corpus(["%d" % n for n in range(1000)] + ["one", "two", "three"], 2000), 200)
with open(os.path.join(work, "not.spm"), "w") as f:
    f.write("</s> 0\n<unk> 1\n")

# OPUS-MT: one joint vocabulary, </s> 0, <unk> 1, then the pieces of both
# models (never their ids), and the multilingual models' target tags;
# tied-embeddings-all, post-norm, swish. The output is sharpened (output_gain)
# so that no decision is a near-tie, and </s> raised so that some sentences
# stop at </s> and others at --max-len.
pieces = ["</s>", "<unk>"]
for piece in own_pieces(source) + own_pieces(target) + [">>deu<<", ">>fra<<"]:
    if piece not in pieces:
        pieces.append(piece)
spec = dict(seed=12, dim=16, heads=2, ffn=48, enc_depth=2, dec_depth=2, src_vocab=len(pieces),
            tgt_vocab=len(pieces), tying="all", preprocess="", postprocess="dan", top="",
            activation="swish", output_gain=20.0, eos_bias=3.5, unk_bias=1.0)
marian = os.path.join(work, "marian")
write_marian(marian, spec, ["opus.spm-spm.vocab.yml"] * 2, pieces)
for name in ("source.spm", "target.spm"):
    shutil.copyfile(os.path.join(work, name), os.path.join(marian, name))

# Marian's own SentencePiece vocabulary (--bos_id=-1 --eos_id=0 --unk_id=1, as
# Marian trains it): its ids are the model's.
shared = train("vocab.spm", corpus(SOURCE, 1000) + corpus(TARGET, 1000), 120,
               bos_id=-1, eos_id=0, unk_id=1)
size = shared.get_piece_size()
write_marian(os.path.join(work, "spm-vocab"), dict(spec, src_vocab=size, tgt_vocab=size),
             ["vocab.spm", "vocab.spm"])
shutil.copyfile(os.path.join(work, "vocab.spm"), os.path.join(work, "spm-vocab", "vocab.spm"))

sentences = [
    "Bonjour kasé mirut.",
    "Ça été über naïve façade, señor Müller!",
    "東京 日本語 テスト",
    "hola 😀 vetiro 😀😀",
    "snow ☃ falls ☃",
    ">>deu<< Lirato kemu bafé.",
    ">>xyz<< Lirato kemu bafé.",
    ">>fra<<dobéni",
    "   spaced    out   words   ",
    "ＡＢＣ １２３ ｶﾀｶﾅ",
    "2024 42 7 1999",
    " ".join(["mirut kasé bafé dobéni lirato"] * 8),
    "a",
    "?!",
    "cafe\u0301 nai\u0308ve",
    "tab\tseparated\twords",
    "UPPER CASE NATO WORDS",
    "ЖЖЖ ждём",
    "<unk> </s> <s>",
    ">>deu<<",
    "Mixed 東京 and 😀 and ñ in one",
    "x" * 30,
    "a line ending in CR\r",
    "",
    "   ",
    "Ñandú über 東京",
] + corpus(SOURCE, 3)
with open(os.path.join(work, "in.txt"), "wb") as f:
    f.write("".join(line + "\n" for line in sentences).encode("utf-8"))
EOF

# ---- the converter --------------------------------------------------------------
# tokenizer NAME OUT SOURCE TARGET: config.json's tokenizer names SOURCE and TARGET.
tokenizer() {
    message=$("$python" - "$2/config.json" "$3" "$4" 2>&1 <<'EOF'
import json, sys
with open(sys.argv[1], encoding="utf-8") as f:
    got = json.load(f).get("tokenizer")
want = {"type": "sentencepiece", "source": sys.argv[2], "target": sys.argv[3]}
if got != want:
    sys.exit("config.json's tokenizer is %s, expected %s" % (json.dumps(got), json.dumps(want)))
EOF
    ) || fail "$1: $message"
}
# same NAME A B: the files are equal.
same() {
    cmp -s "$2" "$3" || fail "$1: $3 is not a copy of $2"
}
# warnings NAME ERR COUNT [WORD]: ERR holds COUNT warning lines (naming WORD).
warnings() {
    found=$(grep -c "warning" "$2")
    if [ "$found" -ne "$3" ]; then
        fail "$1: $found warning line(s), expected $3: $(grep warning "$2")"
    elif [ -n "${4:-}" ] && ! grep "warning" "$2" | grep -q -F -- "$4"; then
        fail "$1: the warning does not name $4: $(grep warning "$2")"
    fi
}
# refused NAME WORD INPUT OUT [FLAGS...]: exit 1, one line naming WORD, no OUT.
refused() {
    name=$1 word=$2 input=$3 out=$4
    shift 4
    "$python" "$convert" "$input" "$out" "$@" >/dev/null 2>"$out.err"
    code=$?
    lines=$(wc -l <"$out.err")
    if [ "$code" -ne 1 ] || [ "$lines" -ne 1 ] || grep -q Traceback "$out.err"; then
        fail "$name: exit $code, $lines line(s) on stderr (want 1 and one line): $(head -c 300 "$out.err")"
    elif ! grep -q -F -- "$word" "$out.err"; then
        fail "$name: the message does not name $word: $(cat "$out.err")"
    elif [ -e "$out" ]; then
        fail "$name: $out was written"
    else
        echo "PASS: $name: $(cat "$out.err")"
    fi
}

model=$work/model
if converts "OPUS-MT directory" "$work/marian" "$model"; then
    tokenizer "OPUS-MT directory" "$model" source.spm target.spm
    same "OPUS-MT directory" "$work/source.spm" "$model/source.spm"
    same "OPUS-MT directory" "$work/target.spm" "$model/target.spm"
    warnings "OPUS-MT directory" "$model.err" 0
    # Marian's ids: the vocabulary in the *.yml's order, never the models' ids.
    "$python" - "$work/marian/opus.spm-spm.vocab.yml" "$model" <<'EOF' || fail "OPUS-MT directory: the vocabulary is not Marian's"
import sys, yaml
with open(sys.argv[1], encoding="utf-8") as f:
    ids = yaml.load(f, Loader=yaml.BaseLoader)
want = [piece for piece, _ in sorted(ids.items(), key=lambda item: int(item[1]))]
for side in ("src", "tgt"):
    with open("%s/vocab.%s.txt" % (sys.argv[2], side), encoding="utf-8") as f:
        got = f.read().split("\n")[:-1]
    if got != want or got[:2] != ["</s>", "<unk>"]:
        sys.exit(1)
EOF
    echo "PASS: OPUS-MT directory: tokenizer source.spm / target.spm, Marian's ids"
fi

if converts "--target-spm in place of target.spm" "$work/marian" "$work/override" \
    --target-spm "$work/wrong.spm"; then
    tokenizer "--target-spm in place of target.spm" "$work/override" source.spm target.spm
    same "--target-spm in place of target.spm" "$work/wrong.spm" "$work/override/target.spm"
    same "--target-spm in place of target.spm" "$work/source.spm" "$work/override/source.spm"
    warnings "--target-spm of other text" "$work/override.err" 1 wrong.spm
    echo "PASS: --target-spm of other text: $(grep warning "$work/override.err")"
fi

if converts "--source-spm = --target-spm" "$work/marian" "$work/shared" \
    --source-spm "$work/source.spm" --target-spm "$work/source.spm"; then
    tokenizer "--source-spm = --target-spm" "$work/shared" shared.spm shared.spm
    same "--source-spm = --target-spm" "$work/source.spm" "$work/shared/shared.spm"
    [ -e "$work/shared/source.spm" ] && fail "--source-spm = --target-spm: source.spm written too"
    echo "PASS: --source-spm = --target-spm: one shared.spm"
fi

cp -R "$work/marian" "$work/one-spm"
mv "$work/one-spm/source.spm" "$work/one-spm/vocab.spm"
rm "$work/one-spm/target.spm"
if converts "one vocab.spm" "$work/one-spm" "$work/one-spm-out"; then
    tokenizer "one vocab.spm" "$work/one-spm-out" shared.spm shared.spm
    same "one vocab.spm" "$work/source.spm" "$work/one-spm-out/shared.spm"
    echo "PASS: a Marian directory with one vocab.spm: shared.spm for both sides"
fi

if converts "Marian vocabulary vocab.spm" "$work/spm-vocab" "$work/spm-vocab-out"; then
    tokenizer "Marian vocabulary vocab.spm" "$work/spm-vocab-out" shared.spm shared.spm
    warnings "Marian vocabulary vocab.spm" "$work/spm-vocab-out.err" 0
    "$python" - "$work/vocab.spm" "$work/spm-vocab-out" <<'EOF' || fail "Marian vocabulary vocab.spm: vocab.src.txt is not the model's pieces in id order"
import sys
import sentencepiece
model = sentencepiece.SentencePieceProcessor(model_file=sys.argv[1])
want = [model.id_to_piece(i) for i in range(model.get_piece_size())]
with open(sys.argv[2] + "/vocab.src.txt", encoding="utf-8") as f:
    sys.exit(f.read().split("\n")[:-1] != want)
EOF
    grep -q '"eos_id": 0' "$work/spm-vocab-out/config.json" ||
        fail "Marian vocabulary vocab.spm: eos_id is not the model's </s> (0)"
    echo "PASS: a Marian model whose vocabularies are vocab.spm: its ids, shared.spm"
fi

cp -R "$work/marian" "$work/source-only"
rm "$work/source-only/target.spm"
if converts "source.spm alone" "$work/source-only" "$work/source-only-out"; then
    if grep -q '"tokenizer"' "$work/source-only-out/config.json"; then
        fail "source.spm alone: a tokenizer was written"
    else
        echo "PASS: source.spm without target.spm: no tokenizer ($(tail -n 1 "$work/source-only-out.err"))"
    fi
fi

refused "--source-spm not a model" not.spm "$work/marian" "$work/out-not" --source-spm "$work/not.spm"
refused "--target-spm missing" no-such.spm "$work/marian" "$work/out-missing" \
    --target-spm "$work/no-such.spm"
cp -R "$work/marian" "$work/bad-carried"
cp "$work/not.spm" "$work/bad-carried/target.spm"
refused "a carried target.spm not a model" target.spm "$work/bad-carried" "$work/out-bad-carried"

# Another family: a MarianMT fixture (no models of its own, synthetic pieces).
hf=$families/hf-marian-tied-f16/hf-marian
if [ -d "$hf" ]; then
    if converts "hf-marian --source-spm --target-spm" "$hf" "$work/hf" --dtype f16 \
        --source-spm "$work/source.spm" --target-spm "$work/target.spm"; then
        tokenizer "hf-marian --source-spm --target-spm" "$work/hf" source.spm target.spm
        warnings "hf-marian --source-spm --target-spm" "$work/hf.err" 2 source.spm
        echo "PASS: hf-marian with --source-spm / --target-spm: tokenizer, and $(grep -c warning "$work/hf.err") warnings (its vocabulary is not theirs)"
    fi
    refused "hf-marian --target-spm alone" "--source-spm" "$hf" "$work/hf-target-only" \
        --target-spm "$work/target.spm"
else
    fail "no MarianMT fixture $hf"
fi

# ---- tessera on text ----------------------------------------------------------------
why=
if ! $runner "$tessera" translate --help 2>/dev/null | grep -q -- --pieces; then
    why="$tessera translate has no --pieces: tessera does not read text yet"
elif ! $runner "$tessera" info 2>/dev/null | grep -q '^text: SentencePiece'; then
    why="$tessera was built without SentencePiece ($($runner "$tessera" info 2>/dev/null | grep '^text:'))"
fi
if [ -n "$why" ]; then
    [ "$status" -eq 0 ] && { echo "SKIP: $why (the converter's checks passed)"; exit 77; }
    exit "$status"
fi
[ -f "$model/config.json" ] || { fail "no converted model to run"; exit 1; }

max_len=20
for beam in 1 4; do
    "$python" "$tools/text_pipeline_reference.py" "$work/marian" --beam "$beam" --max-len "$max_len" \
        --margins "$work/margins.$beam" <"$work/in.txt" >"$work/expected.$beam" 2>"$work/reference.err" ||
        { fail "the reference, --beam $beam: $(tail -n 1 "$work/reference.err")"; exit 1; }
done

sets=$($runner "$tessera" info | sed -n 's/^kernel set \([^ ]*\) *usable$/\1/p')
[ -n "$sets" ] || { fail "$tessera info lists no usable kernel set"; exit 1; }
runs=
for set in $sets; do
    for beam in 1 4; do
        for batch in 1 8; do
            run="$set.beam$beam.batch$batch"
            TESSERA_ISA=$set $runner "$tessera" translate -m "$model" --beam "$beam" --batch "$batch" \
                --max-len "$max_len" <"$work/in.txt" >"$work/got.$run" 2>"$work/err.$run"
            echo "$?" >"$work/code.$run"
            runs="$runs $run"
        done
    done
done
# The installed command too (its default set), when the runs above were the test build's.
if [ "$tessera" != "$build/tessera" ] && [ -x "$build/tessera" ]; then
    $runner "$build/tessera" translate -m "$model" --batch 8 --max-len "$max_len" <"$work/in.txt" \
        >"$work/got.tessera.beam1.batch8" 2>"$work/err.tessera.beam1.batch8"
    echo "$?" >"$work/code.tessera.beam1.batch8"
    runs="$runs tessera.beam1.batch8"
fi

# Every run against the reference, one process; a mismatch is shown with the
# reference's source ids and target ids, and what tessera translate --ids
# makes of those source ids (the model alone), so that tokenizing, the model
# and detokenizing can be told apart.
# shellcheck disable=SC2086 # the runs are words
"$python" - "$tools" "$work" "$runner" "$tessera" "$build/tessera" "$max_len" $runs <<'EOF' || status=1
import os, subprocess, sys
tools, work, runner, tessera, installed, max_len = sys.argv[1:7]
sys.path.insert(0, tools)
import text_pipeline_reference as reference

TIE = 1e-3  # tests/golden/families: decisions this close may flip in float32
SHOWN = 2   # mismatches shown with their ids, per run
with open(os.path.join(work, "in.txt"), "rb") as f:
    sources = [reference.spm_reference.text_of(n, line) for n, line in reference.spm_reference.read_lines(f)]
pipeline = None
status = 0


def read(path):
    with open(path, "rb") as f:
        return f.read()


def diagnose(run_set, beam, number):
    global pipeline
    if pipeline is None:
        pipeline = reference.TextPipeline(os.path.join(work, "marian"))
    text = sources[number - 1]
    pieces, ids = pipeline.tokenize(text)
    target = pipeline.search(ids, beam, int(max_len))[0] if ids else []
    env = dict(os.environ)
    if run_set != "tessera":
        env["TESSERA_ISA"] = run_set
    command = runner.split() + [tessera if run_set != "tessera" else installed,
               "translate", "-m", os.path.join(work, "model"), "--ids", "--beam", str(beam),
               "--max-len", max_len]
    done = subprocess.run(command, input=(" ".join(map(str, ids)) + "\n").encode(),
                          capture_output=True, env=env)
    print("      source %r: reference pieces %s, ids %s" % (text, pieces, ids))
    print("      reference target ids %s, pieces %s" % (target, pipeline.target_pieces(target)))
    print("      tessera translate --ids on those ids: %s%s"
          % (done.stdout.decode(errors="replace").strip(),
             " (exit %d: %s)" % (done.returncode, done.stderr.decode(errors="replace").strip())
             if done.returncode else ""))


expected, margins = {}, {}
for beam in (1, 4):
    expected[beam] = read(os.path.join(work, "expected.%d" % beam)).split(b"\n")[:-1]
    margins[beam] = [float(m) for m in read(os.path.join(work, "margins.%d" % beam)).split()]
for run in sys.argv[7:]:
    run_set, beam_word, batch_word = run.rsplit(".", 2)
    beam = int(beam_word[len("beam"):])
    code = int(read(os.path.join(work, "code." + run)))
    got = read(os.path.join(work, "got." + run)).split(b"\n")
    error = read(os.path.join(work, "err." + run)).decode(errors="replace").strip()
    if got and got[-1] == b"":
        got.pop()
    options = "%s --beam %d --%s" % ("./tessera" if run_set == "tessera" else "TESSERA_ISA=" + run_set,
                                     beam, batch_word.replace("batch", "batch "))
    if code != 0 or len(got) != len(expected[beam]):
        print("FAIL: %s: exit %d, %d lines for %d: %s"
              % (options, code, len(got), len(expected[beam]), error.splitlines()[-1:] or ""))
        status = 1
        continue
    compared = [i for i, m in enumerate(margins[beam]) if m >= TIE]
    wrong = [i for i in compared if got[i] != expected[beam][i]]
    for i in wrong[:SHOWN]:
        print("FAIL: %s: line %d: expected %r, got %r"
              % (options, i + 1, expected[beam][i].decode(), got[i].decode(errors="replace")))
        diagnose(run_set, beam, i + 1)
    if wrong:
        print("FAIL: %s: %d of %d lines differ from the reference's text%s"
              % (options, len(wrong), len(compared), " (the first %d above)" % SHOWN
                 if len(wrong) > SHOWN else ""))
        status = 1
    else:
        print("PASS: %s: %d lines equal the reference's text%s"
              % (options, len(compared), "" if len(compared) == len(got) else
                 " (%d near-ties left out)" % (len(got) - len(compared))))
    if len(compared) < len(got) - 3:
        print("FAIL: %s: %d of %d lines are near-ties; the seeds no longer give a useful test"
              % (options, len(got) - len(compared), len(got)))
        status = 1
sys.exit(status)
EOF

# tessera tokenize / detokenize (docs/model-format.md section 3): source ids of
# every sentence, and the text of random target ids, </s> (dropped) and <unk>
# (written as SentencePiece writes it: a Marian conversion's bos_id is <unk>'s
# id, a placeholder section 3 does not drop) among them.
if $runner "$tessera" tokenize --help >/dev/null 2>&1 && $runner "$tessera" detokenize --help >/dev/null 2>&1; then
    $runner "$tessera" tokenize -m "$model" --ids <"$work/in.txt" >"$work/tokenize.out" 2>"$work/tokenize.err" ||
        fail "tessera tokenize --ids: $(tail -n 1 "$work/tokenize.err")"
    "$python" - "$tools" "$work" "$runner" "$tessera" <<'EOF' || status=1
import os, random, subprocess, sys
tools, work, runner, tessera = sys.argv[1:]
sys.path.insert(0, tools)
import text_pipeline_reference as reference
pipeline = reference.TextPipeline(os.path.join(work, "marian"))
status = 0
with open(os.path.join(work, "in.txt"), "rb") as f:
    lines = [reference.spm_reference.text_of(n, line) for n, line in reference.spm_reference.read_lines(f)]
got = open(os.path.join(work, "tokenize.out"), "rb").read().split(b"\n")[:-1]
wrong = 0
for number, (text, out) in enumerate(zip(lines, got), 1):
    want = " ".join(map(str, pipeline.tokenize(text)[1]))
    if out.decode(errors="replace") != want:
        print("FAIL: tessera tokenize --ids: line %d %r: expected %s, got %s"
              % (number, text, want, out.decode(errors="replace")))
        wrong += 1
if len(got) != len(lines):
    print("FAIL: tessera tokenize --ids: %d lines for %d" % (len(got), len(lines)))
elif not wrong:
    print("PASS: tessera tokenize --ids: %d lines equal the reference's ids" % len(lines))
rng = random.Random(36)
size = len(pipeline.target_vocab[0])
id_lines = [[rng.randrange(0, size) for _ in range(rng.randint(1, 12))] for _ in range(200)]
done = subprocess.run(runner.split() + [tessera, "detokenize", "-m", os.path.join(work, "model")],
                      input="".join(" ".join(map(str, ids)) + "\n" for ids in id_lines).encode(),
                      capture_output=True)
out = done.stdout.split(b"\n")[:-1]
bad = [(ids, pipeline.detokenize(ids), text.decode(errors="replace"))
       for ids, text in zip(id_lines, out) if text != pipeline.detokenize(ids).encode()]
for ids, want, text in bad[:5]:
    print("FAIL: tessera detokenize: %s (%s): expected %r, got %r"
          % (" ".join(map(str, ids)), " ".join(pipeline.target_pieces(ids)), want, text))
if done.returncode or len(out) != len(id_lines):
    print("FAIL: tessera detokenize: exit %d, %d lines for %d: %s"
          % (done.returncode, len(out), len(id_lines), done.stderr.decode(errors="replace").strip()))
elif not bad:
    print("PASS: tessera detokenize: %d random id lines equal the reference's text" % len(id_lines))
sys.exit(1 if wrong or bad or done.returncode or len(out) != len(id_lines) or len(got) != len(lines) else 0)
EOF
else
    echo "(tessera tokenize / detokenize not built: not checked)"
fi

[ "$status" -eq 0 ] && echo "PASS"
exit "$status"
