"""An independent float64 numpy reference of fairseq's translation Transformer.

It reads a fairseq checkpoint (the .pt and dict.SRC.txt / dict.TGT.txt) by
fairseq's own tensor and option names, never through tools/converters/fairseq.py
or tessera's names, and computes what `tessera score` / `tessera translate`
must print for the converted model. Written from fairseq's sources:

- Dictionary (fairseq/data/dictionary.py): <s> 0, <pad> 1, </s> 2, <unk> 3, then
  one id per dict.txt line.
- TransformerEncoder (models/transformer/transformer_encoder.py): the source
  ids with </s> appended (the translation task's datasets append it); x =
  embed_scale * embed_tokens(ids) + embed_positions(ids), embed_scale =
  sqrt(embed_dim) unless no_scale_embedding; layernorm_embedding when set;
  padded positions zeroed; the layers; encoder.layer_norm with
  encoder_normalize_before.
- Positions: utils.make_positions: a non-pad token's position is pad + its
  1-based index among the non-pad tokens, a pad token's is pad. Learned:
  embed_positions.weight rows; sinusoidal:
  SinusoidalPositionalEmbedding.get_embedding, computed as fairseq does in
  float32 (exp(arange(half) * -(ln 10000 / (half - 1))), sin | cos), the row
  padding_idx zeroed.
- TransformerEncoderLayer / TransformerDecoderLayer (modules/transformer_layer.py):
  residual blocks with LayerNorm (eps 1e-5, modules/layer_norm.py) after
  (post-norm) or before (normalize_before) self-attention, encoder-decoder
  attention (decoder) and fc2(act(fc1(x))); act relu, gelu (erf) or
  gelu_accurate (tanh form, modules/gelu.py).
- MultiheadAttention (modules/multihead_attention.py): q = q_proj(x) *
  head_dim^-0.5, k = k_proj, v = v_proj (or the older stacked in_proj_weight),
  softmax(q k^T) per head (causal in the decoder's self-attention, source pad
  keys masked), out_proj.
- TransformerDecoder: prev_output_tokens start with </s> (sequence_generator.py:
  tokens[:, 0] = eos; the scorer's collater moves </s> to the front); x =
  embed_scale * embed_tokens + positions, layernorm_embedding, layers,
  decoder.layer_norm when decoder_normalize_before and not
  no_decoder_final_norm; logits = x W^T, W = decoder.output_projection.weight,
  decoder.embed_out (older) or decoder.embed_tokens.weight when
  share_decoder_input_output_embed; no bias. Final norms are dropped as
  fairseq's upgrade_state_dict_named drops them for an old "version" buffer.
- The log-softmax over the whole vocabulary (get_normalized_probs).

Bans, as SequenceGenerator._generate applies them to the log-probabilities
(after the log-softmax, at every step): lprobs[pad] = -inf; lprobs[unk] -=
unk_penalty (0 by default: nothing); at steps below min_len (default 1)
lprobs[eos] = -inf. `score` applies none (SequenceScorer). tessera's model
keys express the pad ban (banned_target_ids [pad], mode log_probs) but not
min_len: `min_len` is an attribute here (fairseq's 1 by default), so that
fixtures can keep only the sentences where it makes no difference.

Searches: greedy_with_margin and beam_search are tessera's search exactly,
the numpy port in tools/marian_reference.py (itself checked against
tools/tessera_torch.py's beam_search), run on this model's rows. Needs numpy,
and torch only to read the .pt.
"""

import argparse
import collections
import glob
import math
import os
import pickle
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import marian_reference as mr  # noqa: E402  (tessera's search, ported to numpy)

LAYER_NORM_EPS = 1e-5
Hypothesis = mr.Hypothesis
format_nbest = mr.format_nbest
format_logprobs = mr.format_logprobs


# ---- reading the checkpoint -------------------------------------------------------

class _Loose:
    """Whatever omegaconf object the pickle names: its state, nothing else."""

    def __setstate__(self, state):
        if isinstance(state, tuple):
            state = dict(state[0] or {}, **(state[1] or {}))
        self.__dict__.update(state)


class _Unpickler(pickle.Unpickler):
    def find_class(self, module, name):
        if module.startswith("omegaconf"):
            return type(name, (_Loose,), {})
        if (module, name) == ("typing", "Any"):
            return "typing.Any"
        return super().find_class(module, name)


