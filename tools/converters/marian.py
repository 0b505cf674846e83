"""Converts a Marian (C++) transformer, as OPUS-MT ships it, into a tessera model directory.

Input: a directory holding one *.npz (or the .npz path itself) whose item
"special:model.yml" holds the model's options, decoder.yml (its `vocabs` give
the source and target vocabularies: Marian's *.yml, or *.spm SentencePiece
models, whose ids are then Marian's) or a single vocabulary *.yml, and
optionally source.spm / target.spm (or one *.spm for both sides). Output:
config.json, model.safetensors (F32), vocab.src.txt / vocab.tgt.txt in
Marian's id order, and the SentencePiece models copied with config.json's
`tokenizer` naming them (files.plan_tokenizer: --source-spm /
--target-spm take their place).

Marian's semantics, and where Marian's sources define them:
- tensors (src/models/transformer.h, src/layers/generic.h): W stored [in, out]
  (y = x W + b), biases and LayerNorm parameters [1, d]; written transposed
  to [out, in], q/k/v stacked into in_proj;
- LayerNorm eps 1e-6 (layerNorm() in src/layers/generic.h), variance form;
- embeddings times sqrt(dim-emb), sinusoid with sin in the first half and cos in
  the second, frequencies exp(-i ln(10000) / (d/2 - 1)) (SinusoidalPositionEmbeddings
  in src/tensors/cpu/tensor_operators.cpp): position_encoding "sinusoid_halves_t2t";
- the decoder's first input is a zero embedding (src/models/decoder.h):
  decoder_start "zeros"; </s> is appended to every source: source_suffix;
- <unk> is suppressed after the log-softmax unless allow-unk
  (src/translator/beam_search.cpp): banned_target_ids, mode log_probs;
- transformer-ffn-activation gelu is x*sigmoid(1.702x) up to Marian v1.12.2 and
  the erf form from v1.12.3 (commit d225c24d): activation "gelu_sigmoid" or
  "gelu", told by model.yml's `version`, or --marian-gelu (gelu_form());
- transformer-postprocess-emb "n" (with or without "d"): a LayerNorm after
  embedding + position in both stacks, {encoder,decoder}_emb_ln_{scale,bias}_pre
  (preProcess() in src/models/transformer.h): embedding_norm;
- the output layer is the target embedding (tied-embeddings,
  tied-embeddings-all), or decoder_ff_logit_out_W [d, V] (models saved before
  2019) / decoder_ff_logit_out_Wt [V, d] (src/layers/output.cpp), plus
  decoder_ff_logit_out_b unless output-omit-bias.
Everything else tessera cannot run is refused with one line naming the option.
Pre-norm models convert with a note: Marian's own step-by-step decoding (and
all of Marian before 1.11) takes pre-norm self-attention keys and values from
the un-normalised input, where tessera normalises them (prenorm_notes).

Needs numpy and yaml only (no torch); python3-sentencepiece to read an *.spm
vocabulary and to check the SentencePiece models copied.
"""

import glob
import json
import os
import re
import sys

import numpy as np

from .errors import PROG, ConvertError, note, note_unused, one_line
from .files import carried_spm, plan_tokenizer, resolve_spm, spm_pieces, write_model

META_ITEM = "special:model.yml"
LAYER_NORM_EPS = 1e-6
MAX_POSITIONS = 1024
MAX_POSITIONS_LIMIT = 65536
# Marian's gelu: x*sigmoid(1.702x) before v1.12.3, erf from it (gelu_form()).
GELU_ERF_SINCE = (1, 12, 3)
GELU_FORMS = {"sigmoid": "gelu_sigmoid", "erf": "gelu"}


# ---- finding and reading the files ------------------------------------------

def load_yaml(path):
    import yaml
    try:
        with open(path, encoding="utf-8") as f:
            value = yaml.safe_load(f)
    except OSError as e:
        raise ConvertError("%s: %s" % (path, e.strerror))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConvertError("%s: not valid YAML: %s" % (path, one_line(e)))
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise ConvertError("%s: expected a YAML mapping" % path)
    return value


def detect(path):
    """True for a directory or an .npz file (tried after the other directory families)."""
    return os.path.isdir(path) or path.endswith(".npz")


