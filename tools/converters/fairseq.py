"""Converts a fairseq translation Transformer checkpoint into a tessera model directory.

Input: a directory holding one checkpoint *.pt (or the .pt path itself) and the
fairseq dictionaries dict.SRC.txt / dict.TGT.txt beside it (SRC and TGT the
checkpoint's source_lang / target_lang; a single dict.txt serves both sides).
The checkpoint is a dict with "model" (the state dict) and "args" (an
argparse.Namespace: fairseq before its Hydra configs) or "cfg" (an omegaconf
DictConfig, or the plain dict newer fairseq stores, whose "model" may be an
argparse.Namespace). It is read without omegaconf: a restricted unpickler maps
omegaconf's classes to plain stand-ins and refuses every other global but
tensors, argparse.Namespace, OrderedDict / defaultdict and numpy scalars.
Output: config.json (family "fairseq"), model.safetensors (F32; a tied or shared
table once), vocab.src.txt / vocab.tgt.txt in id order; with --source-spm and
--target-spm (fairseq keeps its sentencepiece model outside the checkpoint),
the models copied and config.json's `tokenizer` (files.plan_tokenizer).

fairseq's semantics, and where fairseq's sources define them (fairseq/...):
- Dictionary (data/dictionary.py): <s> 0, <pad> 1, </s> 2, <unk> 3, then one new
  id per dict.txt line ("token count [#fairseq:overwrite]"; a repeated token
  without the flag is an error; madeupwordNNNN lines pad the size to a multiple
  of 8 and are ordinary entries); the table must have as many rows.
- Embeddings (models/transformer/transformer_encoder.py, _decoder.py): token
  embedding times sqrt(embed_dim) unless no_scale_embedding, plus positions,
  then layernorm_embedding when set (embedding_norm), then the layers.
- Positions (modules/positional_embedding.py, utils.make_positions): token t of
  a sentence (from 0) reads row pad + 1 + t (position_offset pad + 1). Learned:
  embed_positions.weight, max positions + pad + 1 rows (written as
  positional_encoding.pos_embedding / decoder_pos_embedding). Sinusoidal
  (modules/sinusoidal_positional_embedding.py): sin of angle in the first half,
  cos in the second, frequency exp(-i ln(10000) / (half - 1)): "sinusoid_halves_t2t".
- Layers (modules/transformer_layer.py): post-norm, or pre-norm with the final
  encoder.layer_norm / decoder.layer_norm (absent with no_decoder_final_norm,
  and dropped by fairseq for a stack whose "version" buffer is older); LayerNorm
  eps 1e-5 (modules/layer_norm.py); attention (modules/multihead_attention.py)
  q = q_proj(x) * head_dim^-0.5, softmax(q k^T) v: stacked into in_proj.
- Output: decoder.output_projection.weight (no bias), the decoder's embedding
  with share_decoder_input_output_embed (tie_output_projection), one table for
  everything with share_all_embeddings (share_embeddings); older checkpoints:
  decoder.embed_out.
- Generation (sequence_generator.py): the decoder starts from </s>
  (tokens[:, 0] = eos): bos_id = eos_id = 2; every source ends with </s>
  (source_suffix [2]); lprobs[:, pad] = -inf after the log-softmax at every
  step: banned_target_ids [pad], mode "log_probs" (the scorer applies none).
  fairseq also sets </s> to -inf after the log-softmax at steps below min_len
  (default 1: no empty output): min_target_length 1.

Needs numpy, and torch to read the .pt (imported when converting).
"""

import argparse
import collections
import glob
import json
import math
import os
import pickle
import sys

import numpy as np

from . import pickles
from .errors import PROG, ConvertError, note as default_note, note_unused
from .files import plan_tokenizer, resolve_spm, write_model

FAMILY = "fairseq"
LAYER_NORM_EPS = 1e-5
SPECIALS = ["<s>", "<pad>", "</s>", "<unk>"]
BOS, PAD, EOS, UNK = 0, 1, 2, 3
MAX_POSITIONS_LIMIT = 65536

