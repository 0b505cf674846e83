"""Small synthetic CTranslate2 model directories for tests/ctranslate2-synthetic.sh.

    synthetic.py WORK

writes WORK/NAME for each case below, with tools/ctranslate2_files.py (written
from CTranslate2's documented layout, not from tessera's reader), random
weights, and what tessera must make of it:

- an accepted case: score.in (SOURCE TAB TARGET pieces) and score.expected,
  the log-probs tools/ctranslate2_reference.py computes in float64;
  translate.in / translate.expected, its greedy output for the sources whose
  every decision is clear by more than 1e-3 (margin); encode.expected for an
  encoder alone (the encoder's vectors, %.9g);
- a refused case: refusal.expected, words the one-line message must hold
  (the feature, the variable or key).

The cases cover what the real test model (float32 / int16 / int8, binary
versions 1 and 2, pre-norm, ReLU, computed positions) does not: binary
versions 3, 5 and 6, float16, bfloat16, int8 embeddings, aliases (shared and
tied tables, in bfloat16 and int8, one with a -128), JSON vocabularies, post-norm, the GELU forms and SiLU, learned
position tables, embedding norms, a zero start, attributes at the root,
string attributes, missing biases, an encoder alone, and every refusal.
"""

import json
import math
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))

import ctranslate2_files as files  # noqa: E402
from ctranslate2_reference import Ctranslate2Reference  # noqa: E402

D, HEADS, FF, LAYERS = 16, 4, 32, 2
SRC = ["<blank>", "<s>", "</s>"] + list("abcdefghij")
TGT = ["<blank>", "<s>", "</s>"] + list("klmnopqr")
SOURCES = ["a b c", "d e f g h", "j i", "a", "b b b c c", "x y a"]  # x, y: unknown
TARGETS = ["k l m", "n o p q", "r", "", "k k q r", "m"]


class Model:
    """The variables of a TransformerSpec as CTranslate2's writer names them."""

    def __init__(self, seed, pre_norm=True, activation=0, dtype="float32", tables=False,
                 embedding_norm=False, biases=True, vocab_sizes=None):
        self.rng = np.random.RandomState(seed)
        self.vars = {}
        self.aliases = []
        self.dtype = dtype
        self.pre_norm = pre_norm
        # SRC and TGT with the <unk> CTranslate2 appends, unless given
        src_v, tgt_v = vocab_sizes or (len(SRC) + 1, len(TGT) + 1)
        for scope, vocab, emb in (("encoder", src_v, "encoder/embeddings_0"),
                                  ("decoder", tgt_v, "decoder/embeddings")):
            self.matrix(emb + "/weight", vocab, D, 0.5)
            self.vars[scope + "/scale_embeddings"] = True
            self.vars[scope + "/num_heads"] = np.int16(HEADS)
            self.vars[scope + "/pre_norm"] = bool(pre_norm)
            self.vars[scope + "/activation"] = np.int8(activation)
            if pre_norm:
                self.norm(scope + "/layer_norm")
            if tables:
                self.vars[scope + "/position_encodings/encodings"] = self.rng.uniform(
                    -0.5, 0.5, (40, D)).astype(np.float32)
            if embedding_norm:
                self.norm(scope + "/layernorm_embedding")
            for i in range(LAYERS):
                p = "%s/layer_%d" % (scope, i)
                self.attention(p + "/self_attention", [3 * D, D], biases)
                if scope == "decoder":
                    self.attention(p + "/attention", [D, 2 * D, D], biases)
                self.norm(p + "/ffn/layer_norm")
                self.linear(p + "/ffn/linear_0", FF, D, True)
                self.linear(p + "/ffn/linear_1", D, FF, biases)
        self.vars["encoder/embeddings_merge"] = np.int8(1)
        self.vars["encoder/multi_query_attention"] = False
        self.vars["decoder/alignment_layer"] = np.int16(-1)
        self.vars["decoder/alignment_heads"] = np.int16(1)
        self.vars["decoder/start_from_zero_embedding"] = False
        self.linear("decoder/projection", tgt_v, D, True)
        # Sharp enough that greedy's choices are clear (see expectations), and
        # </s> (id 2) not always first.
        self.vars["decoder/projection/weight"] *= 4
        self.vars["decoder/projection/bias"][2] -= 2

    def matrix(self, name, rows, cols, scale):
        self.vars[name] = self.rng.uniform(-scale, scale, (rows, cols)).astype(np.float32)

    def norm(self, name):
        self.vars[name + "/gamma"] = self.rng.uniform(0.7, 1.3, D).astype(np.float32)
        self.vars[name + "/beta"] = self.rng.uniform(-0.2, 0.2, D).astype(np.float32)

    def linear(self, name, rows, cols, bias):
        self.matrix(name + "/weight", rows, cols, 1.0 / math.sqrt(cols))
        if bias:
            self.vars[name + "/bias"] = self.rng.uniform(-0.1, 0.1, rows).astype(np.float32)

    def attention(self, scope, rows, biases):
        self.norm(scope + "/layer_norm")
        for i, n in enumerate(rows + [D] if len(rows) == 1 else rows):
            self.linear("%s/linear_%d" % (scope, i), n, D, biases or i == 0)

    def cast(self):
        """The weights in self.dtype, as CTranslate2's quantization stores them:
        float16 / bfloat16 everything float; int8: each "weight" per row,
        scale = 127 / max|row|, q = round(w * scale); int16: one scale,
        2^10 / max|w|."""
        out = {}
        for name, value in self.vars.items():
            if not isinstance(value, np.ndarray) or value.dtype != np.float32 or value.ndim == 0:
                out[name] = value
                continue
            weight = name.endswith("/weight")
            if self.dtype == "int8" and weight:
                amax = np.abs(value).max(axis=1)
                scale = (127.0 / np.where(amax == 0, 127.0, amax)).astype(np.float32)
                out[name] = np.rint(value * scale[:, None]).astype(np.int8)
                out[name + "_scale"] = scale
            elif self.dtype == "int16" and weight:
                scale = np.float32(2 ** 10 / np.abs(value).max())
                out[name] = np.clip(np.rint(value * scale), -32768, 32767).astype(np.int16)
                out[name + "_scale"] = scale
            elif self.dtype == "float16":
                out[name] = value.astype(np.float16)
            elif self.dtype == "bfloat16":
                out[name] = files.BFloat16.from_float(value)
            else:
                out[name] = value
        return out


