#!/bin/sh
# make check: tools/tessera-convert turns each stored original of
# tests/golden/families/*/marian (a Marian model directory, written by
# tools/write-marian-checkpoint) into exactly the committed conversion
# (config.json, model.safetensors, vocab.src.txt, vocab.tgt.txt, byte for
# byte), also from the .npz path and from a model whose untied output layer is
# stored the newer way (decoder_ff_logit_out_Wt, [V, d]) (SentencePiece
# models and the tokenizer key: tests/text-opus-mt.sh); and it refuses what
# tessera cannot run with one line naming the option or tensor, exit status
# 1, no traceback; it tells Marian's two gelu forms apart by model.yml's
# version or --marian-gelu. The same for tests/golden/families/*/hf-marian
# (Hugging Face MarianMT directories, tools/write-hf-marian-checkpoint), found
# without --from; and tests/golden/families/*/hf (M2M100, NLLB-200, mBART,
# tools/write-hf-m2m100-checkpoint), with python3-sentencepiece. Needs
# /usr/bin/python3 with numpy and yaml (not torch: the
# families read from .pt files are tests/convert-torch-families.sh's).
python_modules="numpy yaml sentencepiece"
. "$(dirname "$0")/convert-lib.sh"

found=0
for original in "$families"/*/marian; do
    [ -d "$original" ] || continue
    found=$((found + 1))
    fixture=$(dirname "$original")
    name=$(basename "$fixture")
    "$python" "$convert" --from marian "$original" "$work/$name" 2>"$work/$name.err"
    code=$?
    if [ "$code" -ne 0 ]; then
        fail "$name: tessera-convert exited $code: $(tail -n 1 "$work/$name.err")"
        continue
    fi
    same "$name" "$fixture" "$work/$name"
    echo "PASS: $name converts to the committed files"
done
[ "$found" -ge 5 ] || fail "found $found Marian originals under $families, expected 5 or more"

# The variants (and broken copies) made from the stored originals, in one run:
# each is a Marian directory under $work/cases/NAME.
"$python" - "$families" "$work/cases" <<'EOF' || { echo "FAIL: could not make the test cases"; exit 1; }
import io, os, shutil, sys, zipfile
import numpy as np
import yaml

families, cases = sys.argv[1:]
META = "special:model.yml"


def load(directory):
    npz = [n for n in os.listdir(directory) if n.endswith(".npz")][0]
    with np.load(os.path.join(directory, npz)) as archive:
        items = {name: archive[name] for name in archive.files}
    return npz, items


def save(path, items):
    with zipfile.ZipFile(path, "w") as archive:
        for name, array in items.items():
            buffer = io.BytesIO()
            np.lib.format.write_array(buffer, array)
            archive.writestr(name + ".npy", buffer.getvalue())


def case(name, base, options=None, drop=None, rename=None, reshape=None, vocab_drop=None, files=()):
    """A copy of families/BASE/marian, edited: model.yml options set, a tensor
    dropped, renamed (and transposed) or given a wrong shape, a vocabulary
    line dropped, extra files added."""
    source = os.path.join(families, base, "marian")
    target = os.path.join(cases, name)
    shutil.copytree(source, target)
    npz, items = load(source)
    if options:
        meta = yaml.safe_load(items[META].tobytes().split(b"\0")[0].decode("utf-8"))
        meta.update(options)
        text = yaml.safe_dump(meta, sort_keys=False).encode("utf-8") + b"\0"
        items[META] = np.frombuffer(text, dtype=np.int8)
    if drop:
        del items[drop]
    if rename:
        old, new = rename
        items[new] = np.ascontiguousarray(items.pop(old).T)
    if reshape:
        items[reshape] = items[reshape][:, :-1]
    save(os.path.join(target, npz), items)
    if vocab_drop:
        path = os.path.join(target, "vocab.yml")
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
        with open(path, "w", encoding="utf-8") as f:
            f.writelines(line for line in lines if not line.startswith(vocab_drop))
    for file_name, content in files:
        with open(os.path.join(target, file_name), "wb") as f:
            f.write(content)


os.makedirs(cases)
case("wt", "marian-untied-postnorm-relu", rename=("decoder_ff_logit_out_W", "decoder_ff_logit_out_Wt"))
case("s2s", "marian-tied-postnorm-swish", options={"type": "s2s"})
case("gelu", "marian-tied-postnorm-swish", options={"transformer-ffn-activation": "gelu"})
case("gelu-1.12.3", "marian-tied-postnorm-swish",
     options={"transformer-ffn-activation": "gelu", "version": "v1.12.3 d225c24d 2023-03-01 13:48:09 +0000"})
case("gelu-1.12.2", "marian-tied-postnorm-swish",
     options={"transformer-ffn-activation": "gelu", "version": "v1.12.2 c3fb60cb 2023-02-27 10:00:00 +0000"})
case("aan", "marian-tied-postnorm-swish", options={"transformer-decoder-autoreg": "average-attention"})
case("emb-rms", "marian-prenorm-swish", options={"transformer-postprocess-emb": "r"})
case("emb-add", "marian-prenorm-swish", options={"transformer-postprocess-emb": "dan"})
case("emb-norm-missing", "marian-postnorm-embnorm-relu", drop="decoder_emb_ln_bias_pre")
case("mixed-norm", "marian-prenorm-swish", options={"transformer-postprocess": "dan"})
case("ffn-depth", "marian-untied-postnorm-relu", options={"transformer-ffn-depth": 3})
case("right-left", "marian-untied-postnorm-relu", options={"right-left": True})
case("missing", "marian-tied-postnorm-swish", drop="decoder_l2_context_Wk")
case("shape", "marian-prenorm-swish", reshape="encoder_l1_self_Wq")
case("vocab-gap", "marian-tied-postnorm-swish", vocab_drop="no:")
EOF

# The .npz path as INPUT, and a directory without --from, give the same files.
npz=$(ls "$families/marian-tied-postnorm-swish/marian/"*.npz)
if converts "the .npz path" "$npz" "$work/from-npz"; then
    same "the .npz path" "$families/marian-tied-postnorm-swish" "$work/from-npz"
fi
if converts "decoder_ff_logit_out_Wt" "$work/cases/wt" "$work/wt"; then
    same "decoder_ff_logit_out_Wt" "$families/marian-untied-postnorm-relu" "$work/wt"
fi

# refused CASE WORDS...: exit 1, one line on stderr, naming each of WORDS.
refused() {
    name=$1
    shift
    "$python" "$convert" --from marian "$work/cases/$name" "$work/out-$name" >"$work/$name.out" 2>"$work/$name.err"
    code=$?
    lines=$(wc -l <"$work/$name.err")
    if [ "$code" -ne 1 ] || [ "$lines" -ne 1 ] || grep -q Traceback "$work/$name.err"; then
        fail "$name: exit $code, $lines line(s) on stderr (want 1 and one line): $(head -c 300 "$work/$name.err")"
        return
    fi
    for word in "$@"; do
        grep -q -F -- "$word" "$work/$name.err" || fail "$name: the message does not name '$word': $(cat "$work/$name.err")"
    done
    echo "PASS: $name: $(cat "$work/$name.err")"
}
refused s2s "type" "s2s"
refused gelu "transformer-ffn-activation" "gelu" "version" "--marian-gelu"
refused aan "transformer-decoder-autoreg" "average-attention"
refused emb-rms "transformer-postprocess-emb" "RMSNorm"
refused emb-add "transformer-postprocess-emb" "dan"
refused emb-norm-missing "decoder_emb_ln_bias_pre"
refused mixed-norm "transformer-postprocess" "dan"
refused ffn-depth "transformer-ffn-depth" "3"
refused right-left "right-left"
refused missing "decoder_l2_context_Wk"
refused shape "encoder_l1_self_Wq" "[16, 15]"
refused vocab-gap "vocab.yml" "id 3"

# Marian's gelu: by version (x*sigmoid(1.702x) before v1.12.3, erf from it), or --marian-gelu.
# activation CASE WANT [FLAGS...]: the case converts and config.json says "activation": WANT.
activation() {
    name=$1 want=$2
    shift 2
    out="$work/act-$name$(echo "$*" | tr -c 'a-z0-9' '-')"
    "$python" "$convert" --from marian "$@" "$work/cases/$name" "$out" 2>"$out.err"
    code=$?
    if [ "$code" -ne 0 ]; then
        fail "$name $*: tessera-convert exited $code: $(tail -n 1 "$out.err")"
    elif grep -q "\"activation\": \"$want\"" "$out/config.json"; then
        echo "PASS: $name $*: activation $want"
    else
        fail "$name $*: activation is not $want: $(grep activation "$out/config.json")"
    fi
}
activation gelu-1.12.3 gelu
activation gelu-1.12.2 gelu_sigmoid
activation gelu gelu_sigmoid --marian-gelu sigmoid
activation gelu gelu --marian-gelu erf
activation gelu-1.12.2 gelu --marian-gelu erf

# ---- Hugging Face MarianMT ------------------------------------------------------
found=0
for original in "$families"/*/hf-marian; do
    [ -d "$original" ] || continue
    found=$((found + 1))
    fixture=$(dirname "$original")
    name=$(basename "$fixture")
    dtype=f32
    grep -q '"F16"' "$fixture/model.safetensors" 2>/dev/null && dtype=f16
    if converts "$name" "$original" "$work/$name" --dtype "$dtype"; then
        same "$name" "$fixture" "$work/$name"
        echo "PASS: $name converts to the committed files (found as hf-marian without --from)"
    fi