# register_model_architecture("transformer", ...) and transformer_align's: the
# defaults base_architecture and each arch function fill in when args lack them.
BASE_DEFAULTS = dict(
    encoder_attention_heads=8, decoder_attention_heads=8, encoder_normalize_before=False,
    decoder_normalize_before=False, encoder_learned_pos=False, decoder_learned_pos=False,
    activation_fn="relu", share_decoder_input_output_embed=False, share_all_embeddings=False,
    no_token_positional_embeddings=False, adaptive_input=False, adaptive_softmax_cutoff=None,
    no_cross_attention=False, cross_self_attention=False, layer_wise_attention=False,
    layernorm_embedding=False, no_scale_embedding=False, tie_adaptive_weights=False,
    no_decoder_final_norm=False, quant_noise_pq=0, quant_noise_scalar=0,
    max_source_positions=1024, max_target_positions=1024, encoder_layers_to_keep=None,
    decoder_layers_to_keep=None, char_inputs=False, base_layers=0, merge_src_tgt_embed=False,
    scale_attn=False, scale_fc=False, scale_heads=False, scale_resids=False,
    alignment_layer=None, alignment_heads=None)
ARCH_DEFAULTS = {
    "transformer": {},
    "transformer_tiny": dict(encoder_attention_heads=2, decoder_attention_heads=2),
    "transformer_iwslt_de_en": dict(encoder_attention_heads=4, decoder_attention_heads=4),
    "transformer_wmt_en_de": {},
    "transformer_vaswani_wmt_en_de_big": dict(encoder_attention_heads=16, decoder_attention_heads=16),
    "transformer_vaswani_wmt_en_fr_big": dict(encoder_attention_heads=16, decoder_attention_heads=16),
    "transformer_wmt_en_de_big": dict(encoder_attention_heads=16, decoder_attention_heads=16),
    "transformer_wmt_en_de_big_t2t": dict(encoder_attention_heads=16, decoder_attention_heads=16,
                                          encoder_normalize_before=True,
                                          decoder_normalize_before=True),
    "transformer_align": dict(alignment_heads=1, alignment_layer=4),
    "transformer_wmt_en_de_big_align": dict(encoder_attention_heads=16, decoder_attention_heads=16,
                                            alignment_heads=1, alignment_layer=4),
}
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "gelu_accurate": "gelu_tanh", "gelu_fast": "gelu_tanh"}
# TransformerConfig's nested names (newer fairseq) for the flat legacy ones.
NESTED = {"encoder": "encoder_", "decoder": "decoder_", "quant_noise": "quant_noise_"}


# ---- reading the checkpoint without omegaconf ---------------------------------------

class Marker:
    """A type named by the pickle (typing.Any, builtins.int, ...) kept as a name only."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return self.name


class OmegaStandIn:
    """An omegaconf object (container, node or metadata): its pickled __dict__, no behaviour."""

    omega_class = "?"

    def __setstate__(self, state):
        if isinstance(state, tuple) and len(state) == 2:  # (__dict__, slots)
            state = dict(state[0] or {}, **(state[1] or {}))
        if not isinstance(state, dict):
            raise pickle.UnpicklingError("%s: unexpected state" % self.omega_class)
        self.__dict__.update(state)


OMEGA_CLASSES = {
    ("omegaconf.dictconfig", "DictConfig"), ("omegaconf.listconfig", "ListConfig"),
    ("omegaconf.base", "Metadata"), ("omegaconf.base", "ContainerMetadata"),
    ("omegaconf.nodes", "AnyNode"), ("omegaconf.nodes", "StringNode"),
    ("omegaconf.nodes", "IntegerNode"), ("omegaconf.nodes", "FloatNode"),
    ("omegaconf.nodes", "BooleanNode"), ("omegaconf.nodes", "BytesNode"),
    ("omegaconf.nodes", "PathNode"), ("omegaconf.nodes", "ValueNode"),
}
_stand_ins = {}


def omega_stand_in(module, name):
    key = (module, name)
    if key not in _stand_ins:
        _stand_ins[key] = type(name, (OmegaStandIn,), {"omega_class": "%s.%s" % key})
    return _stand_ins[key]


def allowed_globals():
    """What a fairseq checkpoint pickles besides tensors and plain values (for
    pickles.load): argparse.Namespace (args), omegaconf's classes as stand-ins
    (cfg), typing.Any as a name, numpy scalars and dtypes, the builtin types."""
    table = {key: omega_stand_in(*key) for key in OMEGA_CLASSES}
    table.update(pickles.builtin_types(*pickles.BUILTIN_TYPES))
    table[("collections", "defaultdict")] = collections.defaultdict
    table[("argparse", "Namespace")] = argparse.Namespace
    table[("typing", "Any")] = Marker("typing.Any")
    table[("numpy.core.multiarray", "scalar")] = numpy_scalar
    table[("numpy._core.multiarray", "scalar")] = numpy_scalar
    table[("numpy", "dtype")] = np.dtype
    return table


def numpy_scalar(dtype, data=None):
    if not isinstance(dtype, np.dtype) or dtype.hasobject or not isinstance(data, bytes):
        raise pickle.UnpicklingError("numpy scalar of dtype %s" % dtype)
    return np.frombuffer(data, dtype=dtype)[0]


def load_checkpoint(path, trust_pickle=False):
    """The checkpoint, read by pickles.load without omegaconf."""
    return pickles.load(path, trust_pickle, allowed_globals(), None, "fairseq checkpoint")


def plain(value, depth=0):
    """omegaconf stand-ins and Namespaces as dicts / lists / values."""
    if depth > 50:
        raise ConvertError("the checkpoint's cfg is nested too deeply")
    if isinstance(value, OmegaStandIn):
        d = value.__dict__
        if "_content" in d:
            content = d["_content"]
            if content is None or isinstance(content, str):
                # None, "???" (missing) or an interpolation: no value tessera needs
                return None if content in (None, "???") else content
            if isinstance(content, dict):
                return {k: plain(v, depth + 1) for k, v in content.items()}
            return [plain(v, depth + 1) for v in content]
        if "_val" in d:
            return plain(d["_val"], depth + 1)
        raise ConvertError("the checkpoint's cfg holds an %s without a value" % value.omega_class)
    if isinstance(value, argparse.Namespace):
        return {k: plain(v, depth + 1) for k, v in vars(value).items()}
    if isinstance(value, dict):
        return {k: plain(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v, depth + 1) for v in value]
    return value


def flatten_model_options(options):
    """TransformerConfig's nested encoder.embed_dim etc. as the flat encoder_embed_dim."""
    flat = {}
    for key, value in options.items():
        if key in NESTED and isinstance(value, dict):
            for sub, v in value.items():
                flat.setdefault(NESTED[key] + sub, v)
        else:
            flat[key] = value
    return flat