def add_options(parser):
    """--marian-gelu (tessera-convert --from marian --help)."""
    parser.add_argument("--marian-gelu", choices=sorted(GELU_FORMS),
                        help="which gelu a 'transformer-ffn-activation: gelu' model was trained "
                             "with: sigmoid (x*sigmoid(1.702x), Marian before v1.12.3) or erf "
                             "(from v1.12.3); default: from model.yml's version")


def locate(input_path):
    """(npz path, decoder.yml path or None, model directory)."""
    if os.path.isdir(input_path):
        directory = input_path
        decoder = os.path.join(directory, "decoder.yml")
        decoder = decoder if os.path.isfile(decoder) else None
        npz = sorted(glob.glob(os.path.join(glob.escape(directory), "*.npz")))
        if decoder and len(npz) != 1:
            models = load_yaml(decoder).get("models")
            if isinstance(models, list) and len(models) == 1 and isinstance(models[0], str):
                npz = [os.path.join(directory, models[0])]
        if len(npz) != 1:
            raise ConvertError("%s: expected one *.npz model, found %s"
                               % (input_path, ", ".join(os.path.basename(p) for p in npz) or "none"))
        return npz[0], decoder, directory
    if not os.path.isfile(input_path):
        raise ConvertError("%s: no such file or directory" % input_path)
    directory = os.path.dirname(input_path) or "."
    decoder = os.path.join(directory, "decoder.yml")
    return input_path, decoder if os.path.isfile(decoder) else None, directory


def read_npz(path):
    """(name -> array, the model.yml text)."""
    try:
        with np.load(path, allow_pickle=False) as archive:
            items = {name: archive[name] for name in archive.files}
    except OSError as e:
        raise ConvertError("%s: %s" % (path, e.strerror or one_line(e)))
    except Exception as e:  # a corrupt zip or npy header fails anywhere in numpy
        raise ConvertError("%s: cannot read as an npz file: %s" % (path, one_line(e)))
    meta = items.pop(META_ITEM, None)
    if meta is None:
        raise ConvertError("%s: no '%s' item: not a Marian model, or saved without its options"
                           % (path, META_ITEM))
    if meta.dtype not in (np.int8, np.uint8) or meta.ndim != 1:
        raise ConvertError("%s: item '%s' is %s %s, expected a 1-D int8 array of YAML text"
                           % (path, META_ITEM, meta.dtype, list(meta.shape)))
    try:
        text = meta.tobytes().split(b"\0")[0].decode("utf-8")
    except UnicodeDecodeError:
        raise ConvertError("%s: item '%s' is not UTF-8 text" % (path, META_ITEM))
    return items, text


def model_options(text, npz_path):
    import yaml
    try:
        options = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConvertError("%s: '%s' is not valid YAML: %s" % (npz_path, META_ITEM, one_line(e)))
    if not isinstance(options, dict):
        raise ConvertError("%s: '%s' is not a YAML mapping" % (npz_path, META_ITEM))
    return options


def vocab_paths(directory, decoder_path, decoder, options):
    """(source vocab path, target vocab path)."""
    if decoder_path:
        vocabs = decoder.get("vocabs")
        where = "decoder.yml"
    else:
        vocabs = None
        where = "the directory"
    if vocabs is None:
        found = sorted(p for p in glob.glob(os.path.join(glob.escape(directory), "*.yml"))
                       if os.path.basename(p) != "decoder.yml")
        # The training paths model.yml names, looked for next to the model.
        named = [os.path.join(directory, os.path.basename(str(v)))
                 for v in options.get("vocabs") or []]
        if len(named) == 2 and all(os.path.isfile(p) for p in named):
            return named[0], named[1]
        if len(found) != 1:
            raise ConvertError("%s: cannot tell the vocabularies (%s *.yml files besides "
                               "decoder.yml); give a decoder.yml with 'vocabs'"
                               % (directory, len(found)))
        return found[0], found[0]
    if not isinstance(vocabs, list) or len(vocabs) != 2 or not all(isinstance(v, str) for v in vocabs):
        raise ConvertError("%s: 'vocabs' must list two files (source, target), got %r" % (where, vocabs))
    paths = [v if os.path.isabs(v) else os.path.join(directory, v) for v in vocabs]
    for path in paths:
        if not path.endswith((".yml", ".yaml", ".json", ".spm")):
            raise ConvertError("%s: vocabulary '%s' is neither a *.yml vocabulary nor a *.spm "
                               "SentencePiece model (tessera-convert reads no text vocabularies)"
                               % (where, os.path.basename(path)))
    return paths[0], paths[1]


