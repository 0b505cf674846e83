"""Converts an OpenNMT-py 3.x Transformer checkpoint (.pt) into a tessera model directory.

tools/tessera-convert INPUT.pt OUT_DIR [--from opennmt-py] reads the file (its
pickle checked first: tensors, plain values and argparse.Namespace only,
unless --trust-pickle) and calls convert_checkpoint(). Output: config.json
(family "opennmt-py"), model.safetensors (F32), vocab.src.txt and
vocab.tgt.txt in OpenNMT-py's id order; with --source-spm and --target-spm
(OpenNMT-py's transforms keep the sentencepiece models outside the
checkpoint), the models copied and config.json's `tokenizer`
(files.plan_tokenizer).

OpenNMT-py 3.x's semantics, and where its sources (v3.0 to v3.5) define them:
- the checkpoint (onmt/models/model_saver.py ModelSaver._save): {"model": the
  state dict without the generator, "generator": the generator's state dict,
  "vocab": onmt/inputters/inputter.py vocabs_to_dict(): {"src": [tokens],
  "tgt": [tokens], "data_task", "decoder_start_token" (3.2+; absent: "<s>")},
  "opt": the training options (argparse.Namespace), "optim"}. OpenNMT-py 2.x
  pickled torchtext Fields as "vocab": refused.
- pre-norm layers with a final LayerNorm on each stack
  (onmt/encoders/transformer.py TransformerEncoderLayer.forward:
  x + self_attn(LN(x)), then feed_forward, whose PositionwiseFeedForward in
  onmt/modules/position_ffn.py computes x + w_2(act(w_1(LN(x)))); encoder and
  decoder end with self.layer_norm; onmt/decoders/transformer.py
  TransformerDecoderLayer._forward: layer_norm_1 before self-attention,
  layer_norm_2 on the query of context_attn, whose keys and values are the
  encoder output);
- LayerNorm eps: opt.norm_eps (3.2+), 1e-6 before (nn.LayerNorm(d, eps=1e-6));
  layer_norm "rms" (RMSNorm) refused;
- positions (onmt/modules/embeddings.py PositionalEncoding): emb * sqrt(d) +
  pe[step + p] with p from 0, only with position_encoding true;
  SinusoidalInterleaved: pe[p, 2i] = sin(p exp(-2i ln(10000)/d)), pe[p, 2i+1] =
  cos(...) = tessera "sinusoid"; SinusoidalConcat: [sin | cos] of
  p exp(-i ln(10000)/(d/2 - 1)) = tessera "sinusoid_halves_t2t" (the t2t
  frequencies, not transformers' MarianMT ones); the table has 5000 rows
  (SequenceTooLongError beyond): max_positions 5000. A stored pe buffer is
  checked against the formula. max_relative_positions > 0 (relative
  positions), -1 (rotary), -2 (ALiBi) and relative_positions_buckets are refused;
- attention (onmt/modules/multi_headed_attn.py): linear_query / linear_keys /
  linear_values / final_linear, each with a bias only when add_qkvbias (the
  output projection too): zero biases are written otherwise; softmax(q k^T /
  sqrt(d_head)) v; self_attn_type "scaled-dot" or "scaled-dot-flash" (the same
  arithmetic: flash only on a GPU), "average" refused; num_kv / multiquery
  refused;
- FFN: w_1 / w_2 with biases when add_ffnbias (3.2+; always before): zeros
  otherwise; pos_ffn_activation_fn relu (F.relu) or gelu (F.gelu, erf) —
  "silu" and "gated-gelu" add a gate w_3 (act(w_1 x) * w_3 x), which tessera
  has not: refused;
- generator: nn.Linear(d, V_tgt) with a bias ({"weight", "bias"}; 3.0's
  nn.Sequential: "0.weight", "0.bias"); share_decoder_embeddings ties its weight
  to the decoder embeddings (tie_output_projection), share_embeddings the
  decoder's embeddings to the encoder's (share_embeddings);
- the source is the tokens as given (onmt/inputters/text_utils.py numericalize:
  no bos, no eos for seq2seq); the decoder starts from
  vocab["decoder_start_token"] (default "<s>"); translation stops at "</s>";
  nothing is banned (ban_unk_token is a translate option, off by default);
- ids are the vocab lists' order: default_specials <unk> 0, <blank> (pad) 1,
  <s> 2, </s> 3 when the vocabulary files did not hold them elsewhere.
Refused with one line naming the option and value: encoder_type / decoder_type
other than transformer, model_task lm, parallel_residual, num_kv, heads_kv,
lambda_align, sliding_window, num_experts, copy_attn, sparsemax, source
features, LoRA or quantized layers, different encoder and decoder widths.

Needs torch only in tessera-convert (to read the .pt); this module itself uses
numpy on the loaded tensors.
"""

