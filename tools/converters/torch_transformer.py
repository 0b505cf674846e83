"""Converts a torch.save'd checkpoint of the nn.Transformer translation model
(tools/tessera_torch.py's Seq2SeqTransformer names: src_tok_emb, tgt_tok_emb,
transformer.{encoder,decoder}.layers.N, generator) into a tessera model directory.

The checkpoint holds either a dict with a "state_dict" entry and hyperparameters
under "config" or "hparams", or a bare state_dict (DataParallel's "module."
prefix dropped). Hyperparameters come, highest priority first, from the command
line flags, --config, the checkpoint, and the tensor shapes (d_model, vocab
sizes, d_ff, layer counts, position table length); docs/model-format.md defaults
fill the rest. n_heads cannot be read off the shapes and must be given somewhere.
Values that contradict the shapes are an error. Only the tensors tessera reads
are written; --quantize stores the linear weights as int8 (per-row scales) or
bf16. Needs torch (to read the .pt) and numpy.
"""

import json
import os
import re
import sys


from . import pickles
from .errors import PROG, ConvertError, note, note_unused
from .files import plan_tokenizer, quantize_int8, resolve_spm, write_model

# tools/tessera_torch.py (the format's keys and defaults) and torch: imported by
# convert(), so that --help needs neither.
tt = None

# Hyperparameter names used by common training scripts, mapped to config.json keys.
ALIASES = {
    "emb_size": "d_model", "embed_dim": "d_model", "hidden_size": "d_model",
    "nhead": "n_heads", "num_heads": "n_heads",
    "dim_feedforward": "d_ff", "ffn_dim": "d_ff",
    "num_encoder_layers": "n_encoder_layers", "num_decoder_layers": "n_decoder_layers",
    "src_vocab": "src_vocab_size", "tgt_vocab": "tgt_vocab_size",
    "max_len": "max_positions", "maxlen": "max_positions",
}

INT_KEYS = {"d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers", "src_vocab_size",
            "tgt_vocab_size", "max_positions", "bos_id", "eos_id", "pad_id", "unk_id"}
BOOL_KEYS = {"norm_first", "scale_embedding"}
FLAG_KEYS = ("d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers",
             "src_vocab_size", "tgt_vocab_size", "max_positions", "bos_id", "eos_id", "pad_id",
             "unk_id", "activation", "norm_first", "layer_norm_eps", "scale_embedding")

POS_TABLE = "positional_encoding.pos_embedding"


def add_options(parser):
    """This family's flags (tessera-convert --from torch --help)."""
    import argparse
    parser.add_argument("--dtype", choices=["f32", "f16", "bf16"], default="f32",
                        help="storage type of the weights (default f32)")
    parser.add_argument("--quantize", choices=["int8", "bf16"],
                        help="store the linear weights (attention projections, FFN, generator) "
                             "as int8 (I8 + a per-row F32 '<name>_scale': scale = max|row| / 127, "
                             "q = round(w / scale)) or as bf16; the other tensors as --dtype")
    parser.add_argument("--vocab-src", metavar="FILE", help="copied to vocab.src.txt (one token per line)")
    parser.add_argument("--vocab-tgt", metavar="FILE", help="copied to vocab.tgt.txt")
    parser.add_argument("--config", metavar="JSON",
                        help="hyperparameters: a JSON file or an inline JSON object with config.json keys")
    hyper = parser.add_argument_group("hyperparameters (override --config and the checkpoint)")
    for key in (k for k in FLAG_KEYS if k in INT_KEYS):
        hyper.add_argument("--" + key.replace("_", "-"), dest=key, type=int, metavar="N")
    hyper.add_argument("--activation",
                       choices=["gelu", "gelu_sigmoid", "gelu_tanh", "relu", "silu"])
    hyper.add_argument("--norm-first", action=argparse.BooleanOptionalAction,
                       help="pre-norm (--no-norm-first: post-norm, the default)")
    hyper.add_argument("--layer-norm-eps", type=float, metavar="EPS")
    hyper.add_argument("--scale-embedding", action=argparse.BooleanOptionalAction,
                       help="multiply embeddings by sqrt(d_model) (default on)")


def detect(path):
    """Always: the family tessera-convert falls back to."""
    return True


# ---- reading the checkpoint -------------------------------------------------