done
[ "$found" -ge 3 ] || fail "found $found MarianMT originals under $families, expected 3 or more"

# ---- Hugging Face M2M100, NLLB-200 and mBART ----------------------------------------
# The originals (tools/write-hf-m2m100-checkpoint) convert, found without
# --from, to the committed files and the tokenizer's model; and what tessera
# cannot run is refused in one line naming it.
found=0
for original in "$families"/hf-nllb-*/hf "$families"/hf-m2m100-*/hf "$families"/hf-mbart*/hf; do
    [ -d "$original" ] || continue
    found=$((found + 1))
    fixture=$(dirname "$original")
    name=$(basename "$fixture")
    dtype=f32
    grep -q '"F16"' "$fixture/model.safetensors" 2>/dev/null && dtype=f16
    if converts "$name" "$original" "$work/$name" --dtype "$dtype"; then
        same "$name" "$fixture" "$work/$name"
        cmp -s "$fixture/shared.spm" "$work/$name/shared.spm" || fail "$name: shared.spm differs"
        echo "PASS: $name converts to the committed files (found without --from)"
    fi
done
[ "$found" -ge 5 ] || fail "found $found M2M100/NLLB/mBART originals under $families, expected 5"

# m2m_refuses NAME EDIT MESSAGE: the NLLB original edited by the Python
# statement EDIT (on config `c`, tokenizer config `t`, directory `d`) is
# refused with MESSAGE.
m2m_refuses() {
    case_dir="$work/refuse-$1"
    cp -r "$families/hf-nllb-f16/hf" "$case_dir"
    "$python" - "$case_dir" "$2" <<'PYEOF' || { fail "$1: could not make the case"; return; }
import json, os, sys
d, edit = sys.argv[1:]
c = json.load(open(os.path.join(d, "config.json")))
t = json.load(open(os.path.join(d, "tokenizer_config.json")))
exec(edit)
json.dump(c, open(os.path.join(d, "config.json"), "w"))
json.dump(t, open(os.path.join(d, "tokenizer_config.json"), "w"))
PYEOF
    "$python" "$convert" "$case_dir" "$case_dir.out" 2>"$case_dir.err"
    code=$?
    if [ "$code" -ne 1 ] || grep -q Traceback "$case_dir.err" || ! grep -qF "$3" "$case_dir.err" \
        || [ "$(wc -l <"$case_dir.err")" -ne 1 ]; then
        fail "$1: exit $code, expected one line with '$3': $(cat "$case_dir.err")"
    else
        echo "PASS: $1 refused: $(cat "$case_dir.err")"
    fi
}
m2m_refuses untied 'c["tie_word_embeddings"] = False' "tie_word_embeddings false"
m2m_refuses tokenizer-class 't["tokenizer_class"] = "BertTokenizer"' "tokenizer_class 'BertTokenizer'"
m2m_refuses no-languages 'del t["additional_special_tokens"]' "additional_special_tokens must list"
m2m_refuses too-many-languages 't["additional_special_tokens"] += ["x%d" % i for i in range(9)]' \
    "more than the 48 rows of the embedding"