import json
import math
import os
import sys

import numpy as np

from . import pickles
from .errors import PROG, ConvertError, note
from .files import plan_tokenizer, resolve_spm, write_model

PE_ROWS = 5000
PE_TOLERANCE = 2e-3  # torch's float32 table against the formula in double, up to row 5000
SPECIALS = {"unk": "<unk>", "pad": "<blank>", "bos": "<s>", "eos": "</s>"}
POSITION_TYPES = {"SinusoidalInterleaved": "sinusoid", "SinusoidalConcat": "sinusoid_halves_t2t"}
ACTIVATIONS = {"relu": "relu", "gelu": "gelu"}



def allowed_globals():
    """What an OpenNMT-py 3.x checkpoint pickles besides tensors and plain values
    (for pickles.load). A defaultdict names its factory, which must itself be one of
    these."""
    import argparse
    import collections
    table = pickles.builtin_types("list", "dict", "int", "float", "str", "bool", "tuple")
    table[("argparse", "Namespace")] = argparse.Namespace
    table[("collections", "defaultdict")] = collections.defaultdict
    return table


def legacy_global(name):
    """The message for a pickle global that marks an OpenNMT-py 2.x (or older)
    checkpoint, else None."""
    module = name.split(" ")[0]
    if module.startswith(("torchtext", "onmt.inputters", "onmt.utils", "onmt.modules")):
        return ("an OpenNMT-py 2.x (or older) checkpoint: its vocabulary is pickled torchtext "
                "Fields (%s); only OpenNMT-py 3.x checkpoints (vocab a dict of token lists) "
                "convert; load and re-save it with OpenNMT-py 3" % name.replace(" ", "."))
    return None


def detect(path):
    """True for a .pt file that looks_like_opennmt."""
    return os.path.isfile(path) and looks_like_opennmt(path)


def looks_like_opennmt(path):
    """True when a torch.save'd file's pickle (read with pickletools, never
    unpickled) names argparse.Namespace and holds the keys "generator", "vocab"
    and "opt": what tessera-convert takes for OpenNMT-py without --from."""
    import io
    import pickletools
    import zipfile
    try:
        if not zipfile.is_zipfile(path):
            return False
        with zipfile.ZipFile(path) as archive:
            data = [n for n in archive.namelist() if n.endswith("data.pkl")]
            if len(data) != 1:
                return False
            stream = io.BytesIO(archive.read(data[0]))
        found = set()
        for opcode, arg, _ in pickletools.genops(stream):
            if opcode.name == "GLOBAL" and arg == "argparse Namespace":
                found.add("Namespace")
            elif isinstance(arg, str) and arg in ("generator", "vocab", "opt"):
                found.add(arg)
        return found == {"Namespace", "generator", "vocab", "opt"}
    except Exception:
        return False


# ---- options ------------------------------------------------------------------

class Options:
    """opt (a Namespace or a dict), with OpenNMT-py's defaults for keys older
    versions did not have (ArgumentParser.ckpt_model_opts does the same)."""

    def __init__(self, opt):
        if opt is None:
            raise ConvertError("the checkpoint has no 'opt': not an OpenNMT-py checkpoint")
        values = opt if isinstance(opt, dict) else getattr(opt, "__dict__", None)
        if not isinstance(values, dict):
            raise ConvertError("'opt' is %s, expected an argparse.Namespace" % type(opt).__name__)
        self.values = values

    def has(self, key):
        return key in self.values

    def get(self, key, default=None):
        value = self.values.get(key, default)
        return default if value is None and default is not None else value


def refuse(key, value, why):
    raise ConvertError("opt.%s: %s: %s" % (key, json.dumps(value, default=str), why))