def read_vocab(path):
    """The pieces in id order. Keys are read as the text written (a plain `on`
    or `1` is the piece "on" or "1", as Marian's yaml-cpp reads it); ids must
    be 0..V-1, each once. An *.spm vocabulary is the SentencePiece model's
    pieces in its id order (Marian's SentencePieceVocab: its ids are the
    model's)."""
    if path.endswith(".spm"):
        return check_pieces(spm_pieces(path, "vocabulary"), os.path.basename(path))
    import yaml
    try:
        with open(path, encoding="utf-8") as f:
            raw = yaml.load(f, Loader=yaml.BaseLoader)
    except OSError as e:
        raise ConvertError("%s: %s" % (path, e.strerror))
    except (yaml.YAMLError, UnicodeDecodeError) as e:
        raise ConvertError("%s: not valid YAML: %s" % (path, one_line(e)))
    name = os.path.basename(path)
    if not isinstance(raw, dict) or not raw:
        raise ConvertError("%s: expected a mapping of pieces to ids" % name)
    pieces = {}
    for piece, value in raw.items():
        if not isinstance(piece, str) or not isinstance(value, str) or not value.isdigit():
            raise ConvertError("%s: entry %r: %r is not a non-negative integer id" % (name, piece, value))
        token_id = int(value)
        if token_id in pieces:
            raise ConvertError("%s: id %d is given to both %r and %r"
                               % (name, token_id, pieces[token_id], piece))
        pieces[token_id] = piece
    size = len(pieces)
    if max(pieces) != size - 1:
        missing = min(set(range(size)) - set(pieces))
        raise ConvertError("%s: ids are not 0..%d without gaps (no piece has id %d)"
                           % (name, size - 1, missing))
    return check_pieces([pieces[i] for i in range(size)], name)


def check_pieces(pieces, name):
    for token_id, piece in enumerate(pieces):
        if not piece or any(c.isspace() for c in piece):
            raise ConvertError("%s: piece %r (id %d) is empty or holds white space, which a "
                               "one-token-per-line vocabulary cannot hold" % (name, piece, token_id))
    return pieces


def fit_vocab(pieces, rows, dim_vocab, name, side):
    """The pieces of a vocabulary whose embedding table has `rows` rows. Marian
    keeps only the ids below dim-vocabs (DefaultVocab::load's maxSize), so a
    longer vocabulary is cut there; any other difference is an error."""
    if len(pieces) > rows and dim_vocab == rows:
        note("%s: keeping the first %d of %d pieces (dim-vocabs)" % (name, rows, len(pieces)))
        return pieces[:rows]
    if len(pieces) != rows:
        raise ConvertError("%s: %d pieces, but the %s embeddings have %d rows"
                           % (name, len(pieces), side, rows))
    return pieces


def special_id(pieces, piece, nematus_piece, nematus_id, name):
    """Marian's id of </s> or <unk> (DefaultVocab::addRequiredVocabulary: the
    Nematus spelling is accepted at its fixed id)."""
    if len(pieces) > nematus_id and pieces[nematus_id] == nematus_piece:
        return nematus_id
    try:
        return pieces.index(piece)
    except ValueError:
        raise ConvertError("%s: no entry for %s" % (name, piece))


# ---- the options --------------------------------------------------------------

def refuse(option, value, why):
    raise ConvertError("model.yml: %s: %s: %s" % (option, json.dumps(value), why))


def flag(options, key):
    value = options.get(key, False)
    if value is None:
        return False
    if not isinstance(value, bool):
        refuse(key, value, "expected true or false")
    return value


def integer(options, key, default=None):
    value = options.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        if value is None:
            raise ConvertError("model.yml: %s: missing" % key)
        refuse(key, value, "expected an integer")
    return value


def text(options, key, default):
    value = options.get(key, default)
    if value is None:
        return ""
    if not isinstance(value, str):
        refuse(key, value, "expected a string")
    return value