def read_options(checkpoint, path):
    """(model options, task options, where they came from)."""
    if not isinstance(checkpoint, dict) or "model" not in checkpoint:
        raise ConvertError("%s: not a fairseq checkpoint (no 'model' entry)" % path)
    if checkpoint.get("cfg") is not None:
        cfg = plain(checkpoint["cfg"])
        if not isinstance(cfg, dict) or not isinstance(cfg.get("model"), dict):
            raise ConvertError("%s: the checkpoint's cfg has no model section" % path)
        model = flatten_model_options(cfg["model"])
        task = cfg.get("task") if isinstance(cfg.get("task"), dict) else {}
        model.setdefault("arch", model.get("_name"))
        return model, task, "cfg"
    if checkpoint.get("args") is not None:
        args = plain(checkpoint["args"])
        if not isinstance(args, dict):
            raise ConvertError("%s: the checkpoint's args is not an argparse.Namespace" % path)
        return args, args, "args"
    raise ConvertError("%s: the checkpoint has neither 'args' nor 'cfg'" % path)


# ---- dictionaries --------------------------------------------------------------------

def read_dictionary(path):
    """fairseq's Dictionary.load: the symbols in id order."""
    name = os.path.basename(path)
    try:
        with open(path, encoding="utf-8") as f:
            lines = f.readlines()
    except OSError as e:
        raise ConvertError("%s: %s" % (path, e.strerror))
    except UnicodeDecodeError:
        raise ConvertError("%s: not UTF-8 text" % name)
    symbols = list(SPECIALS)
    indices = {s: i for i, s in enumerate(symbols)}
    for number, line in enumerate(lines, 1):
        parts = line.rstrip().rsplit(" ", 1)
        overwrite = False
        if len(parts) == 2 and parts[1] == "#fairseq:overwrite":
            overwrite = True
            parts = parts[0].rsplit(" ", 1)
        if len(parts) != 2:
            raise ConvertError("%s: line %d: expected '<token> <count> [flags]'" % (name, number))
        word, count = parts
        try:
            int(count)
        except ValueError:
            raise ConvertError("%s: line %d: expected '<token> <count> [flags]', the count is %r"
                               % (name, number, count))
        if word in indices and not overwrite:
            raise ConvertError("%s: line %d: duplicate token %r without #fairseq:overwrite "
                               "(fairseq refuses the dictionary)" % (name, number, word))
        if not word or any(c.isspace() for c in word):
            raise ConvertError("%s: line %d: token %r is empty or holds white space, which a "
                               "one-token-per-line vocabulary cannot hold" % (name, number, word))
        indices[word] = len(symbols)
        symbols.append(word)
    return symbols