def load_checkpoint(path, trust_pickle):
    """(state_dict, hyperparameters) from a torch.save'd file."""
    torch = tt.torch
    obj = pickles.load(path, trust_pickle)
    if isinstance(obj, torch.nn.Module):
        obj = obj.state_dict()
    if not isinstance(obj, dict):
        raise ConvertError("%s: expected a dict, found %s" % (path, type(obj).__name__))
    if "state_dict" in obj:
        state, hparams = obj["state_dict"], obj.get("config", obj.get("hparams", {}))
        if isinstance(state, torch.nn.Module):
            state = state.state_dict()
    else:
        state, hparams = obj, {}
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise ConvertError("%s: the state_dict is not a mapping of names to tensors" % path)
    if not isinstance(hparams, dict):
        raise ConvertError("%s: the checkpoint's config/hparams is not a dict" % path)
    return strip_wrapper_prefix(dict(state)), hparams


def strip_wrapper_prefix(state):
    """Drops the "module." that DataParallel/DDP put in front of every name."""
    if state and all(name.startswith("module.") for name in state):
        note("stripping the 'module.' prefix from every tensor name")
        return {name[len("module."):]: tensor for name, tensor in state.items()}
    return state


def canonical(hparams):
    """Known keys (and aliases) of a hyperparameter dict; other keys are ignored."""
    result = {}
    for key, value in hparams.items():
        key = ALIASES.get(key, key)
        if key in tt.CONFIG_KEYS:
            result[key] = value
    return result


def read_config_option(text):
    """--config: a JSON file, or an inline JSON object."""
    try:
        if text.lstrip().startswith("{"):
            value = json.loads(text)
        else:
            with open(text, encoding="utf-8") as f:
                value = json.load(f)
    except OSError as e:
        raise ConvertError("--config %s: %s" % (text, e.strerror))
    except json.JSONDecodeError as e:
        raise ConvertError("--config: not valid JSON: %s" % e)
    if not isinstance(value, dict):
        raise ConvertError("--config: expected a JSON object")
    return value


# ---- deciding the configuration ---------------------------------------------

def layer_count(state, stack):
    """Number of transformer.<stack>.layers.{i}, which must be numbered 0..n-1."""
    pattern = re.compile(r"transformer\.%s\.layers\.(\d+)\." % stack)
    found = sorted({int(m.group(1)) for name in state for m in [pattern.match(name)] if m})
    if not found:
        raise ConvertError("no tensors named transformer.%s.layers.0.*" % stack)
    if found != list(range(len(found))):
        missing = sorted(set(range(max(found) + 1)) - set(found))
        raise ConvertError("transformer.%s.layers.%d: missing (layers found: %s)"
                           % (stack, missing[0], ", ".join(map(str, found))))
    return len(found)


def shape_of(state, name):
    if name not in state:
        raise ConvertError("missing tensor '%s'" % name)
    return list(state[name].shape)


def inferred_config(state):
    """What the tensor shapes say, each value with the tensor it came from."""
    src = shape_of(state, "src_tok_emb.embedding.weight")
    tgt = shape_of(state, "tgt_tok_emb.embedding.weight")
    inferred = {
        "d_model": (src[1], "src_tok_emb.embedding.weight"),
        "src_vocab_size": (src[0], "src_tok_emb.embedding.weight"),
        "tgt_vocab_size": (tgt[0], "tgt_tok_emb.embedding.weight"),
        "n_encoder_layers": (layer_count(state, "encoder"), "transformer.encoder.layers.*"),
        "n_decoder_layers": (layer_count(state, "decoder"), "transformer.decoder.layers.*"),
    }
    ff_name = "transformer.encoder.layers.0.linear1.weight"
    if ff_name in state:
        inferred["d_ff"] = (shape_of(state, ff_name)[0], ff_name)
    if POS_TABLE in state:
        inferred["max_positions"] = (shape_of(state, POS_TABLE)[0], POS_TABLE)
    return inferred


def check_type(key, value):
    if key in INT_KEYS and (isinstance(value, bool) or not isinstance(value, int)):
        raise ConvertError("config key '%s': expected an integer, got %r" % (key, value))
    if key in BOOL_KEYS and not isinstance(value, bool):
        raise ConvertError("config key '%s': expected true or false, got %r" % (key, value))
    if key == "layer_norm_eps" and (isinstance(value, bool) or not isinstance(value, (int, float))):
        raise ConvertError("config key 'layer_norm_eps': expected a number, got %r" % (value,))
    if key == "layer_norm_form" and value not in tt.LAYER_NORM_FORMS:
        raise ConvertError("config key 'layer_norm_form': expected one of %s, got %r"
                           % (", ".join(tt.LAYER_NORM_FORMS), value))
    if key == "activation" and value not in tt.ACTIVATIONS:
        raise ConvertError("config key 'activation': expected one of %s, got %r"
                           % (", ".join(tt.ACTIVATIONS), value))


