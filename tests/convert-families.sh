#!/bin/sh
# make check: tools/tessera-convert turns each stored original of
# tests/golden/families/*/marian (a Marian model directory, written by
# tools/write-marian-checkpoint) into exactly the committed conversion
# (config.json, model.safetensors, vocab.src.txt, vocab.tgt.txt, byte for
# byte), also from the .npz path and from a model whose untied output layer is
# stored the newer way (decoder_ff_logit_out_Wt, [V, d]), and copies
# source.spm / target.spm; and it refuses what tessera cannot run with one
# line naming the option or tensor, exit status 1, no traceback; it tells
# Marian's two gelu forms apart by model.yml's version or --marian-gelu. Needs
# /usr/bin/python3 with numpy and yaml (not torch).
#
# Then tests/golden/families/*/opennmt-py/*.pt (OpenNMT-py 3.x checkpoints,
# tools/write-opennmt-checkpoint), when torch is importable: each converts to
# the committed files (also with its position buffers added back, and without
# --from), and the refusals (options, an OpenNMT-py 2.x vocabulary, an unsafe
# pickle) give one line. Without torch that part prints a SKIP line naming it,
# and the Marian part alone decides.
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
python=${TESSERA_TEST_PYTHON:-/usr/bin/python3}
families=$srcdir/tests/golden/families
convert="$srcdir/tools/tessera-convert"

if ! [ -x "$python" ]; then
    echo "SKIP: $python not found (tools/tessera-convert runs with it)"
    exit 77
fi
for module in numpy yaml; do
    if ! "$python" -c "import $module" >/dev/null 2>&1; then
        echo "SKIP: $python lacks the module '$module' (Debian: python3-$module)"
        exit 77
    fi
done