m2m_refuses no-spm 'os.remove(os.path.join(d, "sentencepiece.bpe.model"))' \
    "sentencepiece.bpe.model missing"
m2m_refuses heads 'c["decoder_attention_heads"] = 4' "decoder_attention_heads 4 differs"
m2m_refuses legacy 't["legacy_behaviour"] = "yes"' "legacy_behaviour must be true or false"
m2m_refuses mbart-tokenizer 't["tokenizer_class"] = "MBart50Tokenizer"' \
    "tokenizer_class MBart50Tokenizer goes with model_type mbart, not m2m_100"

# --help lists every family the converter has (the list the README documents),
# each with its own --help (its module imports); an unknown --from is one line.
"$python" "$convert" --help >"$work/help.out" 2>&1 || fail "--help exited non-zero"
for family in hf-marian hf-m2m100 hf-mbart fairseq marian opennmt-py torch; do
    grep -q "^  $family " "$work/help.out" || fail "--help does not list the family $family"
    "$python" "$convert" --from "$family" --help >"$work/help-$family.out" 2>&1 &&
        grep -q -- "--source-spm" "$work/help-$family.out" ||
        fail "--from $family --help: $(tail -n 1 "$work/help-$family.out")"
done
# A flag's value before INPUT is not taken for INPUT (detection reads INPUT).
"$python" "$convert" --dtype f16 "$families/hf-nllb-f16/hf" "$work/flag-first" 2>"$work/flag-first.err" &&
    cmp -s "$work/flag-first/model.safetensors" "$families/hf-nllb-f16/model.safetensors" ||
    fail "--dtype f16 before INPUT: $(tail -n 1 "$work/flag-first.err")"
"$python" "$convert" in out --from nllb 2>"$work/from.err"
if [ $? -ne 1 ] || [ "$(wc -l <"$work/from.err")" -ne 1 ] || ! grep -q "from nllb: not a family" "$work/from.err"; then
    fail "--from nllb: expected one line naming it: $(cat "$work/from.err")"
fi

[ "$status" -eq 0 ] && echo "PASS"
exit "$status"