def decide_config(layers, inferred):
    """Merges the given layers (lowest priority first) with the shapes.

    layers: list of (description, dict). A given value that contradicts a
    shape is an error; the position table only bounds max_positions.
    """
    given, origin = {}, {}
    for description, values in layers:
        for key, value in values.items():
            check_type(key, value)
            given[key], origin[key] = value, description
    config = {}
    for key, (value, tensor) in inferred.items():
        if key not in given:
            config[key] = value
            continue
        if key == "max_positions":
            if given[key] > value:
                raise ConvertError("max_positions %d (%s) exceeds the %d rows of %s"
                                   % (given[key], origin[key], value, tensor))
        elif given[key] != value:
            raise ConvertError("%s is %d (%s) but %s says %d" % (key, given[key], origin[key], tensor, value))
    config.update(given)
    if "n_heads" not in config:
        raise ConvertError("n_heads: not in the checkpoint's hyperparameters; give --n-heads or --config")
    for key in ("activation", "norm_first"):
        if key not in config:
            note("%s not given; using the default %r" % (key, tt.CONFIG_DEFAULTS[key]))
    config = tt.full_config(config)
    check_values(config)
    return config


def check_values(config):
    for key in INT_KEYS - {"bos_id", "eos_id", "pad_id", "unk_id"}:
        if config[key] < 1:
            raise ConvertError("config key '%s': must be >= 1, got %d" % (key, config[key]))
    if config["d_model"] % config["n_heads"]:
        raise ConvertError("config key 'n_heads': %d does not divide d_model (%d)"
                           % (config["n_heads"], config["d_model"]))
    if config["layer_norm_eps"] <= 0:
        raise ConvertError("config key 'layer_norm_eps': must be > 0")
    # bos and eos only appear on the target side; pad and unk on both.
    sides = {"bos_id": ("tgt",), "eos_id": ("tgt",), "pad_id": ("src", "tgt"), "unk_id": ("src", "tgt")}
    for key, key_sides in sides.items():
        for side in key_sides:
            size = config[side + "_vocab_size"]
            if not 0 <= config[key] < size:
                raise ConvertError("config key '%s': %d is outside the %s vocabulary (size %d)"
                                   % (key, config[key], side, size))


# ---- choosing and checking the tensors --------------------------------------

def layer_shapes(prefix, d, d_ff, attentions, norms):
    shapes = {}
    for attention in attentions:
        shapes.update({
            prefix + attention + ".in_proj_weight": [3 * d, d],
            prefix + attention + ".in_proj_bias": [3 * d],
            prefix + attention + ".out_proj.weight": [d, d],
            prefix + attention + ".out_proj.bias": [d],
        })
    shapes.update({prefix + "linear1.weight": [d_ff, d], prefix + "linear1.bias": [d_ff],
                   prefix + "linear2.weight": [d, d_ff], prefix + "linear2.bias": [d]})
    for norm in norms:
        shapes.update({prefix + norm + ".weight": [d], prefix + norm + ".bias": [d]})
    return shapes


def required_shapes(config):
    d, d_ff = config["d_model"], config["d_ff"]
    shapes = {
        "src_tok_emb.embedding.weight": [config["src_vocab_size"], d],
        "tgt_tok_emb.embedding.weight": [config["tgt_vocab_size"], d],
        "generator.weight": [config["tgt_vocab_size"], d],
        "generator.bias": [config["tgt_vocab_size"]],
    }
    for i in range(config["n_encoder_layers"]):
        shapes.update(layer_shapes("transformer.encoder.layers.%d." % i, d, d_ff,
                                   ["self_attn"], ["norm1", "norm2"]))
    for i in range(config["n_decoder_layers"]):
        shapes.update(layer_shapes("transformer.decoder.layers.%d." % i, d, d_ff,
                                   ["self_attn", "multihead_attn"], ["norm1", "norm2", "norm3"]))
    return shapes


def check_tensor(state, name, shape):
    tensor = state.get(name)
    if tensor is None:
        raise ConvertError("missing tensor '%s' (expected shape %s)" % (name, shape))
    if list(tensor.shape) != shape:
        raise ConvertError("tensor '%s' has shape %s, expected %s" % (name, list(tensor.shape), shape))
    if not tensor.is_floating_point():
        raise ConvertError("tensor '%s' has dtype %s, expected a floating-point type" % (name, tensor.dtype))
    return tensor