def check_options(o):
    """The choices tessera needs, each unsupported one refused in one line."""
    if o.get("model_task", "seq2seq") != "seq2seq":
        refuse("model_task", o.get("model_task"), "only seq2seq (encoder-decoder) models convert")
    if o.get("model_type", "text") != "text":
        refuse("model_type", o.get("model_type"), "only text models convert")
    for key in ("encoder_type", "decoder_type"):
        if o.get(key) != "transformer":
            refuse(key, o.get(key), "only 'transformer' is supported")
    attn = o.get("self_attn_type", "scaled-dot")
    if attn not in ("scaled-dot", "scaled-dot-flash"):
        refuse("self_attn_type", attn, "only 'scaled-dot' (and 'scaled-dot-flash', the same "
                                       "arithmetic) is supported: no average attention")
    if o.get("aan_useffn", False):
        note("opt.aan_useffn is true but self_attn_type is %s: it has no effect" % attn)
    relative = o.get("max_relative_positions", 0)
    if relative != 0:
        what = {-1: "rotary embeddings", -2: "ALiBi"}.get(relative, "relative position representations")
        refuse("max_relative_positions", relative, "not supported: %s" % what)
    if o.get("relative_positions_buckets", 0):
        refuse("relative_positions_buckets", o.get("relative_positions_buckets"),
               "relative position buckets (T5) are not supported")
    if not o.get("position_encoding", False):
        refuse("position_encoding", o.get("position_encoding", False),
               "a Transformer without sinusoidal positions (nor relative ones) is not supported")
    kind = o.get("position_encoding_type", "SinusoidalInterleaved")
    if kind not in POSITION_TYPES:
        refuse("position_encoding_type", kind, "only %s are supported" % " and ".join(POSITION_TYPES))
    activation = o.get("pos_ffn_activation_fn", "relu")
    if activation in ("silu", "gated-gelu"):
        refuse("pos_ffn_activation_fn", activation,
               "OpenNMT-py's %s FFN is gated (act(w_1 x) * w_3 x), which tessera does not run"
               % activation)
    if activation not in ACTIVATIONS:
        refuse("pos_ffn_activation_fn", activation, "only relu and gelu are supported")
    if o.get("layer_norm", "standard") != "standard":
        refuse("layer_norm", o.get("layer_norm"), "only 'standard' LayerNorm is supported (no RMSNorm)")
    eps = o.get("norm_eps", 1e-6)
    if isinstance(eps, bool) or not isinstance(eps, (int, float)) or not eps > 0:
        refuse("norm_eps", eps, "expected a number > 0")
    for key, why in (("parallel_residual", "parallel residual layers are not supported"),
                     ("multiquery", "multi-query attention is not supported"),
                     ("copy_attn", "the copy generator is not supported"),
                     ("lora_embedding", "unmerged LoRA embeddings are not supported")):
        if o.get(key, False):
            refuse(key, o.get(key), why)
    for key, why in (("num_kv", "grouped-query attention (fewer key/value heads) is not supported"),
                     ("heads_kv", "grouped-query attention (fewer key/value heads) is not supported"),
                     ("sliding_window", "a sliding-window decoder mask is not supported"),
                     ("num_experts", "mixture-of-experts FFNs are not supported"),
                     ("lambda_align", "guided-alignment models are not supported"),
                     ("n_src_feats", "source features are not supported")):
        value = o.get(key, 0)
        if value not in (0, None, 0.0):
            refuse(key, value, why)
    if o.get("generator_function", "softmax") != "softmax":
        refuse("generator_function", o.get("generator_function"), "only softmax is supported")
    for key in ("quant_layers", "lora_layers"):
        if o.get(key):
            refuse(key, o.get(key), "quantized or LoRA layers are not supported")
    enc, dec = widths(o)
    if enc != dec:
        refuse("dec_hid_size", dec, "differs from enc_hid_size (%s); tessera has one width" % enc)
    heads = o.get("heads", 8)
    if isinstance(heads, bool) or not isinstance(heads, int) or heads < 1:
        refuse("heads", heads, "expected an integer >= 1")
    return {
        "heads": heads,
        "activation": ACTIVATIONS[activation],
        "position_encoding": kind,
        "eps": float(eps),
        "add_qkvbias": bool(o.get("add_qkvbias", False)),
        # add_ffnbias arrived in 3.2 (default off); before it the FFN always had biases.
        "add_ffnbias": bool(o.get("add_ffnbias", True)) if o.has("add_ffnbias") else True,
        "share_embeddings": bool(o.get("share_embeddings", False)),
        "share_decoder_embeddings": bool(o.get("share_decoder_embeddings", False)),
        "width": enc,
    }