def dictionary_paths(directory, task, source):
    src, tgt = task.get("source_lang"), task.get("target_lang")
    if isinstance(src, str) and isinstance(tgt, str):
        paths = [os.path.join(directory, "dict.%s.txt" % lang) for lang in (src, tgt)]
        missing = [p for p in paths if not os.path.isfile(p)]
        if not missing:
            return paths
        single = os.path.join(directory, "dict.txt")
        if os.path.isfile(single):
            return [single, single]
        raise ConvertError("%s: no such file (the checkpoint's %s says source_lang %s, "
                           "target_lang %s)" % (missing[0], source, src, tgt))
    found = sorted(glob.glob(os.path.join(glob.escape(directory), "dict.*.txt")))
    if len(found) == 1:
        return [found[0], found[0]]
    raise ConvertError("%s: the checkpoint names no source_lang/target_lang and the directory "
                       "holds %d dict.*.txt files" % (directory, len(found)))


# ---- options -------------------------------------------------------------------------

def refuse(option, value, why):
    raise ConvertError("%s: %s: %s" % (option, json.dumps(value, default=str), why))


class Options:
    def __init__(self, options, arch):
        self.values = dict(BASE_DEFAULTS)
        self.values.update(ARCH_DEFAULTS.get(arch, {}))
        self.values.update({k: v for k, v in options.items() if v is not None or k not in self.values})

    def get(self, key, default=None):
        return self.values.get(key, default)

    def flag(self, key):
        value = self.values.get(key, False)
        if value in (None, 0):
            return False
        if isinstance(value, str) and value in ("True", "False"):  # argparse left it a string
            return value == "True"
        if not isinstance(value, bool):
            refuse(key, value, "expected true or false")
        return value

    def integer(self, key, default=None):
        value = self.values.get(key, default)
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
            refuse(key, value, "expected an integer")
        return int(value)


def architecture(o, arch):
    if arch not in ARCH_DEFAULTS:
        refuse("arch", arch, "only fairseq's transformer translation architectures (%s) are supported"
               % ", ".join(sorted(ARCH_DEFAULTS)))
    for key, why in (("adaptive_input", "adaptive input embeddings are not supported"),
                     ("no_token_positional_embeddings", "a model without positions is not supported"),
                     ("layer_wise_attention", "layer-wise attention is not supported"),
                     ("cross_self_attention", "cross+self attention is not supported"),
                     ("no_cross_attention", "a decoder without cross-attention is not supported"),
                     ("tie_adaptive_weights", "adaptive softmax is not supported"),
                     ("char_inputs", "character inputs are not supported"),
                     ("merge_src_tgt_embed", "merged source/target embeddings are not supported"),
                     ("scale_attn", "NormFormer's extra LayerNorms are not supported"),
                     ("scale_fc", "NormFormer's extra LayerNorms are not supported"),
                     ("scale_heads", "NormFormer's head scaling is not supported"),
                     ("scale_resids", "NormFormer's residual scaling is not supported")):
        if o.flag(key):
            refuse(key, True, why)
    if o.get("adaptive_softmax_cutoff"):
        refuse("adaptive_softmax_cutoff", o.get("adaptive_softmax_cutoff"),
               "adaptive softmax is not supported")
    for key in ("quant_noise_pq", "quant_noise_scalar"):
        value = o.get(key) or 0
        if value:
            refuse(key, value, "quant-noise models are not supported")
    for key in ("encoder_layers_to_keep", "decoder_layers_to_keep"):
        if o.get(key):
            refuse(key, o.get(key), "pruned layers (LayerDrop's layers_to_keep) are not supported")
    if o.get("base_layers"):
        refuse("base_layers", o.get("base_layers"), "BASE layers are not supported")
    activation = o.get("activation_fn")
    if activation not in ACTIVATIONS:
        refuse("activation_fn", activation, "only relu, gelu (erf) and gelu_accurate / gelu_fast "
               "(tanh) are supported" + (" (fairseq's swish returns the class torch.nn.SiLU, "
                                         "not a function)" if activation == "swish" else ""))
    pre_enc, pre_dec = o.flag("encoder_normalize_before"), o.flag("decoder_normalize_before")
    if pre_enc != pre_dec:
        raise ConvertError("encoder_normalize_before: %s, decoder_normalize_before: %s: tessera has "
                           "one norm_first for both stacks" % (json.dumps(pre_enc), json.dumps(pre_dec)))
    return {
        "activation": ACTIVATIONS[activation],
        "norm_first": pre_enc,
        "learned_enc": o.flag("encoder_learned_pos"),
        "learned_dec": o.flag("decoder_learned_pos"),
        "share_all": o.flag("share_all_embeddings"),
        "tie_output": o.flag("share_decoder_input_output_embed") or o.flag("share_all_embeddings"),
        "layernorm_embedding": o.flag("layernorm_embedding"),
        "scale_embedding": not o.flag("no_scale_embedding"),
        "no_decoder_final_norm": o.flag("no_decoder_final_norm"),
    }