def select_tensors(state, config):
    """The tensors tessera reads, checked; the optional ones when present."""
    d = config["d_model"]
    chosen = {name: check_tensor(state, name, shape) for name, shape in required_shapes(config).items()}
    for stack in ("encoder", "decoder"):
        weight, bias = "transformer.%s.norm.weight" % stack, "transformer.%s.norm.bias" % stack
        if (weight in state) != (bias in state):
            raise ConvertError("tensor '%s' is present but '%s' is missing"
                               % ((weight, bias) if weight in state else (bias, weight)))
        if weight in state:
            chosen[weight] = check_tensor(state, weight, [d])
            chosen[bias] = check_tensor(state, bias, [d])
    if POS_TABLE in state:
        table = state[POS_TABLE]
        if table.dim() == 2:
            note("%s is [max_len, d_model]; writing it as [max_len, 1, d_model]" % POS_TABLE)
            table = table.unsqueeze(1)
        chosen[POS_TABLE] = check_tensor({POS_TABLE: table}, POS_TABLE, [table.shape[0], 1, d])
    else:
        note("no %s: tessera will compute the sinusoid" % POS_TABLE)
    note_unused(note, sorted(set(state) - set(chosen)))
    return chosen


def read_vocab_lines(path, size, side):
    """The vocabulary file's lines (bytes), checked against the vocabulary size."""
    try:
        with open(path, "rb") as f:
            lines = f.read().split(b"\n")
    except OSError as e:
        raise ConvertError("%s: %s" % (path, e.strerror))
    if lines and lines[-1] == b"":
        lines.pop()
    if len(lines) != size:
        raise ConvertError("%s: %d lines, but %s_vocab_size is %d" % (path, len(lines), side, size))
    return lines


def vocab_pieces(path, lines):
    """The pieces of a vocabulary file, for the SentencePiece check (a trailing CR
    dropped, as tessera reads the file)."""
    try:
        return [line.decode("utf-8").rstrip("\r") for line in lines]
    except UnicodeDecodeError:
        raise ConvertError("%s: not UTF-8, so no SentencePiece piece can match it" % path)

def load_torch():
    """torch and tools/tessera_torch.py, imported on first use."""
    global tt
    if tt is None:
        sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
        import tessera_torch
        tt = tessera_torch


def convert(input_path, out_dir, note=note, trust_pickle=False, source_spm=None,
            target_spm=None, dtype="f32", quantize=None, vocab_src=None, vocab_tgt=None,
            config=None, **flags):
    """Converts the checkpoint input_path into out_dir; returns the config. flags: the
    hyperparameter flags (FLAG_KEYS), None where not given."""
    load_torch()
    if source_spm or target_spm:
        for flag, given in (("--vocab-src", vocab_src), ("--vocab-tgt", vocab_tgt)):
            if not given:
                raise ConvertError("--source-spm and --target-spm need %s: pieces map to ids "
                                   "through the vocabulary" % flag)
    spm_files = resolve_spm((source_spm, target_spm), (None, None), note)
    state, hparams = load_checkpoint(input_path, trust_pickle)
    given = {key: value for key, value in flags.items()
             if key in tt.CONFIG_KEYS and value is not None}
    layers = [("checkpoint", canonical(hparams))]
    if config:
        layers.append(("--config", canonical(read_config_option(config))))
    layers.append(("command line", given))
    decided = decide_config(layers, inferred_config(state))
    tensors = select_tensors(state, decided)
    vocabs = {}
    for side, path in (("src", vocab_src), ("tgt", vocab_tgt)):
        if path:
            vocabs[side] = (path, read_vocab_lines(path, decided[side + "_vocab_size"], side))
    tokenizer = None
    if spm_files:
        tokenizer = plan_tokenizer(spm_files,
                                   [vocab_pieces(*vocabs[side]) for side in ("src", "tgt")])
    arrays = {name: t.detach().to(tt.torch.float32).numpy() for name, t in tensors.items()}
    dtypes = quantized(arrays, quantize)
    stored = dtype.upper()
    write_model(out_dir, decided, arrays,
                {"converted_by": PROG, "source": os.path.basename(input_path)}, stored, dtypes,
                tuple(vocabs[side][1] if side in vocabs else None for side in ("src", "tgt")),
                tokenizer)
    print("%s: wrote %s (%d tensors, %s%s, d_model %d, %d+%d layers)"
          % (PROG, out_dir, len(arrays), stored,
             ", linear weights %s" % quantize if quantize else "", decided["d_model"],
             decided["n_encoder_layers"], decided["n_decoder_layers"]), file=sys.stderr)
    return decided


def quantized(tensors, kind):
    """Replaces the linear weights in tensors for --quantize KIND (in place, adding
    the int8 scales); returns the dtype of each replaced or added tensor."""
    dtypes = {}
    if not kind:
        return dtypes
    for name in [n for n in tensors if tt.is_linear_weight(n, tensors[n].shape)]:
        if kind == "bf16":
            dtypes[name] = "BF16"
        else:
            tensors[name], tensors[name + "_scale"] = quantize_int8(tensors[name])
            dtypes[name], dtypes[name + "_scale"] = "I8", "F32"
    return dtypes