def widths(o):
    """(encoder, decoder) model widths as ArgumentParser.update_model_opts gives them."""
    hidden = o.get("hidden_size", -1)
    if isinstance(hidden, int) and hidden > 0:
        return hidden, hidden
    return o.get("enc_hid_size", o.get("enc_rnn_size")), o.get("dec_hid_size", o.get("dec_rnn_size"))


# ---- vocabularies -------------------------------------------------------------

def read_vocab(vocab):
    if not isinstance(vocab, dict) or not all(isinstance(vocab.get(k), list) for k in ("src", "tgt")):
        raise ConvertError("'vocab' is not OpenNMT-py 3.x's dict of token lists ({'src': [...], "
                           "'tgt': [...]}), found %s: OpenNMT-py 2.x and older are not supported"
                           % type(vocab).__name__)
    if vocab.get("src_feats"):
        raise ConvertError("vocab: src_feats: source features are not supported")
    if vocab.get("data_task", "seq2seq") != "seq2seq":
        raise ConvertError("vocab: data_task: %s: only seq2seq models convert" % vocab.get("data_task"))
    for side in ("src", "tgt"):
        if not all(isinstance(t, str) for t in vocab[side]):
            raise ConvertError("vocab: %s: a token is not a string" % side)
    return vocab["src"], vocab["tgt"], vocab.get("decoder_start_token") or SPECIALS["bos"]


def special_ids(src, tgt, start_token):
    def find(tokens, token, side, what):
        try:
            return tokens.index(token)
        except ValueError:
            raise ConvertError("vocab: %s: no %s token %s" % (side, what, json.dumps(token)))
    ids = {"bos": find(tgt, start_token, "tgt", "decoder start"),
           "eos": find(tgt, SPECIALS["eos"], "tgt", "end"),
           "unk": find(tgt, SPECIALS["unk"], "tgt", "unknown"),
           "pad": find(tgt, SPECIALS["pad"], "tgt", "padding")}
    for what in ("unk", "pad"):
        src_id = find(src, SPECIALS[what], "src", {"unk": "unknown", "pad": "padding"}[what])
        if src_id != ids[what]:
            note("%s is %d in the source vocabulary and %d in the target one; tessera's %s_id is "
                 "the target's" % (SPECIALS[what], src_id, ids[what], what))
        if ids[what] >= len(src):
            raise ConvertError("vocab: %s has id %d in tgt, outside the source vocabulary (%d)"
                               % (SPECIALS[what], ids[what], len(src)))
    return ids


def writable_vocab(tokens, side):
    bad = [t for t in tokens if not t or any(c.isspace() for c in t)]
    if bad:
        note("vocab.%s.txt not written: token %s is empty or holds white space, which a "
             "one-token-per-line file cannot hold" % (side, json.dumps(bad[0])))
        return False
    return True


# ---- tensors ------------------------------------------------------------------

class Tensors:
    """A state dict's tensors taken by name, checked, as float32 numpy arrays."""

    def __init__(self, state, where):
        if not isinstance(state, dict):
            raise ConvertError("'%s' is %s, expected a state dict" % (where, type(state).__name__))
        self.state, self.where, self.used = state, where, set()

    def has(self, name):
        return name in self.state

    def get(self, name, shape):
        tensor = self.state.get(name)
        if tensor is None:
            raise ConvertError("missing tensor '%s' (expected shape %s)" % (self.label(name), list(shape)))
        if list(tensor.shape) != list(shape):
            raise ConvertError("tensor '%s' has shape %s, expected %s"
                               % (self.label(name), list(tensor.shape), list(shape)))
        if not tensor.is_floating_point():
            raise ConvertError("tensor '%s' has dtype %s, expected a floating-point type"
                               % (self.label(name), tensor.dtype))
        self.used.add(name)
        return tensor.detach().float().numpy().astype(np.float32)

    def optional_bias(self, name, size, wanted, option):
        """The bias when the option says there is one, zeros when not; a
        tensor against the option is an error (OpenNMT-py would not load it)."""
        if wanted:
            return self.get(name, [size])
        if self.has(name):
            raise ConvertError("tensor '%s' is present but opt.%s is false"
                               % (self.label(name), option))
        return np.zeros(size, dtype=np.float32)

    def label(self, name):
        return name if self.where == "model" else "%s.%s" % (self.where, name)