def gelu_form(options, override):
    """"gelu_sigmoid" or "gelu": which gelu a Marian model was trained with.

    Marian's gelu() was x * sigmoid(1.702 x) (SwishNodeOp with 1.702,
    src/graph/expression_operators.cpp) until commit d225c24d (2023-03-01),
    which made it the erf form (GeluNodeOp, src/graph/node_operators_unary.h)
    and set VERSION to v1.12.3: the release v1.12.0 and v1.12.1-2 still have the
    sigmoid. model.yml's `version` is the Marian that saved the model
    (EncoderDecoder::getModelParameters: buildVersion(), "v1.12.0 65bf82ff
    2023-02-21 09:56:29 -0800"), so the last training ran with its gelu."""
    if override:
        version = marian_version(options.get("version"), patch=True)
        implied = None if version is None else ("erf" if version >= GELU_ERF_SINCE else "sigmoid")
        if implied and implied != override:
            note("--marian-gelu %s overrides the %s form model.yml's version %s implies"
                 % (override, implied, str(options.get("version")).split()[0]))
        return GELU_FORMS[override]
    version = marian_version(options.get("version"), patch=True)
    if version is None:
        refuse("transformer-ffn-activation", "gelu",
               "model.yml has no Marian version (%s) to tell which gelu the model was trained "
               "with: x*sigmoid(1.702x) before v1.12.3, the erf form from v1.12.3; pass "
               "--marian-gelu sigmoid or --marian-gelu erf"
               % ("version: %s" % json.dumps(options["version"]) if options.get("version")
                  else "no 'version' key"))
    return GELU_FORMS["erf" if version >= GELU_ERF_SINCE else "sigmoid"]


def embedding_norm(options):
    """True when transformer-postprocess-emb holds a LayerNorm. Marian applies
    these ops with preProcess() (src/models/transformer.h, encoder and decoder
    alike): 'd' dropout, 'n' layerNorm(prefix_ + "_emb", "_pre"), so the
    tensors are {encoder,decoder}_emb_ln_{scale,bias}_pre; 'r' an RMSNorm;
    anything else aborts Marian."""
    emb = text(options, "transformer-postprocess-emb", "d")
    if "r" in emb:
        refuse("transformer-postprocess-emb", emb, "an RMSNorm after the embeddings is not supported")
    if set(emb) - set("dn") or emb.count("n") > 1:
        refuse("transformer-postprocess-emb", emb,
               "only 'd' (dropout), and at most one 'n' (a LayerNorm after the embeddings), "
               "are supported")
    return "n" in emb