class _PickleModule:
    Unpickler = _Unpickler

    @staticmethod
    def load(f, **kwargs):
        return _Unpickler(f, **kwargs).load()


def read_pt(path):
    """The checkpoint dict (for checkpoints one trusts: only omegaconf is replaced)."""
    import zipfile
    import torch.serialization as ts
    with open(path, "rb") as f:
        if zipfile.is_zipfile(f):
            f.seek(0)
            with ts._open_zipfile_reader(f) as archive:
                return ts._load(archive, "cpu", _PickleModule, encoding="utf-8")
        f.seek(0)
        return ts._legacy_load(f, "cpu", _PickleModule, encoding="utf-8")


def _values(obj):
    if isinstance(obj, _Loose):
        d = obj.__dict__
        if "_content" in d:
            c = d["_content"]
            if isinstance(c, dict):
                return {k: _values(v) for k, v in c.items()}
            if isinstance(c, list):
                return [_values(v) for v in c]
            return c
        return _values(d.get("_val"))
    if isinstance(obj, argparse.Namespace):
        return dict(vars(obj))
    if isinstance(obj, dict):
        return {k: _values(v) for k, v in obj.items()}
    return obj


def model_args(checkpoint):
    """fairseq's model arguments (flat names) and the task's languages."""
    if checkpoint.get("args") is not None:
        args = dict(vars(checkpoint["args"]))
        return args, args
    cfg = _values(checkpoint["cfg"])
    model = dict(cfg["model"])
    for section, prefix in (("encoder", "encoder_"), ("decoder", "decoder_")):
        if isinstance(model.get(section), dict):
            for k, v in model.pop(section).items():
                model.setdefault(prefix + k, v)
    return model, cfg["task"]


def read_dictionary(path):
    """Dictionary.load: the 4 specials, then one symbol per line."""
    symbols = ["<s>", "<pad>", "</s>", "<unk>"]
    with open(path, encoding="utf-8") as f:
        for line in f:
            word, field = line.rstrip().rsplit(" ", 1)
            if field == "#fairseq:overwrite":
                word, field = word.rsplit(" ", 1)
            int(field)
            symbols.append(word)
    return symbols


def fairseq_sinusoid(num_embeddings, dim, padding_idx):
    """SinusoidalPositionalEmbedding.get_embedding, in float32 as torch computes it."""
    half = dim // 2
    step = np.float32(math.log(10000) / (half - 1))
    freq = np.exp(np.arange(half, dtype=np.float32) * -step)
    angle = np.arange(num_embeddings, dtype=np.float32)[:, None] * freq[None, :]
    table = np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
    if dim % 2:
        table = np.concatenate([table, np.zeros((num_embeddings, 1), np.float32)], axis=1)
    table[padding_idx] = 0
    return table.astype(np.float64)


def gelu_erf(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


def gelu_accurate(x):
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3)))


ACTIVATIONS = {"relu": lambda x: np.maximum(x, 0.0), "gelu": gelu_erf,
               "gelu_accurate": gelu_accurate, "gelu_fast": gelu_accurate}