work=$(mktemp -d "${TMPDIR:-/tmp}/convert-families.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT INT TERM
status=0
fail() {
    echo "FAIL: $*"
    status=1
}

# same NAME WANT_DIR GOT_DIR: the conversion's files are the committed ones.
same() {
    for f in config.json model.safetensors vocab.src.txt vocab.tgt.txt; do
        cmp -s "$2/$f" "$3/$f" || fail "$1: $f differs from $2/$f"
    done
}

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
case("wt", "marian-untied-postnorm-relu", rename=("decoder_ff_logit_out_W", "decoder_ff_logit_out_Wt"),
     files=[("source.spm", b"\x0a\x03src"), ("target.spm", b"\x0a\x03tgt")])
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
# converts NAME INPUT OUT: tessera-convert INPUT OUT (no --from) succeeds.
converts() {
    "$python" "$convert" "$2" "$3" 2>"$3.err"
    code=$?
    [ "$code" -eq 0 ] && return 0
    fail "$1: tessera-convert exited $code: $(tail -n 1 "$3.err")"
    return 1
}
npz=$(ls "$families/marian-tied-postnorm-swish/marian/"*.npz)
if converts "the .npz path" "$npz" "$work/from-npz"; then
    same "the .npz path" "$families/marian-tied-postnorm-swish" "$work/from-npz"
fi
if converts "decoder_ff_logit_out_Wt" "$work/cases/wt" "$work/wt"; then
    same "decoder_ff_logit_out_Wt" "$families/marian-untied-postnorm-relu" "$work/wt"
    for f in source.spm target.spm; do
        cmp -s "$work/cases/wt/$f" "$work/wt/$f" || fail "$f was not copied"
    done
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

# ---- OpenNMT-py 3.x -----------------------------------------------------------
onmt_found=0
for original in "$families"/*/opennmt-py/*.pt; do
    [ -f "$original" ] && onmt_found=$((onmt_found + 1))
done
if ! "$python" -c "import torch" >/dev/null 2>&1; then
    echo "SKIP: opennmt-py: $python cannot import torch, so the $onmt_found OpenNMT-py fixture(s) were not re-converted (the Marian part above ran)"
    [ "$status" -eq 0 ] && echo "PASS (the Marian part; the OpenNMT-py part was skipped: no torch)"
    exit "$status"
fi
[ "$onmt_found" -ge 2 ] || fail "found $onmt_found OpenNMT-py originals under $families, expected 2 or more"

# One Python process for every OpenNMT-py case (torch takes a second or two to
# import): tessera-convert's main() per case, its exit status and standard
# error checked as those of a separate run.
"$python" - "$srcdir" "$work/onmt" <<'EOF' || status=1
import contextlib, glob, importlib.machinery, importlib.util, io, os, sys, types
import torch

srcdir, work = sys.argv[1:]
tools = os.path.join(srcdir, "tools")
sys.path.insert(0, tools)
sys.dont_write_bytecode = True


def load_script(name, module_name):
    loader = importlib.machinery.SourceFileLoader(module_name, os.path.join(tools, name))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(module_name, loader))
    loader.exec_module(module)
    return module


convert = load_script("tessera-convert", "tessera_convert")
writer = load_script("write-opennmt-checkpoint", "write_opennmt_checkpoint")
families = os.path.join(srcdir, "tests", "golden", "families")
os.makedirs(work)
failed = 0


def run(argv):
    """(exit status, standard error lines) of tessera-convert ARGV."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        try:
            code = convert.main(argv)
        except SystemExit as e:
            code = e.code
        except Exception as e:  # a separate run would print a traceback
            code = "Traceback: %s: %s" % (type(e).__name__, e)
    return code, err.getvalue().splitlines()


def fail(message):
    global failed
    failed = 1
    print("FAIL: " + message)


def same(name, want, got):
    for f in ("config.json", "model.safetensors", "vocab.src.txt", "vocab.tgt.txt"):
        with open(os.path.join(want, f), "rb") as a, open(os.path.join(got, f), "rb") as b:
            if a.read() != b.read():
                fail("%s: %s differs from %s" % (name, f, os.path.join(want, f)))
                return False
    return True


def converts(name, argv, want):
    code, err = run(argv)
    if code != 0:
        fail("%s: tessera-convert exited %s: %s" % (name, code, err[-1:]))
    elif same(name, want, argv[-1]):
        print("PASS: %s converts to the committed files" % name)


for path in sorted(glob.glob(os.path.join(families, "*", "opennmt-py", "*.pt"))):
    fixture = os.path.dirname(os.path.dirname(path))
    name = os.path.basename(fixture)
    converts(name, ["--from", "opennmt-py", path, os.path.join(work, name)], fixture)

base = os.path.join(families, "opennmt-py-noqkvbias-gelu", "opennmt-py", "model.pt")
tied = os.path.join(families, "opennmt-py-qkvbias-relu", "opennmt-py", "model.pt")


def edited(name, source, opt=None, edit=None):
    """A copy of SOURCE with options set and/or edit(checkpoint) applied, saved as NAME.pt."""
    ckpt = torch.load(source)
    for key, value in (opt or {}).items():
        setattr(ckpt["opt"], key, value)
    if edit:
        edit(ckpt)
    os.makedirs(os.path.join(work, name))
    path = os.path.join(work, name, "model.pt")  # the name the safetensors metadata records
    torch.save(ckpt, path)
    return path


def add_pe(ckpt):
    """The position buffers OpenNMT-py 3.x saves, as it computes them (float32)."""
    d = ckpt["model"]["encoder.embeddings.make_embedding.emb_luts.0.weight"].shape[1]
    for stack in ("encoder", "decoder"):
        ckpt["model"]["%s.embeddings.make_embedding.pe.pe" % stack] = torch.from_numpy(
            writer.positional_table(d, ckpt["opt"].position_encoding_type))


# With the position buffers added back, and without --from (told by its pickle).
for fixture in ("opennmt-py-noqkvbias-gelu", "opennmt-py-qkvbias-relu"):
    path = edited(fixture + "-pe", os.path.join(families, fixture, "opennmt-py", "model.pt"), edit=add_pe)
    converts(fixture + " with its pe buffers, without --from",
             [path, os.path.join(work, fixture + "-pe")], os.path.join(families, fixture))


def refused(name, words, source=base, opt=None, edit=None, path=None):
    path = path or edited(name, source, opt, edit)
    code, err = run(["--from", "opennmt-py", path, os.path.join(work, "out-" + name)])
    if code != 1 or len(err) != 1 or "Traceback" in "".join(err):
        fail("%s: exit %s, %d line(s) on stderr (want 1 and one line): %s" % (name, code, len(err), err[:3]))
        return
    for word in words:
        if word not in err[0]:
            fail("%s: the message does not name %r: %s" % (name, word, err[0]))
            return
    print("PASS: %s: %s" % (name, err[0]))


def swap_pe(ckpt):
    add_pe(ckpt)  # the SinusoidalConcat tables, then the option says Interleaved
    ckpt["opt"].position_encoding_type = "SinusoidalInterleaved"


def drop(name):
    return lambda ckpt: ckpt["model"].pop(name)


def extra_bias(ckpt):
    ckpt["model"]["encoder.transformer.0.self_attn.final_linear.bias"] = torch.zeros(16)


def legacy_vocab():
    """A checkpoint whose vocab pickles torchtext's Field, as OpenNMT-py 2.x's
    do (a stand-in class of that name: torchtext need not be installed)."""
    class Field:
        pass
    Field.__module__, Field.__qualname__ = "torchtext.data.field", "Field"
    for name in ("torchtext", "torchtext.data", "torchtext.data.field"):
        sys.modules.setdefault(name, types.ModuleType(name))
    sys.modules["torchtext.data.field"].Field = Field
    ckpt = torch.load(base)
    ckpt["vocab"] = {"src": Field(), "tgt": Field()}
    path = os.path.join(work, "legacy.pt")
    torch.save(ckpt, path)
    return path


class Payload:
    def __reduce__(self):
        return (os.getcwd, ())


def unsafe():
    ckpt = torch.load(base)
    ckpt["opt"].payload = Payload()
    path = os.path.join(work, "unsafe.pt")
    torch.save(ckpt, path)
    return path


refused("rms", ["layer_norm", "rms", "RMSNorm"], opt={"layer_norm": "rms"})
refused("relative", ["max_relative_positions", "20", "relative"], opt={"max_relative_positions": 20})
refused("rotary", ["max_relative_positions", "-1", "rotary"], opt={"max_relative_positions": -1})
refused("alibi", ["max_relative_positions", "-2", "ALiBi"], opt={"max_relative_positions": -2})
refused("silu", ["pos_ffn_activation_fn", "silu", "gated"], opt={"pos_ffn_activation_fn": "silu"})
refused("fast_gelu", ["pos_ffn_activation_fn", "fast_gelu"], opt={"pos_ffn_activation_fn": "fast_gelu"})
refused("parallel_residual", ["parallel_residual", "true"], opt={"parallel_residual": True})
refused("num_kv", ["num_kv", "1"], opt={"num_kv": 1})
refused("heads_kv", ["heads_kv", "1"], opt={"heads_kv": 1})
refused("lambda_align", ["lambda_align", "0.05"], opt={"lambda_align": 0.05})
refused("encoder_type", ["encoder_type", "brnn"], opt={"encoder_type": "brnn"})
refused("decoder_type", ["decoder_type", "transformer_lm"], opt={"decoder_type": "transformer_lm"})
refused("average", ["self_attn_type", "average"], opt={"self_attn_type": "average"})
refused("widths", ["dec_hid_size", "32", "enc_hid_size"], opt={"dec_hid_size": 32})
refused("copy_attn", ["copy_attn", "true"], opt={"copy_attn": True})
refused("no-positions", ["position_encoding", "false"], opt={"position_encoding": False})
refused("pe-table", ["encoder.embeddings.make_embedding.pe.pe", "SinusoidalConcat"], edit=swap_pe)
refused("qkv-bias-missing", ["decoder.transformer_layers.1.context_attn.linear_keys.bias"], source=tied,
        edit=drop("decoder.transformer_layers.1.context_attn.linear_keys.bias"))
refused("qkv-bias-extra", ["encoder.transformer.0.self_attn.final_linear.bias", "add_qkvbias"],
        edit=extra_bias)
refused("legacy-2.x", ["OpenNMT-py 2.x", "torchtext"], path=legacy_vocab())
refused("unsafe-pickle", ["getcwd", "--trust-pickle"], path=unsafe())
sys.exit(failed)
EOF

[ "$status" -eq 0 ] && echo "PASS"
exit "$status"