def write_case(work, name, model, version=6, spec="TransformerSpec", revision=7, config=None,
               vocab_json=False, shared=False, extra_files=None, drop=(), add=None,
               target_tokens=None):
    directory = os.path.join(work, name)
    os.makedirs(directory)
    variables = model.cast()
    for key in drop:
        variables.pop(key)
    variables.update(add or {})
    files.write(os.path.join(directory, "model.bin"), sorted(variables.items()),
                model.aliases, version=version, spec=spec, revision=revision)
    if config is not None:
        with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as f:
            json.dump(config, f, indent=2)
    if shared:
        files.write_vocabulary(directory, "shared_vocabulary", SRC + ["<unk>"], vocab_json)
    else:
        files.write_vocabulary(directory, "source_vocabulary", SRC, vocab_json)
        files.write_vocabulary(directory, "target_vocabulary", target_tokens or TGT, vocab_json)
    for file_name, text in (extra_files or {}).items():
        with open(os.path.join(directory, file_name), "w", encoding="utf-8") as f:
            f.write(text)
    return directory


def v6_config(**changes):
    config = {"add_source_bos": False, "add_source_eos": False, "bos_token": "<s>",
              "decoder_start_token": "<s>", "eos_token": "</s>", "layer_norm_epsilon": None,
              "multi_query_attention": False, "unk_token": "<unk>"}
    config.update(changes)
    return config


def expectations(directory, encoder_only=False, targets=None):
    targets = TARGETS if targets is None else targets
    ref = Ctranslate2Reference(directory)
    if encoder_only:
        with open(os.path.join(directory, "encode.in"), "w", encoding="utf-8") as f:
            f.write("".join(s + "\n" for s in SOURCES))
        with open(os.path.join(directory, "encode.expected"), "w") as f:
            for s in SOURCES:
                vectors = ref.encode(ref.source_ids(s.split()))
                f.write(" ".join("%.9g" % v for v in vectors.reshape(-1)) + "\n")
        return
    with open(os.path.join(directory, "score.in"), "w", encoding="utf-8") as f:
        f.write("".join("%s\t%s\n" % pair for pair in zip(SOURCES, targets)))
    with open(os.path.join(directory, "score.expected"), "w") as f:
        for s, t in zip(SOURCES, targets):
            values = ref.score(ref.source_ids(s.split()), ref.target_ids(t.split()))
            f.write(" ".join("%.9g" % v for v in values) + "\n")
    clear = []
    for s in SOURCES:
        tokens, margin = ref.greedy_with_margin(ref.source_ids(s.split()), 12)
        if margin > 1e-3:
            clear.append((s, " ".join(ref.tgt_vocab[t] for t in tokens)))
    with open(os.path.join(directory, "translate.in"), "w", encoding="utf-8") as f:
        f.write("".join(s + "\n" for s, _ in clear))
    with open(os.path.join(directory, "translate.expected"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for _, t in clear))