def positional_formula(rows, dim, kind):
    """The table of onmt/modules/embeddings.py PositionalEncoding, in double."""
    p = np.arange(rows, dtype=np.float64)[:, None]
    if kind == "SinusoidalInterleaved":
        angle = p * np.exp(np.arange(0, dim, 2) * -(math.log(10000.0) / dim))
        table = np.zeros((rows, dim))
        table[:, 0::2], table[:, 1::2] = np.sin(angle), np.cos(angle)
        return table
    half = dim // 2
    angle = p * np.exp(np.arange(half) * -(math.log(10000.0) / (half - 1)))
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)


def check_positions(t, stack, d, kind):
    """A stored pe buffer must be the table position_encoding_type computes
    (tessera computes it again, so the buffer is not written)."""
    name = "%s.embeddings.make_embedding.pe.pe" % stack
    if not t.has(name):
        return
    buffer = t.state[name]
    if buffer.dim() != 3 or buffer.shape[1] != 1 or buffer.shape[2] != d:
        raise ConvertError("tensor '%s' has shape %s, expected [rows, 1, %d]" % (name, list(buffer.shape), d))
    t.used.add(name)
    table = buffer[:, 0, :].double().numpy()
    gap = np.abs(table - positional_formula(table.shape[0], d, kind)).max()
    if not gap < PE_TOLERANCE:
        other = [k for k in POSITION_TYPES if k != kind][0]
        also = (" (it is the %s table)" % other
                if np.abs(table - positional_formula(table.shape[0], d, other)).max() < PE_TOLERANCE
                else "")
        raise ConvertError("tensor '%s' is not the %s table of opt.position_encoding_type "
                           "(differs by %.3g)%s" % (name, kind, gap, also))


def attention(t, prefix, out_prefix, d, bias, out):
    parts = {p: t.get("%s.%s.weight" % (prefix, p), [d, d])
             for p in ("linear_query", "linear_keys", "linear_values", "final_linear")}
    biases = {p: t.optional_bias("%s.%s.bias" % (prefix, p), d, bias, "add_qkvbias") for p in parts}
    out[out_prefix + ".in_proj_weight"] = np.concatenate(
        [parts["linear_query"], parts["linear_keys"], parts["linear_values"]])
    out[out_prefix + ".in_proj_bias"] = np.concatenate(
        [biases["linear_query"], biases["linear_keys"], biases["linear_values"]])
    out[out_prefix + ".out_proj.weight"] = parts["final_linear"]
    out[out_prefix + ".out_proj.bias"] = biases["final_linear"]


def norm(t, prefix, out_prefix, d, out):
    out[out_prefix + ".weight"] = t.get(prefix + ".weight", [d])
    out[out_prefix + ".bias"] = t.get(prefix + ".bias", [d])


def ffn(t, prefix, out_prefix, d, d_ff, bias, out):
    out[out_prefix + ".linear1.weight"] = t.get(prefix + ".w_1.weight", [d_ff, d])
    out[out_prefix + ".linear1.bias"] = t.optional_bias(prefix + ".w_1.bias", d_ff, bias, "add_ffnbias")
    out[out_prefix + ".linear2.weight"] = t.get(prefix + ".w_2.weight", [d, d_ff])
    out[out_prefix + ".linear2.bias"] = t.optional_bias(prefix + ".w_2.bias", d, bias, "add_ffnbias")


def layer_count(state, prefix):
    found = sorted({int(name[len(prefix):].split(".")[0]) for name in state
                    if name.startswith(prefix) and name[len(prefix):].split(".")[0].isdigit()})
    if not found:
        raise ConvertError("no tensors named %s0.*" % prefix)
    if found != list(range(len(found))):
        missing = sorted(set(range(max(found) + 1)) - set(found))[0]
        raise ConvertError("%s%d: missing (layers found: %s)" % (prefix, missing, ", ".join(map(str, found))))
    return len(found)