# ---- tensors -------------------------------------------------------------------------

class Tensors:
    def __init__(self, state):
        self.items = {}
        for name, value in state.items():
            if hasattr(value, "detach"):
                self.items[name] = value.detach().cpu().float().numpy()
            else:
                raise ConvertError("state dict entry '%s' is a %s, not a tensor"
                                   % (name, type(value).__name__))
        self.used = set()
        self.upgrade()

    def upgrade(self):
        """fairseq's upgrade_state_dict_named renames, for older checkpoints."""
        items = self.items
        for name in list(items):
            for old, new in ((".layer_norms.0.", ".self_attn_layer_norm."),):
                if old in name:
                    items[name.replace(old, new)] = items.pop(name)
        for name in list(items):
            if ".layer_norms." in name:
                stack = name.split(".")[0]
                mapping = ({"1": "encoder_attn_layer_norm", "2": "final_layer_norm"}
                           if stack == "decoder" else {"1": "final_layer_norm"})
                index = name.split(".layer_norms.")[1].split(".")[0]
                if index in mapping:
                    items[name.replace(".layer_norms.%s." % index, ".%s." % mapping[index])] = \
                        items.pop(name)
        for name in list(items):
            if name.endswith("in_proj_weight") or name.endswith("in_proj_bias"):
                prefix, kind = name.rsplit(".", 1)
                value = items.pop(name)
                part = value.shape[0] // 3
                for k, proj in enumerate(("q_proj", "k_proj", "v_proj")):
                    items["%s.%s.%s" % (prefix, proj, "weight" if kind == "in_proj_weight" else "bias")] = \
                        value[k * part:(k + 1) * part]

    def has(self, name):
        return name in self.items

    def get(self, name, shape, why=""):
        if name not in self.items:
            raise ConvertError("missing tensor '%s' (expected shape %s%s)" % (name, list(shape), why))
        array = self.items[name]
        if tuple(array.shape) != tuple(shape):
            raise ConvertError("tensor '%s' has shape %s, expected %s" % (name, list(array.shape), list(shape)))
        self.used.add(name)
        return array


def stack_version(t, stack):
    name = stack + ".version"
    if name not in t.items:
        return 1.0
    t.used.add(name)
    return float(t.items[name].reshape(-1)[0])


def count_layers(t, stack):
    n = 0
    while any(k.startswith("%s.layers.%d." % (stack, n)) for k in t.items):
        n += 1
    return n