def architecture(options, marian_gelu=None):
    """What the options say, checked: a dict of the choices tessera needs."""
    kind = options.get("type")
    if kind != "transformer":
        refuse("type", kind, "only 'transformer' is supported (RNN and other model types are not)")
    autoreg = text(options, "transformer-decoder-autoreg", "self-attention")
    if autoreg != "self-attention":
        refuse("transformer-decoder-autoreg", autoreg,
               "only 'self-attention' is supported (no average attention or RNN decoder layers)")
    depth = integer(options, "transformer-ffn-depth", 2)
    if depth != 2:
        refuse("transformer-ffn-depth", depth, "only 2 (two linear layers per FFN) is supported")
    depth = integer(options, "transformer-decoder-ffn-depth", 0)
    if depth not in (0, 2):
        refuse("transformer-decoder-ffn-depth", depth,
               "only 0 (as the encoder) or 2 (two linear layers per FFN) is supported")
    for key, why in (("right-left", "right-to-left decoding is not supported"),
                     ("transformer-pool", "pooling instead of cross-attention is not supported"),
                     ("transformer-no-projection", "attention without its output projection is not supported"),
                     ("transformer-train-position-embeddings", "learned positions are not supported"),
                     ("transformer-train-positions", "learned positions are not supported"),
                     ("transformer-disable-position-embeddings", "a model without positions is not supported"),
                     ("transformer-no-bias", "linear layers without biases are not supported"),
                     ("transformer-no-affine", "LayerNorm without scale and bias is not supported"),
                     ("ulr", "universal language representation embeddings are not supported")):
        if flag(options, key):
            refuse(key, True, why)
    tied_layers = options.get("transformer-tied-layers") or []
    if tied_layers:
        refuse("transformer-tied-layers", tied_layers, "tied decoder layers are not supported")
    mask = text(options, "transformer-attention-mask", "default")
    if mask != "default":
        refuse("transformer-attention-mask", mask, "only 'default' is supported (no ALiBi)")
    if flag(options, "alibi"):
        refuse("alibi", True, "ALiBi attention is not supported")
    for key in ("lemma-dim-emb", "factors-dim-emb"):
        if options.get(key):
            refuse(key, options[key], "factored vocabularies are not supported")

    activation = text(options, "transformer-ffn-activation", "swish")
    activations = {"swish": "silu", "relu": "relu"}
    if activation == "gelu":
        activations["gelu"] = gelu_form(options, marian_gelu)
    if activation not in activations:
        refuse("transformer-ffn-activation", activation, "only swish, relu and gelu are supported")

    pre = text(options, "transformer-preprocess", "")
    post = text(options, "transformer-postprocess", "dan")
    if (pre, post.replace("d", "")) == ("", "an"):
        norm_first = False
    elif (pre.replace("d", ""), post.replace("d", "")) == ("n", "a"):
        norm_first = True
    else:
        refuse("transformer-preprocess/transformer-postprocess", "%s/%s" % (pre, post),
               "only ''/'dan' (post-norm) and 'n'/'da' (pre-norm) are supported")
    emb_norm = embedding_norm(options)
    top = text(options, "transformer-postprocess-top", "")
    if top.replace("d", "") not in ("", "n"):
        refuse("transformer-postprocess-top", top, "only '' or 'n' (a final LayerNorm) is supported")

    tie_all = flag(options, "tied-embeddings-all")
    return {
        "dim": integer(options, "dim-emb"),
        "heads": integer(options, "transformer-heads"),
        "ffn": integer(options, "transformer-dim-ffn"),
        "decoder_ffn": integer(options, "transformer-decoder-dim-ffn", 0),
        "enc_depth": integer(options, "enc-depth"),
        "dec_depth": integer(options, "dec-depth"),
        "activation": activations[activation],
        "norm_first": norm_first,
        "top_norm": "n" in top,
        "emb_norm": emb_norm,
        "share_embeddings": tie_all or flag(options, "tied-embeddings-src"),
        "tie_output": tie_all or flag(options, "tied-embeddings"),
        "output_bias": not flag(options, "output-omit-bias"),
        "max_length": options.get("max-length"),
    }


# ---- the tensors --------------------------------------------------------------

class Tensors:
    """Marian's items, taken by name with their expected shapes."""

    def __init__(self, items):
        self.items = items
        self.used = set()

    def get(self, name, shape):
        array = self.items.get(name)
        if array is None:
            raise ConvertError("missing tensor '%s' (expected shape %s)" % (name, list(shape)))
        if list(array.shape) != list(shape):
            raise ConvertError("tensor '%s' has shape %s, expected %s"
                               % (name, list(array.shape), list(shape)))
        if array.dtype not in (np.float32, np.float16):
            raise ConvertError("tensor '%s' has dtype %s, expected float32 or float16" % (name, array.dtype))
        self.used.add(name)
        return array.astype(np.float32)

    def has(self, name):
        return name in self.items


def attention(t, marian, torch_prefix, d, out):
    """Marian's {prefix}_{Wq,bq,Wk,bk,Wv,bv,Wo,bo} as in_proj / out_proj."""
    weights = [t.get("%s_W%s" % (marian, p), [d, d]).T for p in "qkv"]
    biases = [t.get("%s_b%s" % (marian, p), [1, d]).reshape(-1) for p in "qkv"]
    out[torch_prefix + ".in_proj_weight"] = np.concatenate(weights)
    out[torch_prefix + ".in_proj_bias"] = np.concatenate(biases)
    out[torch_prefix + ".out_proj.weight"] = t.get(marian + "_Wo", [d, d]).T
    out[torch_prefix + ".out_proj.bias"] = t.get(marian + "_bo", [1, d]).reshape(-1)


def layer_norm(t, marian, torch_prefix, d, out, suffix=""):
    out[torch_prefix + ".weight"] = t.get(marian + "_ln_scale" + suffix, [1, d]).reshape(-1)
    out[torch_prefix + ".bias"] = t.get(marian + "_ln_bias" + suffix, [1, d]).reshape(-1)


def ffn(t, marian, torch_prefix, d, d_ff, out):
    out[torch_prefix + ".linear1.weight"] = t.get(marian + "_W1", [d, d_ff]).T
    out[torch_prefix + ".linear1.bias"] = t.get(marian + "_b1", [1, d_ff]).reshape(-1)
    out[torch_prefix + ".linear2.weight"] = t.get(marian + "_W2", [d_ff, d]).T
    out[torch_prefix + ".linear2.bias"] = t.get(marian + "_b2", [1, d]).reshape(-1)