def select_tensors(ckpt, arch, src_vocab, tgt_vocab):
    """(tessera's tensors, d_ff, layer counts)."""
    t = Tensors(ckpt["model"], "model")
    bad = sorted(n for n in t.state if "lora_" in n)
    if bad:
        raise ConvertError("tensor '%s': unmerged LoRA weights are not supported" % bad[0])
    enc_emb = "encoder.embeddings.make_embedding.emb_luts.0.weight"
    dec_emb = "decoder.embeddings.make_embedding.emb_luts.0.weight"
    for name in (enc_emb, dec_emb):
        if not t.has(name):
            raise ConvertError("missing tensor '%s'" % name)
    d = t.state[enc_emb].shape[-1]
    if t.state[dec_emb].shape[-1] != d:
        raise ConvertError("tensor '%s' is %d wide but '%s' is %d: different encoder and decoder "
                           "widths" % (dec_emb, t.state[dec_emb].shape[-1], enc_emb, d))
    if arch["width"] is not None and arch["width"] != d:
        refuse("enc_hid_size", arch["width"], "but tensor '%s' is %d wide" % (enc_emb, d))
    if d % arch["heads"]:
        refuse("heads", arch["heads"], "does not divide the model width %d" % d)
    n_enc = layer_count(t.state, "encoder.transformer.")
    n_dec = layer_count(t.state, "decoder.transformer_layers.")
    w1 = "encoder.transformer.0.feed_forward.w_1.weight"
    if not t.has(w1):
        raise ConvertError("missing tensor '%s'" % w1)
    d_ff = t.state[w1].shape[0]
    out = {}
    out["tgt_tok_emb.embedding.weight"] = t.get(dec_emb, [tgt_vocab, d])
    source = t.get(enc_emb, [src_vocab, d])
    if arch["share_embeddings"]:
        if not np.array_equal(source, out["tgt_tok_emb.embedding.weight"]):
            raise ConvertError("opt.share_embeddings is true but '%s' and '%s' differ" % (enc_emb, dec_emb))
    else:
        out["src_tok_emb.embedding.weight"] = source
    for stack in ("encoder", "decoder"):
        check_positions(t, stack, d, arch["position_encoding"])
    for i in range(n_enc):
        p, q = "encoder.transformer.%d" % i, "transformer.encoder.layers.%d" % i
        attention(t, p + ".self_attn", q + ".self_attn", d, arch["add_qkvbias"], out)
        norm(t, p + ".layer_norm", q + ".norm1", d, out)
        ffn(t, p + ".feed_forward", q, d, d_ff, arch["add_ffnbias"], out)
        norm(t, p + ".feed_forward.layer_norm", q + ".norm2", d, out)
    for i in range(n_dec):
        p, q = "decoder.transformer_layers.%d" % i, "transformer.decoder.layers.%d" % i
        attention(t, p + ".self_attn", q + ".self_attn", d, arch["add_qkvbias"], out)
        norm(t, p + ".layer_norm_1", q + ".norm1", d, out)
        attention(t, p + ".context_attn", q + ".multihead_attn", d, arch["add_qkvbias"], out)
        norm(t, p + ".layer_norm_2", q + ".norm2", d, out)
        ffn(t, p + ".feed_forward", q, d, d_ff, arch["add_ffnbias"], out)
        norm(t, p + ".feed_forward.layer_norm", q + ".norm3", d, out)
    norm(t, "encoder.layer_norm", "transformer.encoder.norm", d, out)
    norm(t, "decoder.layer_norm", "transformer.decoder.norm", d, out)

    generator = ckpt.get("generator")
    if generator is None and isinstance(ckpt["model"], dict):
        generator = {k[len("generator."):]: v for k, v in ckpt["model"].items() if k.startswith("generator.")}
    g = Tensors(generator, "generator")
    prefix = "0." if g.has("0.weight") or g.has("0.bias") else ""  # 3.0: nn.Sequential(Linear, ...)
    if arch["share_decoder_embeddings"]:
        if g.has(prefix + "weight"):
            tied = g.get(prefix + "weight", [tgt_vocab, d])
            if not np.array_equal(tied, out["tgt_tok_emb.embedding.weight"]):
                raise ConvertError("opt.share_decoder_embeddings is true but 'generator.%sweight' and "
                                   "'%s' differ" % (prefix, dec_emb))
    else:
        out["generator.weight"] = g.get(prefix + "weight", [tgt_vocab, d])
    out["generator.bias"] = g.get(prefix + "bias", [tgt_vocab])
    unused = sorted(set(t.state) - t.used - {n for n in t.state if n.startswith("generator.")})
    unused += sorted("generator." + n for n in set(g.state) - g.used
                     if not (arch["share_decoder_embeddings"] and n == prefix + "weight"))
    if unused:
        raise ConvertError("tensor '%s' is not part of the Transformer these options describe"
                           % unused[0])
    return out, d, d_ff, n_enc, n_dec


