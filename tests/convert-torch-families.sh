#!/bin/sh
# make check: the families read from .pt files, which need torch
# (python3-torch; else this test is a SKIP by name):
# tests/golden/families/*/opennmt-py/*.pt (OpenNMT-py 3.x checkpoints,
# tools/write-opennmt-checkpoint) each convert to the committed files (also
# with their position buffers added back, and without --from), and the
# refusals (options, an OpenNMT-py 2.x vocabulary, an unsafe pickle) give one
# line; tests/golden/families/*/fairseq (fairseq checkpoints and
# dictionaries, tools/write-fairseq-checkpoint) convert to the committed
# files, found as fairseq without --from.
. "$(dirname "$0")/convert-lib.sh"

if ! "$python" -c "import torch" >/dev/null 2>&1; then
    echo "SKIP: $python cannot import torch (Debian: python3-torch): the OpenNMT-py and fairseq fixtures were not re-converted"
    exit 77
fi

# ---- fairseq --------------------------------------------------------------------
found=0
for original in "$families"/*/fairseq; do
    [ -d "$original" ] || continue
    found=$((found + 1))
    fixture=$(dirname "$original")
    name=$(basename "$fixture")
    if converts "$name" "$original" "$work/$name"; then
        same "$name" "$fixture" "$work/$name"
        echo "PASS: $name converts to the committed files (found as fairseq without --from)"
    fi
done
[ "$found" -ge 2 ] || fail "found $found fairseq originals under $families, expected 2 or more"

# ---- OpenNMT-py 3.x -----------------------------------------------------------
onmt_found=0
for original in "$families"/*/opennmt-py/*.pt; do
    [ -f "$original" ] && onmt_found=$((onmt_found + 1))
done
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