def embedding_shapes(t, arch):
    """(source table name, target table name) and the vocabulary sizes they give."""
    if arch["share_embeddings"]:
        names = ("Wemb", "Wemb")
    else:
        names = ("encoder_Wemb", "decoder_Wemb")
    sizes = []
    for name in names:
        array = t.items.get(name)
        if array is None:
            raise ConvertError("missing tensor '%s' (the %s embeddings)"
                               % (name, "shared" if arch["share_embeddings"] else name.split("_")[0]))
        if array.ndim != 2 or array.shape[1] != arch["dim"]:
            raise ConvertError("tensor '%s' has shape %s, expected [vocab, %d] (dim-emb)"
                               % (name, list(array.shape), arch["dim"]))
        sizes.append(array.shape[0])
    return names, sizes


def select_tensors(t, arch, src_vocab, tgt_vocab):
    """tessera's tensors (docs/model-format.md names), [out, in], float32."""
    d, d_ff = arch["dim"], arch["ffn"]
    suffix = "_pre" if arch["norm_first"] else ""
    out = {}
    (src_name, tgt_name), _ = embedding_shapes(t, arch)
    out["tgt_tok_emb.embedding.weight"] = t.get(tgt_name, [tgt_vocab, d])
    if not arch["share_embeddings"]:
        out["src_tok_emb.embedding.weight"] = t.get(src_name, [src_vocab, d])
    for i in range(arch["enc_depth"]):
        marian, torch = "encoder_l%d" % (i + 1), "transformer.encoder.layers.%d" % i
        attention(t, marian + "_self", torch + ".self_attn", d, out)
        layer_norm(t, marian + "_self_Wo", torch + ".norm1", d, out, suffix)
        ffn(t, marian + "_ffn", torch, d, d_ff, out)
        layer_norm(t, marian + "_ffn_ffn", torch + ".norm2", d, out, suffix)
    for i in range(arch["dec_depth"]):
        marian, torch = "decoder_l%d" % (i + 1), "transformer.decoder.layers.%d" % i
        attention(t, marian + "_self", torch + ".self_attn", d, out)
        layer_norm(t, marian + "_self_Wo", torch + ".norm1", d, out, suffix)
        attention(t, marian + "_context", torch + ".multihead_attn", d, out)
        layer_norm(t, marian + "_context_Wo", torch + ".norm2", d, out, suffix)
        ffn(t, marian + "_ffn", torch, d, d_ff, out)
        layer_norm(t, marian + "_ffn_ffn", torch + ".norm3", d, out, suffix)
    if arch["emb_norm"]:
        layer_norm(t, "encoder_emb", "transformer.encoder.embedding_norm", d, out, "_pre")
        layer_norm(t, "decoder_emb", "transformer.decoder.embedding_norm", d, out, "_pre")
    if arch["top_norm"]:
        layer_norm(t, "encoder_top", "transformer.encoder.norm", d, out)
        layer_norm(t, "decoder_top", "transformer.decoder.norm", d, out)
    if not arch["tie_output"]:
        if t.has("decoder_ff_logit_out_Wt"):
            out["generator.weight"] = t.get("decoder_ff_logit_out_Wt", [tgt_vocab, d])
        elif t.has("decoder_ff_logit_out_W"):
            out["generator.weight"] = t.get("decoder_ff_logit_out_W", [d, tgt_vocab]).T
        else:
            raise ConvertError("missing tensor 'decoder_ff_logit_out_W' (expected shape %s; the "
                               "output layer of a model without tied-embeddings)" % ([d, tgt_vocab],))
    if arch["output_bias"]:
        out["generator.bias"] = t.get("decoder_ff_logit_out_b", [1, tgt_vocab]).reshape(-1)
    return {name: np.ascontiguousarray(array, dtype=np.float32) for name, array in out.items()}


# ---- the conversion -----------------------------------------------------------