class FairseqReference:
    """fairseq's TransformerModel in float64, with tessera's search."""

    def __init__(self, directory, min_len=1):
        pts = sorted(glob.glob(os.path.join(directory, "*.pt")))
        if len(pts) != 1:
            raise ValueError("%s: expected one *.pt" % directory)
        checkpoint = read_pt(pts[0])
        args, task = model_args(checkpoint)
        self.args = args
        state = checkpoint["model"]
        self.w = {k: v.detach().double().numpy() for k, v in state.items()}
        self._upgrade()
        src_dict = os.path.join(directory, "dict.%s.txt" % task["source_lang"])
        tgt_dict = os.path.join(directory, "dict.%s.txt" % task["target_lang"])
        self.src_symbols = read_dictionary(src_dict)
        self.tgt_symbols = read_dictionary(tgt_dict)
        self.bos, self.pad, self.eos, self.unk = 0, 1, 2, 3
        self.dim = self.w["encoder.embed_tokens.weight"].shape[1]
        self.heads = int(args["encoder_attention_heads"])
        self.dec_heads = int(args["decoder_attention_heads"])
        self.enc_layers = int(args["encoder_layers"])
        self.dec_layers = int(args["decoder_layers"])
        self.act = ACTIVATIONS[args.get("activation_fn", "relu")]
        self.enc_pre = bool(args.get("encoder_normalize_before", False))
        self.dec_pre = bool(args.get("decoder_normalize_before", False))
        self.embed_scale = 1.0 if args.get("no_scale_embedding", False) else math.sqrt(self.dim)
        self.layernorm_embedding = bool(args.get("layernorm_embedding", False))
        version = lambda stack: float(self.w.get(stack + ".version", np.array([1.0]))[0])
        self.enc_final = self.enc_pre and version("encoder") >= 2
        self.dec_final = (self.dec_pre and not args.get("no_decoder_final_norm", False)
                          and version("decoder") > 2)
        self.max_source = int(args.get("max_source_positions", 1024))
        self.max_target = int(args.get("max_target_positions", 1024))
        self.pos = {}
        for stack, learned, limit in (("encoder", args.get("encoder_learned_pos", False), self.max_source),
                                      ("decoder", args.get("decoder_learned_pos", False), self.max_target)):
            if learned:
                self.pos[stack] = self.w[stack + ".embed_positions.weight"]
            else:
                self.pos[stack] = fairseq_sinusoid(limit + self.pad + 1, self.dim, self.pad)
        if args.get("share_decoder_input_output_embed", False) or args.get("share_all_embeddings", False):
            self.out_w = self.w["decoder.embed_tokens.weight"]
        elif "decoder.output_projection.weight" in self.w:
            self.out_w = self.w["decoder.output_projection.weight"]
        else:
            self.out_w = self.w["decoder.embed_out"]
        self.min_len = min_len
        self.unk_penalty = 0.0
        # what the borrowed search reads (tools/marian_reference.py)
        self.config = {"max_positions": min(self.max_source, self.max_target), "eos_id": self.eos,
                       "bos_id": self.eos, "tgt_vocab_size": self.out_w.shape[0]}

    def _upgrade(self):
        """The renames of fairseq's upgrade_state_dict_named (older checkpoints)."""
        for name in list(self.w):
            if name.endswith(".in_proj_weight") or name.endswith(".in_proj_bias"):
                prefix, kind = name.rsplit(".", 1)
                value = self.w.pop(name)
                n = value.shape[0] // 3
                suffix = "weight" if kind == "in_proj_weight" else "bias"
                for k, p in enumerate(("q_proj", "k_proj", "v_proj")):
                    self.w["%s.%s.%s" % (prefix, p, suffix)] = value[k * n:(k + 1) * n]
            elif ".layer_norms." in name:
                head, tail = name.split(".layer_norms.")
                index, param = tail.split(".")
                names = (["self_attn_layer_norm", "encoder_attn_layer_norm", "final_layer_norm"]
                         if head.startswith("decoder") else ["self_attn_layer_norm", "final_layer_norm"])
                self.w["%s.%s.%s" % (head, names[int(index)], param)] = self.w.pop(name)

    # ---- building blocks -------------------------------------------------------

    def linear(self, x, name, bias=True):
        y = x @ self.w[name + ".weight"].T
        return y + self.w[name + ".bias"] if bias else y

    def layer_norm(self, x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + LAYER_NORM_EPS) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def attention(self, name, query, key, heads, causal=False, key_pad=None):
        n, m = query.shape[0], key.shape[0]
        hd = self.dim // heads
        q = self.linear(query, name + ".q_proj") * hd ** -0.5
        k = self.linear(key, name + ".k_proj")
        v = self.linear(key, name + ".v_proj")
        q = q.reshape(n, heads, hd).transpose(1, 0, 2)
        k = k.reshape(m, heads, hd).transpose(1, 0, 2)
        v = v.reshape(m, heads, hd).transpose(1, 0, 2)
        z = q @ k.transpose(0, 2, 1)
        if causal:
            z = np.where(np.arange(m)[None, :] <= np.arange(n)[:, None], z, -np.inf)
        if key_pad is not None:
            z = np.where(key_pad[None, None, :], -np.inf, z)
        z = z - z.max(-1, keepdims=True)
        p = np.exp(z)
        p /= p.sum(-1, keepdims=True)
        out = (p @ v).transpose(1, 0, 2).reshape(n, self.dim)
        return self.linear(out, name + ".out_proj")

    def block(self, x, norm, pre, fn):
        residual = x
        if pre:
            x = self.layer_norm(x, norm)
        x = residual + fn(x)
        if not pre:
            x = self.layer_norm(x, norm)
        return x

    def positions(self, ids, stack):
        ids = np.asarray(ids)
        mask = ids != self.pad
        return self.pos[stack][np.cumsum(mask) * mask + self.pad]

    def embed(self, ids, stack):
        x = self.embed_scale * self.w[stack + ".embed_tokens.weight"][list(ids)] + self.positions(ids, stack)
        if self.layernorm_embedding:
            x = self.layer_norm(x, stack + ".layernorm_embedding")
        return x

    # ---- the model -----------------------------------------------------------------

    def encode(self, src_ids):
        """Encoder output for the source with </s> appended: (states, pad mask)."""
        ids = list(src_ids) + [self.eos]
        pad = np.array(ids) == self.pad
        x = self.embed(ids, "encoder")
        x = x * (1 - pad[:, None])
        for i in range(self.enc_layers):
            p = "encoder.layers.%d" % i
            x = self.block(x, p + ".self_attn_layer_norm", self.enc_pre,
                           lambda h: self.attention(p + ".self_attn", h, h, self.heads,
                                                    key_pad=pad if pad.any() else None))
            x = self.block(x, p + ".final_layer_norm", self.enc_pre,
                           lambda h: self.linear(self.act(self.linear(h, p + ".fc1")), p + ".fc2"))
        if self.enc_final:
            x = self.layer_norm(x, "encoder.layer_norm")
        return x, pad

    def decode_logits(self, memory, tokens):
        """Logits [len(tokens) + 1, V] of the decoder fed [</s>] + tokens."""
        enc, pad = memory
        ids = [self.eos] + list(tokens)
        x = self.embed(ids, "decoder")
        for i in range(self.dec_layers):
            p = "decoder.layers.%d" % i
            x = self.block(x, p + ".self_attn_layer_norm", self.dec_pre,
                           lambda h: self.attention(p + ".self_attn", h, h, self.dec_heads, causal=True))
            x = self.block(x, p + ".encoder_attn_layer_norm", self.dec_pre,
                           lambda h: self.attention(p + ".encoder_attn", h, enc, self.dec_heads,
                                                    key_pad=pad if pad.any() else None))
            x = self.block(x, p + ".final_layer_norm", self.dec_pre,
                           lambda h: self.linear(self.act(self.linear(h, p + ".fc1")), p + ".fc2"))
        if self.dec_final:
            x = self.layer_norm(x, "decoder.layer_norm")
        return x @ self.out_w.T

    @staticmethod
    def log_softmax(z):
        z = z - z.max(-1, keepdims=True)
        return z - np.log(np.exp(z).sum(-1, keepdims=True))

    def next_logprobs(self, memory, tokens):
        """SequenceGenerator's row at step len(tokens): log-softmax, then the bans."""
        row = self.log_softmax(self.decode_logits(memory, tokens)[-1])
        row[self.pad] = -np.inf
        row[self.unk] -= self.unk_penalty
        if len(tokens) < self.min_len:
            row[self.eos] = -np.inf
        return row

    # ---- what tessera must print ---------------------------------------------------

    def score(self, src_ids, tgt_ids):
        """SequenceScorer: log-prob of each target token then of </s>; no bans."""
        logprobs = self.log_softmax(self.decode_logits(self.encode(src_ids), list(tgt_ids)))
        wanted = list(tgt_ids) + [self.eos]
        return [float(logprobs[i, t]) for i, t in enumerate(wanted)]

    # tessera's search (tools/marian_reference.py's port of tools/tessera_torch.py)
    greedy_with_margin = mr.MarianModel.greedy_with_margin
    greedy = mr.MarianModel.greedy
    _beam_step = mr.MarianModel._beam_step
    _beam_step_margin = mr.MarianModel._beam_step_margin
    beam_search = mr.MarianModel.beam_search


def check_search(model, sources, beam, max_len, length_penalty, n_best):
    """tools/tessera_torch.py's own beam_search on this model's rows (needs torch)."""
    return mr.check_search_against_tessera_torch(model, sources, beam, max_len, length_penalty, n_best)