def select_tensors(t, arch, d, d_ff, layers, sizes, max_rows):
    src_vocab, tgt_vocab = sizes
    out = {}

    def linear(fs, ts, n_in, n_out, bias=True):
        out[ts + ".weight"] = t.get(fs + ".weight", [n_out, n_in])
        if bias:
            out[ts + ".bias"] = t.get(fs + ".bias", [n_out])

    def norm(fs, ts):
        out[ts + ".weight"] = t.get(fs + ".weight", [d])
        out[ts + ".bias"] = t.get(fs + ".bias", [d])

    def attention(fs, ts):
        if t.has(fs + ".bias_k") or t.has(fs + ".bias_v"):
            raise ConvertError("tensor '%s.bias_k': add_bias_kv attention is not supported" % fs)
        out[ts + ".in_proj_weight"] = np.concatenate(
            [t.get("%s.%s.weight" % (fs, p), [d, d]) for p in ("q_proj", "k_proj", "v_proj")])
        out[ts + ".in_proj_bias"] = np.concatenate(
            [t.get("%s.%s.bias" % (fs, p), [d]) for p in ("q_proj", "k_proj", "v_proj")])
        linear(fs + ".out_proj", ts + ".out_proj", d, d)

    tgt = t.get("decoder.embed_tokens.weight", [tgt_vocab, d])
    out["tgt_tok_emb.embedding.weight"] = tgt
    src = t.get("encoder.embed_tokens.weight", [src_vocab, d])
    if arch["share_all"]:
        if not np.array_equal(src, tgt):
            raise ConvertError("share_all_embeddings: true, but tensors 'encoder.embed_tokens.weight' "
                               "and 'decoder.embed_tokens.weight' differ")
    else:
        out["src_tok_emb.embedding.weight"] = src
    for stack, key, learned in (("encoder", "positional_encoding.pos_embedding", arch["learned_enc"]),
                                ("decoder", "positional_encoding.decoder_pos_embedding",
                                 arch["learned_dec"])):
        if learned:
            rows = max_rows[stack]
            out[key] = t.get(stack + ".embed_positions.weight", [rows, d],
                             ", max_%s_positions + pad + 1 rows" % ("source" if stack == "encoder" else "target")
                             ).reshape(rows, 1, d)
        else:
            if t.has(stack + ".embed_positions.weight"):
                raise ConvertError("tensor '%s.embed_positions.weight': a learned position table, but "
                                   "%s_learned_pos is false" % (stack, stack))
            for extra in ("_float_tensor", "weights"):
                if t.has("%s.embed_positions.%s" % (stack, extra)):
                    t.used.add("%s.embed_positions.%s" % (stack, extra))
            if stack == "decoder" and arch["learned_enc"]:
                # tessera's decoder would read the encoder's learned table: give it
                # fairseq's sinusoid as a table of its own.
                out[key] = sinusoid_table(max_rows[stack], d).reshape(max_rows[stack], 1, d)
    if arch["layernorm_embedding"]:
        norm("encoder.layernorm_embedding", "transformer.encoder.embedding_norm")
        norm("decoder.layernorm_embedding", "transformer.decoder.embedding_norm")
    for i in range(layers[0]):
        f, ts = "encoder.layers.%d" % i, "transformer.encoder.layers.%d" % i
        attention(f + ".self_attn", ts + ".self_attn")
        norm(f + ".self_attn_layer_norm", ts + ".norm1")
        linear(f + ".fc1", ts + ".linear1", d, d_ff)
        linear(f + ".fc2", ts + ".linear2", d_ff, d)
        norm(f + ".final_layer_norm", ts + ".norm2")
    for i in range(layers[1]):
        f, ts = "decoder.layers.%d" % i, "transformer.decoder.layers.%d" % i
        attention(f + ".self_attn", ts + ".self_attn")
        norm(f + ".self_attn_layer_norm", ts + ".norm1")
        attention(f + ".encoder_attn", ts + ".multihead_attn")
        norm(f + ".encoder_attn_layer_norm", ts + ".norm2")
        linear(f + ".fc1", ts + ".linear1", d, d_ff)
        linear(f + ".fc2", ts + ".linear2", d_ff, d)
        norm(f + ".final_layer_norm", ts + ".norm3")
    # Final norms: pre-norm only; fairseq drops them for an old "version" buffer
    # (encoder < 2, decoder <= 2), and the decoder's with no_decoder_final_norm.
    versions = {stack: stack_version(t, stack) for stack in ("encoder", "decoder")}
    enc_final = arch["norm_first"] and versions["encoder"] >= 2
    dec_final = arch["norm_first"] and not arch["no_decoder_final_norm"] and versions["decoder"] > 2
    for stack, wanted in (("encoder", enc_final), ("decoder", dec_final)):
        if wanted:
            norm(stack + ".layer_norm", "transformer.%s.norm" % stack)
        elif t.has(stack + ".layer_norm.weight"):
            raise ConvertError("tensor '%s.layer_norm.weight': fairseq would not load it (a final "
                               "norm needs %s_normalize_before and a %s.version of 3)"
                               % (stack, stack, stack))
    for name in ("decoder.output_projection.bias", "decoder.embed_out_bias"):
        if t.has(name):
            raise ConvertError("tensor '%s': an output bias is not fairseq's transformer" % name)
    projection = None
    for name in ("decoder.output_projection.weight", "decoder.embed_out"):
        if t.has(name):
            projection = t.get(name, [tgt_vocab, d])
            break
    if arch["tie_output"]:
        if projection is not None and not np.array_equal(projection, tgt):
            raise ConvertError("share_decoder_input_output_embed: true, but tensor "
                               "'decoder.output_projection.weight' differs from 'decoder.embed_tokens.weight'")
    elif projection is None:
        raise ConvertError("missing tensor 'decoder.output_projection.weight' (expected shape %s; the "
                           "output layer of a model without share_decoder_input_output_embed)"
                           % [tgt_vocab, d])
    else:
        out["generator.weight"] = projection
    return {name: np.ascontiguousarray(a, dtype=np.float32) for name, a in out.items()}