def build_config(arch, src_vocab, tgt_vocab, src_pieces, tgt_pieces, decoder, vocab_names):
    d, heads = arch["dim"], arch["heads"]
    if heads < 1 or d % heads:
        raise ConvertError("model.yml: transformer-heads: %d does not divide dim-emb (%d)" % (heads, d))
    if d % 2 or d < 4:
        raise ConvertError("model.yml: dim-emb: %d: Marian's sinusoid needs an even width >= 4" % d)
    if arch["decoder_ffn"] not in (0, arch["ffn"]):
        raise ConvertError("model.yml: transformer-decoder-dim-ffn: %d differs from transformer-dim-ffn "
                           "(%d); tessera has one FFN width" % (arch["decoder_ffn"], arch["ffn"]))
    for key in ("enc_depth", "dec_depth"):
        if arch[key] < 1:
            raise ConvertError("model.yml: %s: %d: at least one layer is needed"
                               % (key.replace("_", "-"), arch[key]))
    src_name, tgt_name = vocab_names
    src_eos = special_id(src_pieces, "</s>", "eos", 0, src_name)
    eos = special_id(tgt_pieces, "</s>", "eos", 0, tgt_name)
    unk = special_id(tgt_pieces, "<unk>", "UNK", 1, tgt_name)
    src_unk = special_id(src_pieces, "<unk>", "UNK", 1, src_name)
    if unk != src_unk:
        note("<unk> is %d in the source vocabulary and %d in the target one; unk_id is the "
             "target's" % (src_unk, unk))
    # bos_id is unused with decoder_start "zeros" but must be a target id other than eos.
    bos = tgt_pieces.index("<s>") if "<s>" in tgt_pieces else unk
    # pad_id is only a valid id to tessera; Marian pads its batches with id 0.
    pad = 0
    if "<pad>" in src_pieces and "<pad>" in tgt_pieces and \
            src_pieces.index("<pad>") == tgt_pieces.index("<pad>"):
        pad = tgt_pieces.index("<pad>")
    if unk >= src_vocab:
        raise ConvertError("%s: <unk> has id %d, outside the source vocabulary (%d)"
                           % (tgt_name, unk, src_vocab))
    allow_unk = decoder.get("allow-unk", False) is True
    # Marian's sinusoid has no length limit and max-length only filtered the
    # training data: 1024, or more when the model was trained on longer.
    max_length = arch["max_length"]
    max_positions = MAX_POSITIONS
    if isinstance(max_length, int) and not isinstance(max_length, bool):
        max_positions = max(MAX_POSITIONS, min(max_length, MAX_POSITIONS_LIMIT))
    config = {
        "d_model": d,
        "n_heads": heads,
        "d_ff": arch["ffn"],
        "n_encoder_layers": arch["enc_depth"],
        "n_decoder_layers": arch["dec_depth"],
        "src_vocab_size": src_vocab,
        "tgt_vocab_size": tgt_vocab,
        "max_positions": max_positions,
        "activation": arch["activation"],
        "norm_first": arch["norm_first"],
        "layer_norm_eps": LAYER_NORM_EPS,
        "layer_norm_form": "variance",
        "scale_embedding": True,
        "bos_id": bos,
        "eos_id": eos,
        "pad_id": pad,
        "unk_id": unk,
        "family": "marian",
        "position_encoding": "sinusoid_halves_t2t",
        "share_embeddings": arch["share_embeddings"],
        "tie_output_projection": arch["tie_output"],
        "decoder_start": "zeros",
        "source_suffix": [src_eos],
        "banned_target_ids": [] if allow_unk else [unk],
        "banned_target_ids_mode": "log_probs",
    }
    return config


def marian_version(text, patch=False):
    """(major, minor) from model.yml's `version` ("v1.10.0 6f6d484 2021-02-06 ..."), or
    (major, minor, patch) with patch=True (a missing patch is 0); None if unparsable."""
    match = re.match(r"\s*v?(\d+)\.(\d+)(?:\.(\d+))?", str(text or ""))
    if not match:
        return None
    parts = (int(match.group(1)), int(match.group(2)))
    return parts + (int(match.group(3) or 0),) if patch else parts


