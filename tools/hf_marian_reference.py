"""An independent float64 numpy reference of transformers' MarianMTModel.

It reads a Hugging Face MarianMT directory (config.json, model.safetensors,
generation_config.json) by transformers' own tensor names, never through
tools/converters/hf_marian.py or tessera's names, and computes what
`tessera translate` / `tessera score` must print for the converted model.

The forward pass, written from transformers' modeling_marian.py:
- MarianEncoder / MarianDecoder: embed_tokens(ids) * sqrt(d_model) (when
  scale_embedding) + embed_positions(positions 0..n-1), the positions being
  MarianSinusoidalPositionalEmbedding (sin of p / 10000^(2i/d) in the first d/2
  columns, cos in the rest; computed in float64 and stored float32, as
  _init_weight does, or the stored embed_positions.weight when the file has
  one, as from_pretrained would load it);
- each layer post-norm: x = LN(x + SelfAttn(x)); (decoder: x = LN(x +
  CrossAttn(x, enc))); x = LN(x + fc2(act(fc1(x)))), nn.LayerNorm eps 1e-5; no
  embedding norm, no final norm;
- MarianAttention: q/k/v/out projections with biases, softmax(q k^T *
  head_dim^-0.5) v per head, the decoder's self-attention causal;
- logits = h lm_head^T + final_logits_bias, lm_head being the decoder's
  embedding (tie_word_embeddings) or lm_head.weight;
- the source is the given ids plus eos_token_id (MarianTokenizer's
  build_inputs_with_special_tokens); the decoder's input starts with
  decoder_start_token_id (the pad id).

Searches: `score` is the plain log-softmax (no ban, as the model's forward).
greedy_with_margin and beam_search follow tessera's search exactly
(tools/tessera_torch.py: beam_search and _beam_step are borrowed from
Seq2SeqTransformer, so importing this module needs torch), with the ids of
bad_words_ids set to -inf AFTER the log-softmax in the search's free choices
(transformers >= 4.32, NoBadWordsLogitsProcessor in _beam_search), or, when
generation_config renormalize_logits is true (mode "logits"), banned before it
in the same free choices, as tessera's banned_target_ids_mode "logits" does;
score and forced steps never ban (the model's forward pass has no bans).
"""

import json
import math
import os
import struct
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import tessera_torch as tt  # noqa: E402  (torch: the borrowed search)

LAYER_NORM_EPS = 1e-5
NP_TYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "BF16": "<u2"}


def load_safetensors(path):
    """{name: float64 array}; the stored values exactly (F16/BF16 widened)."""
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n].decode("utf-8"))
    out = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        start, end = entry["data_offsets"]
        raw = np.frombuffer(blob[8 + n + start:8 + n + end], dtype=NP_TYPES[entry["dtype"]])
        if entry["dtype"] == "BF16":
            raw = (raw.astype(np.uint32) << 16).view(np.float32)
        out[name] = raw.astype(np.float64).reshape(entry["shape"])
    return out