def sinusoid_table(rows, d):
    """fairseq's SinusoidalPositionalEmbedding rows 0..rows-1 (angles computed in double,
    rounded once), the padding row zero."""
    half = d // 2
    angle = np.arange(rows, dtype=np.float64)[:, None] * \
        np.exp(np.arange(half, dtype=np.float64) * -(math.log(10000.0) / (half - 1)))[None, :]
    table = np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
    table[PAD] = 0.0
    return table.astype(np.float32)


# ---- the conversion ------------------------------------------------------------------

def locate(input_path):
    if os.path.isdir(input_path):
        found = sorted(glob.glob(os.path.join(glob.escape(input_path), "*.pt")))
        if len(found) != 1:
            raise ConvertError("%s: expected one *.pt checkpoint, found %s"
                               % (input_path, ", ".join(os.path.basename(p) for p in found) or "none"))
        return found[0], input_path
    if not os.path.isfile(input_path):
        raise ConvertError("%s: no such file or directory" % input_path)
    return input_path, os.path.dirname(input_path) or "."


def detect(path):
    """True for a fairseq checkpoint: a directory with one *.pt and dict.*.txt, or a
    .pt file with dict.*.txt beside it. Reads no pickle."""
    try:
        if os.path.isdir(path):
            pts = glob.glob(os.path.join(glob.escape(path), "*.pt"))
            directory = path
            if len(pts) != 1:
                return False
        elif os.path.isfile(path) and path.endswith(".pt"):
            directory = os.path.dirname(path) or "."
        else:
            return False
        return bool(glob.glob(os.path.join(glob.escape(directory), "dict.*.txt")) or
                    os.path.isfile(os.path.join(directory, "dict.txt")))
    except OSError:
        return False