def prenorm_notes(version_text):
    """Pre-norm self-attention in Marian's transformer.h: before 1.11 its keys and
    values were the un-normalised layer input (LayerAttention); since 1.11 they
    are normalised, as tessera computes, except in Marian's own step-by-step
    decoding, where DecoderLayerSelfAttention's history stays un-normalised."""
    version = marian_version(version_text)
    if version is not None and version < (1, 11):
        note("model.yml: version %s: Marian before 1.11 computed pre-norm self-attention keys "
             "and values from the un-normalised input; tessera normalises them, so this "
             "model's outputs will differ from Marian's" % str(version_text).split()[0])
    else:
        note("pre-norm: marian-decoder computes decoder self-attention keys and values of "
             "steps after the first from the un-normalised input; tessera normalises them, "
             "as Marian's training and scoring do, so translations may differ from Marian's")


def spm_of_input(directory, vocab_paths):
    """(source, target) SentencePiece models the input carries: a side's *.spm
    vocabulary, else model_files.carried_spm."""
    carried = carried_spm(directory)
    return tuple(path if path.endswith(".spm") else found
                 for path, found in zip(vocab_paths, carried))


def convert(input_path, out_dir, note=note, marian_gelu=None, source_spm=None, target_spm=None):
    """Converts the Marian model input_path into out_dir; returns the config.
    source_spm, target_spm: SentencePiece models given in place of the input's."""
    npz_path, decoder_path, directory = locate(input_path)
    decoder = load_yaml(decoder_path) if decoder_path else {}
    models = decoder.get("models")
    if isinstance(models, list) and len(models) > 1:
        raise ConvertError("decoder.yml: models: an ensemble of %d models; tessera runs one" % len(models))
    items, meta = read_npz(npz_path)
    options = model_options(meta, npz_path)
    arch = architecture(options, marian_gelu)
    t = Tensors(items)
    if t.has("Wpos"):
        raise ConvertError("tensor 'Wpos': learned positions are not supported")
    _, (src_rows, tgt_rows) = embedding_shapes(t, arch)
    src_path, tgt_path = vocab_paths(directory, decoder_path, decoder, options)
    spm_files = resolve_spm((source_spm, target_spm), spm_of_input(directory, (src_path, tgt_path)),
                            note)
    src_pieces = read_vocab(src_path)
    tgt_pieces = src_pieces if tgt_path == src_path else read_vocab(tgt_path)
    names = (os.path.basename(src_path), os.path.basename(tgt_path))
    dim_vocabs = options.get("dim-vocabs")
    if not (isinstance(dim_vocabs, list) and len(dim_vocabs) == 2):
        dim_vocabs = [0, 0]
    src_pieces = fit_vocab(src_pieces, src_rows, dim_vocabs[0], names[0], "source")
    tgt_pieces = fit_vocab(tgt_pieces, tgt_rows, dim_vocabs[1], names[1], "target")
    if arch["share_embeddings"] and src_pieces != tgt_pieces:
        raise ConvertError("%s and %s differ, but the model shares one embedding table "
                           "(tied-embeddings-all / tied-embeddings-src)" % names)
    config = build_config(arch, src_rows, tgt_rows, src_pieces, tgt_pieces, decoder, names)
    tensors = select_tensors(t, arch, src_rows, tgt_rows)
    note_unused(note, sorted(set(items) - t.used))
    if arch["norm_first"]:
        prenorm_notes(options.get("version"))
    if any(len(p) == 6 and p.startswith("<0x") and p.endswith(">") for p in tgt_pieces):
        note("the target vocabulary has byte pieces <0x..>; Marian (since 2021) also suppresses "
             "the control ones unless allow-special, which this conversion does not do")
    for key, flag_name in (("beam-size", "--beam"), ("normalize", "--length-penalty")):
        if key in decoder:
            note("decoder.yml asks for %s %s (tessera translate %s is the nearest option)"
                 % (key, decoder[key], flag_name))
    tokenizer = plan_tokenizer(spm_files, (src_pieces, tgt_pieces))
    write_model(out_dir, config, tensors,
                {"converted_by": PROG, "source": os.path.basename(npz_path), "family": "marian"},
                vocabs=(src_pieces, tgt_pieces), tokenizer=tokenizer)
    copied = tokenizer.names() if tokenizer else []
    print("%s: wrote %s (marian, %d tensors, F32, d_model %d, %d+%d layers, %s, %s%s)"
          % (PROG, out_dir, len(tensors), config["d_model"], config["n_encoder_layers"],
             config["n_decoder_layers"], "pre-norm" if config["norm_first"] else "post-norm",
             config["activation"], ", tokenizer " + " ".join(copied) if copied else ""),
          file=sys.stderr)
    return config