# ---- writing ------------------------------------------------------------------

def convert(input_path, out_dir, note=note, trust_pickle=False, source_spm=None,
            target_spm=None):
    """Converts the OpenNMT-py checkpoint input_path into out_dir; returns the config."""
    ckpt = pickles.load(input_path, trust_pickle, allowed_globals(), legacy_global,
                        "OpenNMT-py checkpoint")
    return convert_checkpoint(ckpt, os.path.basename(input_path), out_dir, source_spm, target_spm)


def convert_checkpoint(ckpt, source_name, out_dir, source_spm=None, target_spm=None):
    """Writes out_dir from a loaded checkpoint dict; returns the config.
    source_spm, target_spm: SentencePiece models for text (the vocabulary's
    ids, never the models' own)."""
    spm_files = resolve_spm((source_spm, target_spm), (None, None), note)
    if not isinstance(ckpt, dict):
        raise ConvertError("expected a dict, found %s" % type(ckpt).__name__)
    if "model" not in ckpt or ckpt["model"] is None:
        if "opt" in ckpt:
            raise ConvertError("no 'model' in the checkpoint: its weights are in a separate "
                               ".safetensors file (OpenNMT-py 3.5), which tessera-convert does not read")
        raise ConvertError("no 'model' in the checkpoint: not an OpenNMT-py checkpoint")
    options = Options(ckpt.get("opt"))
    src, tgt, start_token = read_vocab(ckpt.get("vocab"))
    arch = check_options(options)
    if arch["share_embeddings"] and src != tgt:
        raise ConvertError("opt.share_embeddings is true but vocab src and tgt differ")
    ids = special_ids(src, tgt, start_token)
    tensors, d, d_ff, n_enc, n_dec = select_tensors(ckpt, arch, len(src), len(tgt))
    if arch["position_encoding"] == "SinusoidalConcat" and d < 4:
        raise ConvertError("SinusoidalConcat needs a width >= 4, got %d" % d)
    dtypes = {str(v.dtype) for v in ckpt["model"].values() if hasattr(v, "is_floating_point")
              and v.is_floating_point()}
    if dtypes - {"torch.float32"}:
        note("weights stored as %s are written as F32" % ", ".join(sorted(dtypes)))
    config = {
        "d_model": d,
        "n_heads": arch["heads"],
        "d_ff": d_ff,
        "n_encoder_layers": n_enc,
        "n_decoder_layers": n_dec,
        "src_vocab_size": len(src),
        "tgt_vocab_size": len(tgt),
        "max_positions": PE_ROWS,
        "activation": arch["activation"],
        "norm_first": True,
        "layer_norm_eps": arch["eps"],
        "layer_norm_form": "variance",
        "scale_embedding": True,
        "bos_id": ids["bos"],
        "eos_id": ids["eos"],
        "pad_id": ids["pad"],
        "unk_id": ids["unk"],
        "family": "opennmt-py",
        "position_encoding": POSITION_TYPES[arch["position_encoding"]],
        "share_embeddings": arch["share_embeddings"],
        "tie_output_projection": arch["share_decoder_embeddings"],
        "decoder_start": "bos",
    }
    if ids["pad"] not in (ids["bos"], ids["eos"]):
        note("OpenNMT-py masks the decoder's %s tokens when it scores a target (teacher "
             "forcing); tessera treats them as ordinary tokens" % SPECIALS["pad"])
    written = {side: tokens if writable_vocab(tokens, side) else None
               for side, tokens in (("src", src), ("tgt", tgt))}
    tokenizer = plan_tokenizer(spm_files, (written["src"], written["tgt"]))
    write_model(out_dir, config, tensors,
                {"converted_by": PROG, "source": source_name, "family": "opennmt-py"},
                vocabs=(written["src"], written["tgt"]), tokenizer=tokenizer)
    print("%s: wrote %s (opennmt-py, %d tensors, F32, d_model %d, %d+%d layers, pre-norm, %s, %s)"
          % (PROG, out_dir, len(tensors), d, n_enc, n_dec, config["activation"],
             config["position_encoding"]), file=sys.stderr)
    return config