def convert(input_path, out_dir, note=default_note, trust_pickle=False, source_spm=None,
            target_spm=None):
    """Converts the fairseq checkpoint input_path into out_dir; returns the config.
    source_spm, target_spm: SentencePiece models for text (the dictionaries'
    ids, never the models' own)."""
    spm_files = resolve_spm((source_spm, target_spm), (None, None), note)
    pt_path, directory = locate(input_path)
    checkpoint = load_checkpoint(pt_path, trust_pickle)
    options, task, source = read_options(checkpoint, pt_path)
    arch_name = options.get("arch")
    o = Options(options, arch_name)
    arch = architecture(o, arch_name)
    state = checkpoint["model"]
    if not isinstance(state, dict):
        raise ConvertError("%s: the checkpoint's 'model' is not a state dict" % pt_path)
    t = Tensors(state)

    src_path, tgt_path = dictionary_paths(directory, task, source)
    src_symbols = read_dictionary(src_path)
    tgt_symbols = src_symbols if tgt_path == src_path else read_dictionary(tgt_path)
    names = (os.path.basename(src_path), os.path.basename(tgt_path))
    emb = {}
    for stack in ("encoder", "decoder"):
        name = stack + ".embed_tokens.weight"
        if not t.has(name):
            raise ConvertError("missing tensor '%s' (the %s embeddings)" % (name, stack))
        if t.items[name].ndim != 2:
            raise ConvertError("tensor '%s' has shape %s, expected [vocab, embed_dim]"
                               % (name, list(t.items[name].shape)))
        emb[stack] = t.items[name].shape
    d = emb["encoder"][1]
    for key in ("encoder_embed_dim", "decoder_embed_dim", "decoder_output_dim", "decoder_input_dim"):
        value = o.get(key)
        if value is not None and value != d:
            why = ("tessera needs one width: encoder_embed_dim %d" % d if key != "encoder_embed_dim"
                   else "the embeddings are %d wide" % d)
            refuse(key, value, why)
    if emb["decoder"][1] != d:
        refuse("decoder_embed_dim", int(emb["decoder"][1]), "differs from encoder_embed_dim %d" % d)
    for (stack, symbols, name) in (("encoder", src_symbols, names[0]), ("decoder", tgt_symbols, names[1])):
        rows = emb[stack][0]
        if len(symbols) != rows:
            raise ConvertError("%s: %d symbols (4 specials + %d lines, madeupword padding included), "
                               "but %s.embed_tokens.weight has %d rows"
                               % (name, len(symbols), len(symbols) - 4, stack, rows))
    if arch["share_all"] and src_symbols != tgt_symbols:
        raise ConvertError("share_all_embeddings: true, but %s and %s differ (it needs a joined "
                           "dictionary)" % names)
    heads = o.integer("encoder_attention_heads")
    if o.integer("decoder_attention_heads") != heads:
        refuse("decoder_attention_heads", o.get("decoder_attention_heads"),
               "differs from encoder_attention_heads %d; tessera has one head count" % heads)
    if heads < 1 or d % heads:
        refuse("encoder_attention_heads", heads, "does not divide the width %d" % d)
    d_ff = o.integer("encoder_ffn_embed_dim", t.items.get("encoder.layers.0.fc1.weight",
                                                          np.zeros((0, 0))).shape[0])
    if o.get("decoder_ffn_embed_dim") is not None and o.integer("decoder_ffn_embed_dim") != d_ff:
        refuse("decoder_ffn_embed_dim", o.get("decoder_ffn_embed_dim"),
               "differs from encoder_ffn_embed_dim %d; tessera has one FFN width" % d_ff)
    layers = []
    for stack in ("encoder", "decoder"):
        n = o.integer(stack + "_layers", count_layers(t, stack))
        if n < 1:
            refuse(stack + "_layers", n, "at least one layer is needed")
        layers.append(n)
    max_src = o.integer("max_source_positions")
    max_tgt = o.integer("max_target_positions")
    max_positions = min(max_src, max_tgt, MAX_POSITIONS_LIMIT)
    if max_positions < 2:
        refuse("max_source_positions", max_src, "tessera needs at least 2 positions")
    if max_src != max_tgt:
        note("max_source_positions %d and max_target_positions %d differ: max_positions is %d, "
             "for both" % (max_src, max_tgt, max_positions))
    if not (arch["learned_enc"] and arch["learned_dec"]) and (d % 2 or d < 4):
        refuse("encoder_embed_dim", d, "fairseq's sinusoid needs an even width >= 4 here")
    tensors = select_tensors(t, arch, d, d_ff, layers, (emb["encoder"][0], emb["decoder"][0]),
                             {"encoder": max_src + PAD + 1, "decoder": max_tgt + PAD + 1})
    config = {
        "d_model": int(d),
        "n_heads": heads,
        "d_ff": int(d_ff),
        "n_encoder_layers": layers[0],
        "n_decoder_layers": layers[1],
        "src_vocab_size": int(emb["encoder"][0]),
        "tgt_vocab_size": int(emb["decoder"][0]),
        "max_positions": max_positions,
        "activation": arch["activation"],
        "norm_first": arch["norm_first"],
        "layer_norm_eps": LAYER_NORM_EPS,
        "layer_norm_form": "variance",
        "scale_embedding": arch["scale_embedding"],
        "bos_id": EOS,
        "eos_id": EOS,
        "pad_id": PAD,
        "unk_id": UNK,
        "family": FAMILY,
        "position_encoding": "sinusoid_halves_t2t",
        "position_offset": PAD + 1,
        "share_embeddings": arch["share_all"],
        "tie_output_projection": arch["tie_output"],
        "decoder_start": "bos",
        "source_suffix": [EOS],
        "banned_target_ids": [PAD],
        "banned_target_ids_mode": "log_probs",
    }
    align_layer, align_heads = o.get("alignment_layer"), o.get("alignment_heads")
    if align_layer is not None:
        align_layer = o.integer("alignment_layer")
        if not -1 <= align_layer < layers[1]:
            refuse("alignment_layer", align_layer, "not a decoder layer (0..%d)" % (layers[1] - 1))
        config["alignment_layer"] = align_layer
    if align_heads is not None:
        align_heads = o.integer("alignment_heads")
        if not 0 <= align_heads <= heads:
            refuse("alignment_heads", align_heads, "not 0..%d heads" % heads)
        config["alignment_heads"] = align_heads
    note_unused(note, sorted(set(t.items) - t.used))
    # fairseq-generate's --min-len, 1 unless told: never an empty translation.
    config["min_target_length"] = 1
    if any(s.startswith("madeupword") for s in tgt_symbols):
        note("the target dictionary's madeupwordNNNN padding entries are ordinary ids, as in fairseq")
    tokenizer = plan_tokenizer(spm_files, (src_symbols, tgt_symbols))
    write_model(out_dir, config, tensors,
                {"converted_by": PROG, "source": os.path.basename(pt_path), "family": FAMILY},
                vocabs=(src_symbols, tgt_symbols), tokenizer=tokenizer)
    print("%s: wrote %s (fairseq %s from %s, %d tensors, F32, d_model %d, %d+%d layers, %s, %s, "
          "%s positions)"
          % (PROG, out_dir, arch_name, source, len(tensors), d, layers[0], layers[1],
             "pre-norm" if arch["norm_first"] else "post-norm", arch["activation"],
             "learned" if arch["learned_enc"] else "sinusoidal"), file=sys.stderr)
    return config