def refused(work, name, words, **case):
    model = case.pop("model", None) or Model(7)
    case.setdefault("config", v6_config())
    directory = write_case(work, name, model, **case)
    with open(os.path.join(directory, "refusal.expected"), "w") as f:
        f.write(words + "\n")
    return directory


# The shared vocabulary serves both sides: targets are its pieces.
SHARED_TARGETS = ["a b c", "d e", "j", "", "a a i j", "c"]


def share_and_tie(m):
    """One table (the shared vocabulary's) for both sides and the output
    layer, by aliases, as CTranslate2's writer stores equal variables."""
    shared = len(SRC) + 1
    m.matrix("decoder/embeddings/weight", shared, D, 0.5)
    m.vars["decoder/embeddings/weight"] *= 4  # the output layer too: sharp
    m.vars["decoder/projection/bias"] = m.rng.uniform(-0.1, 0.1, shared).astype(np.float32)
    m.vars["decoder/projection/bias"][2] -= 2
    m.vars.pop("encoder/embeddings_0/weight")
    m.vars.pop("decoder/projection/weight")
    m.aliases = [("decoder/projection/weight", "decoder/embeddings/weight"),
                 ("encoder/embeddings_0/weight", "decoder/embeddings/weight")]
    return m


def accepted(work):
    # Binary 6: float16, post-norm, GELU (erf), JSON vocabularies, </s> after
    # every source, an epsilon of its own.
    expectations(write_case(work, "v6-f16-postnorm-gelu", Model(1, pre_norm=False, activation=3,
                                                                dtype="float16"),
                            config=v6_config(add_source_eos=True, layer_norm_epsilon=1e-6),
                            vocab_json=True))
    # bfloat16, one vocabulary, one embedding table for both sides and the
    # output layer (aliases, as CTranslate2's writer stores equal variables),
    # learned positions, embedding norms, SiLU, unscaled embeddings, the
    # decoder started from </s>.
    m = share_and_tie(Model(2, activation=2, dtype="bfloat16", tables=True,
                            embedding_norm=True))
    m.vars["encoder/scale_embeddings"] = False
    m.vars["decoder/scale_embeddings"] = False
    d = write_case(work, "v6-bf16-shared-tied-tables", m, shared=True,
                   config=v6_config(decoder_start_token="</s>"))
    expectations(d, targets=SHARED_TARGETS)
    # The same tables in int8, as every Argos package holds them: at compute
    # type int8 the table is the output layer's int8 rows, held once; with a
    # -128 in it (which CTranslate2 never writes, and tessera's int8 kernels
    # do not take) it is quantized again, beside a float table.
    for name, lowest in (("v6-int8-shared-tied-tables", None),
                         ("v6-int8-shared-tied-table-128", -128)):
        m = share_and_tie(Model(8, dtype="int8"))
        add = None
        if lowest is not None:
            table = m.cast()["decoder/embeddings/weight"]
            table[5, 3] = lowest
            add = {"decoder/embeddings/weight": table}
        d = write_case(work, name, m, shared=True, config=v6_config(), add=add)
        expectations(d, targets=SHARED_TARGETS)
    # Binary 5: int8 weights and embeddings (per-row scales), a zero start,
    # GELU tanh, layers without biases, each attention's queries_scale.
    m = Model(3, activation=1, dtype="int8", biases=False)
    m.vars["decoder/start_from_zero_embedding"] = True
    for scope in ("encoder", "decoder"):
        for i in range(LAYERS):
            m.vars["%s/layer_%d/self_attention/queries_scale" % (scope, i)] = np.float32(
                1 / math.sqrt(D // HEADS))
    expectations(write_case(work, "v5-int8-zero-start", m, version=5,
                            config=v6_config(add_source_eos=True)))
    # An output layer of more values than tessera's load stages at once
    # (2^20: 70,001 x 16), int8 with a scale per row: at compute type f32 it
    # is read and dequantized a block of rows at a time.
    big = TGT + ["w%d" % i for i in range(70001 - len(TGT) - 1)]
    m = Model(9, dtype="int8", vocab_sizes=(len(SRC) + 1, len(big) + 1))
    expectations(write_case(work, "v6-int8-large-output-layer", m, config=v6_config(),
                            target_tokens=big))
    # Binary 3: item sizes for dtypes, a spec revision 4 with its attributes
    # at the root, the tokens as string variables and no config.json; int16
    # weights with one scale; GELU sigmoid.
    m = Model(4, activation=4, dtype="int16")
    for attr in ("num_heads", "pre_norm", "activation"):
        m.vars[attr] = m.vars.pop("encoder/" + attr)
        m.vars.pop("decoder/" + attr)
    m.vars["with_source_eos"] = True
    for key, token in (("unk_token", "<unk>"), ("bos_token", "<s>"), ("eos_token", "</s>")):
        m.vars[key] = np.frombuffer(token.encode(), dtype=np.int8).copy()
    expectations(write_case(work, "v3-int16-root-attributes", m, version=3, revision=4))
    # An encoder alone, for tessera encode; its pooling head is not run.
    m = Model(5, pre_norm=False, activation=3)
    for key in [k for k in m.vars if k.startswith("decoder/")]:
        m.vars.pop(key)
    m.vars["pooler_dense/weight"] = np.zeros((D, D), dtype=np.float32)
    m.vars["pooler_dense/bias"] = np.zeros(D, dtype=np.float32)
    m.vars["pooler_activation"] = np.int8(5)
    d = os.path.join(work, "encoder-alone")
    os.makedirs(d)
    files.write(os.path.join(d, "model.bin"), sorted(m.cast().items()), version=6,
                spec="TransformerEncoderSpec", revision=1)
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump({"unk_token": "<unk>", "bos_token": "<s>", "eos_token": "</s>",
                   "layer_norm_epsilon": None, "multi_query_attention": False}, f)
    files.write_vocabulary(d, "vocabulary", SRC, False)
    expectations(d, encoder_only=True)


def refusals(work):
    layer = "encoder/layer_0/self_attention/"
    refused(work, "relative-positions", "relative positions",
            add={layer + "relative_position_keys": np.zeros((9, 4), np.float32)})
    refused(work, "rotary", "rotary positions", add={layer + "rotary_dim": np.int32(4)})
    refused(work, "gated-ffn", "gated FFN",
            add={"encoder/layer_0/ffn/linear_0_noact/weight": np.zeros((FF, D), np.float32)})
    refused(work, "grouped-heads", "multi-query or grouped-query",
            add={"decoder/layer_0/self_attention/num_heads_kv": np.int32(1)})
    refused(work, "rmsnorm", "RMSNorm", drop=["encoder/layer_1/ffn/layer_norm/beta"])
    refused(work, "source-features", "several source features",
            add={"encoder/embeddings_1/weight": np.zeros((5, D), np.float32)})
    refused(work, "whisper", "a speech model", spec="WhisperSpec", revision=3)
    refused(work, "decoder-only", "a decoder-only model", spec="TransformerDecoderSpec",
            revision=8)
    refused(work, "binary-version-7", "binary version 7", version=7)
    refused(work, "revision-8", "revision 8", revision=8)
    refused(work, "unknown-variable", "decoder/layer_0/cross_gate",
            add={"decoder/layer_0/cross_gate": np.zeros(D, np.float32)})
    refused(work, "scaled-outputs", "scaled decoder output",
            add={"decoder/scale_outputs": np.float32(2.0)})
    refused(work, "alibi", "ALiBi", add={"decoder/alibi": True})
    refused(work, "sliding-window", "sliding-window",
            add={"decoder/sliding_window": np.int32(16)})
    refused(work, "tanh-ffn", "tanh", add={"encoder/activation": np.int8(5),
                                           "decoder/activation": np.int8(5)})
    refused(work, "heads-differ", "differ", add={"decoder/num_heads": np.int16(2)})
    refused(work, "int32-weight", "int32",
            add={"decoder/projection/weight": np.zeros((len(TGT) + 1, D), np.int32)})
    m = Model(7, dtype="int8")
    refused(work, "missing-scale", "without its scale", model=m,
            drop=["encoder/layer_0/ffn/linear_0/weight_scale"])
    refused(work, "source-bos", "add_source_bos", config=v6_config(add_source_bos=True))
    refused(work, "start-token-null", "decoder_start_token null",
            config=v6_config(decoder_start_token=None))
    refused(work, "start-token-absent", "'<go>' is not in the target vocabulary",
            config=v6_config(decoder_start_token="<go>"))
    refused(work, "no-config", "config.json: missing", config=None)
    d = refused(work, "vocabulary-size", "vocabulary has", config=v6_config())
    with open(os.path.join(d, "target_vocabulary.txt"), "a") as f:
        f.write("extra\n")
    d = refused(work, "truncated", "truncated")
    patch(d, lambda data: data[:len(data) // 2])
    d = refused(work, "dtype-id", "dtype id 9")
    # A scalar's dtype id follows its name's NUL and its rank (0).
    name = b"decoder/alignment_heads\0"
    patch(d, lambda data: data[:data.index(name) + len(name) + 1] + b"\x09" +
          data[data.index(name) + len(name) + 2:])


def patch(directory, change):
    path = os.path.join(directory, "model.bin")
    data = open(path, "rb").read()
    open(path, "wb").write(change(data))


def main():
    work = sys.argv[1]
    accepted(work)
    refusals(work)


if __name__ == "__main__":
    main()