def halves_sinusoid(n_positions, d):
    """MarianSinusoidalPositionalEmbedding._init_weight: float64 angles, float32 table."""
    j = np.arange(d)
    angle = np.arange(n_positions, dtype=np.float64)[:, None] / np.power(10000.0, 2 * (j // 2) / d)
    half = d // 2
    table = np.empty((n_positions, d), dtype=np.float32)
    table[:, :half] = np.sin(angle[:, 0::2])
    table[:, half:] = np.cos(angle[:, 1::2])
    return table.astype(np.float64)


_ERF = np.frompyfunc(math.erf, 1, 1)


def activation(name):
    if name in ("swish", "silu"):
        return lambda x: x / (1.0 + np.exp(-x))
    if name == "gelu":
        return lambda x: 0.5 * x * (1.0 + _ERF(x / math.sqrt(2.0)).astype(np.float64))
    if name == "relu":
        return lambda x: np.maximum(x, 0.0)
    raise ValueError("activation_function %r" % name)


def log_softmax(z):
    m = np.max(z, axis=-1, keepdims=True)
    return z - m - np.log(np.sum(np.exp(z - m), axis=-1, keepdims=True))


class HFMarianReference:
    """MarianMTModel in float64 numpy, with tessera_torch's search borrowed."""

    # tessera's beam search, run on this model's rows (see the module docstring)
    beam_search = tt.Seq2SeqTransformer.beam_search
    _beam_step = tt.Seq2SeqTransformer._beam_step
    _check_prefix = tt.Seq2SeqTransformer._check_prefix

    def __init__(self, directory):
        with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
            hf = json.load(f)
        generation = {}
        path = os.path.join(directory, "generation_config.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                generation = json.load(f)
        self.hf = hf
        self.d = hf["d_model"]
        self.heads = hf["encoder_attention_heads"]
        self.act = activation(hf.get("activation_function", "gelu"))
        self.scale = math.sqrt(self.d) if hf.get("scale_embedding", False) else 1.0
        shared = hf.get("share_encoder_decoder_embeddings", True)
        raw = load_safetensors(os.path.join(directory, "model.safetensors"))
        self.w = {(k[6:] if k.startswith("model.") else k): v for k, v in raw.items()}
        if shared:
            table = self.w.get("shared.weight", self.w.get("encoder.embed_tokens.weight"))
            self.enc_emb = self.dec_emb = table
        else:
            self.enc_emb = self.w["encoder.embed_tokens.weight"]
            self.dec_emb = self.w["decoder.embed_tokens.weight"]
        if hf.get("tie_word_embeddings", True):
            self.lm_head = self.dec_emb
        else:
            self.lm_head = self.w["lm_head.weight"]
        vocab = self.lm_head.shape[0]
        self.bias = self.w.get("final_logits_bias", np.zeros((1, vocab)))[0]
        rows = hf.get("max_position_embeddings", 1024)
        computed = halves_sinusoid(rows, self.d)
        self.enc_pos = self.w.get("encoder.embed_positions.weight", computed)
        self.dec_pos = self.w.get("decoder.embed_positions.weight", computed)
        self.eos = hf.get("eos_token_id", 0)
        self.start = hf.get("decoder_start_token_id", hf.get("pad_token_id"))
        bad = generation.get("bad_words_ids", hf.get("bad_words_ids")) or []
        self.banned = sorted({s[0] for s in bad if len(s) == 1 and s[0] != self.eos})
        renormalize = generation.get("renormalize_logits", hf.get("renormalize_logits", False))
        self.mode = "logits" if renormalize else "log_probs"
        # what tessera_torch's borrowed methods read
        self.config = {"tgt_vocab_size": vocab, "src_vocab_size": self.enc_emb.shape[0],
                       "bos_id": self.start, "eos_id": self.eos, "max_positions": rows,
                       "unk_id": 1, "pad_id": hf.get("pad_token_id")}

    # ---- the network ----------------------------------------------------------

    def _linear(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def _norm(self, x, name):
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        return (x - mean) / np.sqrt(var + LAYER_NORM_EPS) * self.w[name + ".weight"] \
            + self.w[name + ".bias"]

    def _attention(self, x, memory, name, causal):
        n, m, h = x.shape[0], memory.shape[0], self.heads
        dh = self.d // h
        q = self._linear(x, name + ".q_proj").reshape(n, h, dh).transpose(1, 0, 2)
        k = self._linear(memory, name + ".k_proj").reshape(m, h, dh).transpose(1, 0, 2)
        v = self._linear(memory, name + ".v_proj").reshape(m, h, dh).transpose(1, 0, 2)
        s = (q @ k.transpose(0, 2, 1)) * dh ** -0.5
        if causal:
            s = s + np.where(np.triu(np.ones((n, m), dtype=bool), 1), -np.inf, 0.0)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        out = (p @ v).transpose(1, 0, 2).reshape(n, self.d)
        return self._linear(out, name + ".out_proj")

    def _ffn(self, x, prefix):
        return self._linear(self.act(self._linear(x, prefix + ".fc1")), prefix + ".fc2")

    def encode(self, src_ids):
        """Encoder output [len(src) + 1, d]: the source plus </s>."""
        ids = list(src_ids) + [self.eos]
        if not src_ids:
            raise ValueError("empty source")
        if len(ids) > self.enc_pos.shape[0]:
            raise ValueError("source plus </s> longer than max_position_embeddings")
        x = self.enc_emb[ids] * self.scale + self.enc_pos[:len(ids)]
        for i in range(self.hf["encoder_layers"]):
            p = "encoder.layers.%d" % i
            x = self._norm(x + self._attention(x, x, p + ".self_attn", False),
                           p + ".self_attn_layer_norm")
            x = self._norm(x + self._ffn(x, p), p + ".final_layer_norm")
        return x

    def decode_logits(self, memory, tgt_in_ids):
        """Logits [len(tgt_in), V] with causal self-attention (tgt_in starts with the start id)."""
        ids = list(tgt_in_ids)
        x = self.dec_emb[ids] * self.scale + self.dec_pos[:len(ids)]
        for i in range(self.hf["decoder_layers"]):
            p = "decoder.layers.%d" % i
            x = self._norm(x + self._attention(x, x, p + ".self_attn", True),
                           p + ".self_attn_layer_norm")
            x = self._norm(x + self._attention(x, memory, p + ".encoder_attn", False),
                           p + ".encoder_attn_layer_norm")
            x = self._norm(x + self._ffn(x, p), p + ".final_layer_norm")
        return x @ self.lm_head.T + self.bias

    # ---- rows for the searches --------------------------------------------------

    def _ban_before(self, logits):
        if self.mode == "logits" and self.banned:
            logits = logits.copy()
            logits[..., self.banned] = -np.inf
        return logits

    def _free_row(self, logits):
        """The log-probs a free choice of the search sees (banned ids -inf)."""
        lp = log_softmax(self._ban_before(logits))
        if self.banned:
            lp = lp.copy()
            lp[..., self.banned] = -np.inf
        return lp

    def score(self, src_ids, tgt_ids):
        """Log-prob of each tgt token and then of </s> (the forward pass: no ban)."""
        logits = self.decode_logits(self.encode(src_ids), [self.start] + list(tgt_ids))
        lp = log_softmax(logits)
        return [float(lp[i, t]) for i, t in enumerate(list(tgt_ids) + [self.eos])]

    def greedy_with_margin(self, src_ids, max_len):
        """(ids, smallest top-1 minus top-2 gap among the allowed ids), tessera's greedy."""
        limit = min(max_len, self.config["max_positions"] - 1)
        memory = self.encode(src_ids)
        out, margin = [], math.inf
        for _ in range(limit):
            row = self._free_row(self.decode_logits(memory, [self.start] + out)[-1])
            order = np.argsort(-row, kind="stable")
            token = int(order[0])
            if row[order[1]] > -np.inf:
                margin = min(margin, float(row[order[0]] - row[order[1]]))
            if token == self.eos:
                break
            out.append(token)
        return out, margin

    def _next_logits(self, memory, prefixes):
        return np.stack([self.decode_logits(memory, p)[-1] for p in prefixes])

    def _next_logprobs(self, memory, prefixes):
        """Raw rows (a forced prefix step: no ban)."""
        return log_softmax(self._next_logits(memory, prefixes)).tolist()

    def _next_processed(self, memory, histories, options):
        if options.processes():
            raise ValueError("the reference has no decoding options")
        logits = self._next_logits(memory, [[self.start] + list(h) for h in histories])
        return self._free_row(logits).tolist()


def format_logprobs(values):
    return " ".join("%.9g" % v for v in values)


format_nbest = tt.format_nbest
