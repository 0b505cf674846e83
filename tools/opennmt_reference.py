"""An independent reference of OpenNMT-py 3.x's Transformer, in numpy float64.

Reads an OpenNMT-py checkpoint (.pt: {"model", "generator", "vocab", "opt"})
with OpenNMT-py's own tensor and option names, and computes what its
NMTModel computes at inference, written from OpenNMT-py's sources (v3.0 to
v3.5), not from tessera's names or the converter's output:

- Embeddings (onmt/modules/embeddings.py): emb_luts.0.weight[ids] * sqrt(d) +
  pe[step + p], p from 0; pe is the stored buffer when the checkpoint has it,
  else PositionalEncoding's table computed as OpenNMT-py does (float32):
  SinusoidalInterleaved sin/cos at even/odd columns of p exp(-2i ln(10000)/d),
  SinusoidalConcat [sin | cos] of p exp(-i ln(10000)/(d/2 - 1)).
- Encoder (onmt/encoders/transformer.py): per layer x = x + self_attn(LN(x))
  (layer_norm), then x = x + w_2(act(w_1(LN(x)))) (feed_forward.layer_norm);
  then the final layer_norm. The source gets no bos or eos
  (onmt/inputters/text_utils.py numericalize).
- Decoder (onmt/decoders/transformer.py), fed [decoder_start_token] + tokens:
  per layer x = x + self_attn(LN_1(x)) (causal), x = x + context_attn(query
  LN_2(x), keys and values the encoder output), x = feed_forward(x); then the
  final layer_norm.
- Attention (onmt/modules/multi_headed_attn.py): linear_query / linear_keys /
  linear_values / final_linear, biases only with add_qkvbias; the query divided
  by sqrt(d_head); softmax over the keys.
- LayerNorm: nn.LayerNorm with eps opt.norm_eps (default 1e-6).
- Activation: relu, or gelu (F.gelu: 0.5 x (1 + erf(x / sqrt 2))).
- Generator: x W^T + b ({"weight", "bias"}, or 3.0's "0.weight"; with
  share_decoder_embeddings W is the decoder's embedding table); log-softmax.
  Nothing is banned (ban_unk_token is off by default).

The searches are tools/marian_reference.py's TesseraSearch: tessera's greedy
and beam search (a port of tools/tessera_torch.py's), with the margins of
their decisions, so that fixtures can drop near-ties.

torch is needed only to read the .pt (torch.load); the arithmetic is numpy.
"""

import math

import numpy as np

from marian_reference import TesseraSearch, format_logprobs, format_nbest  # noqa: F401


def onmt_positions(rows, dim, kind):
    """PositionalEncoding's table [rows, d], float32 as torch computes it."""
    position = np.arange(rows, dtype=np.float32)[:, None]
    if kind == "SinusoidalInterleaved":
        div_term = np.exp(np.arange(0, dim, 2, dtype=np.float32) * np.float32(-(math.log(10000.0) / dim)))
        pe = np.zeros((rows, dim), dtype=np.float32)
        pe[:, 0::2] = np.sin(position * div_term)
        pe[:, 1::2] = np.cos(position * div_term)
        return pe
    if kind == "SinusoidalConcat":
        half = dim // 2
        freq = np.exp(np.arange(half, dtype=np.float32) * np.float32(-(math.log(10000) / (half - 1))))
        angle = position * freq[None, :]
        return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)
    raise ValueError("position_encoding_type %r" % kind)


class OpenNMTModel(TesseraSearch):
    """An OpenNMT-py 3.x Transformer checkpoint, run in float64."""

    def __init__(self, checkpoint):
        if isinstance(checkpoint, str):
            import torch
            checkpoint = torch.load(checkpoint, map_location="cpu")
        opt = vars(checkpoint["opt"])
        self.opt = opt
        self.w = {name: t.detach().double().numpy() for name, t in checkpoint["model"].items()}
        generator = {name: t.detach().double().numpy() for name, t in checkpoint["generator"].items()}
        vocab = checkpoint["vocab"]
        tgt = vocab["tgt"]
        self.bos = tgt.index(vocab.get("decoder_start_token") or "<s>")
        self.eos = tgt.index("</s>")
        self.banned = []
        if opt.get("encoder_type") != "transformer" or opt.get("decoder_type") != "transformer":
            raise ValueError("not a Transformer")
        for key in ("max_relative_positions", "num_kv", "parallel_residual"):
            if opt.get(key):
                raise ValueError("%s is not implemented here" % key)
        if opt.get("layer_norm", "standard") != "standard" or not opt.get("position_encoding"):
            raise ValueError("only standard LayerNorm and sinusoidal positions")
        self.heads = int(opt["heads"])
        self.eps = float(opt.get("norm_eps", 1e-6))
        self.activation = opt.get("pos_ffn_activation_fn", "relu")
        if self.activation not in ("relu", "gelu"):
            raise ValueError("activation %r" % self.activation)
        self.src_emb = self.w["encoder.embeddings.make_embedding.emb_luts.0.weight"]
        self.tgt_emb = self.w["decoder.embeddings.make_embedding.emb_luts.0.weight"]
        self.dim = self.src_emb.shape[1]
        kind = opt.get("position_encoding_type", "SinusoidalInterleaved")
        self.pe = {}
        for stack in ("encoder", "decoder"):
            name = "%s.embeddings.make_embedding.pe.pe" % stack
            self.pe[stack] = (self.w[name][:, 0, :] if name in self.w
                              else onmt_positions(5000, self.dim, kind).astype(np.float64))
        self.enc_layers = len({n.split(".")[2] for n in self.w if n.startswith("encoder.transformer.")})
        self.dec_layers = len({n.split(".")[2] for n in self.w
                               if n.startswith("decoder.transformer_layers.")})
        prefix = "0." if "0.bias" in generator else ""
        if opt.get("share_decoder_embeddings"):
            self.out_w = self.tgt_emb
        else:
            self.out_w = generator[prefix + "weight"]
        self.out_b = generator[prefix + "bias"]
        # tessera's search reads these (tools/tessera_torch.py beam_search).
        self.config = {"max_positions": 5000, "eos_id": self.eos, "bos_id": self.bos,
                       "tgt_vocab_size": self.out_w.shape[0]}

    # ---- building blocks ----------------------------------------------------

    def layer_norm(self, x, prefix):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self.w[prefix + ".weight"] + self.w[prefix + ".bias"]

    def linear(self, x, prefix):
        y = x @ self.w[prefix + ".weight"].T
        bias = self.w.get(prefix + ".bias")
        return y if bias is None else y + bias

    def attention(self, prefix, query, memory, causal):
        """MultiHeadedAttention.forward(key=memory, value=memory, query)."""
        n, m, h = query.shape[0], memory.shape[0], self.heads
        dh = self.dim // h
        q = self.linear(query, prefix + ".linear_query").reshape(n, h, dh).transpose(1, 0, 2)
        k = self.linear(memory, prefix + ".linear_keys").reshape(m, h, dh).transpose(1, 0, 2)
        v = self.linear(memory, prefix + ".linear_values").reshape(m, h, dh).transpose(1, 0, 2)
        scores = (q / math.sqrt(dh)) @ k.transpose(0, 2, 1)
        if causal:
            future = np.arange(m)[None, :] > np.arange(n)[:, None]
            scores = np.where(future[None], -np.inf, scores)
        scores = scores - scores.max(-1, keepdims=True)
        weights = np.exp(scores)
        weights /= weights.sum(-1, keepdims=True)
        context = (weights @ v).transpose(1, 0, 2).reshape(n, self.dim)
        return self.linear(context, prefix + ".final_linear")

    def feed_forward(self, prefix, x):
        """PositionwiseFeedForward: x + w_2(act(w_1(LN(x))))."""
        inter = self.linear(self.layer_norm(x, prefix + ".layer_norm"), prefix + ".w_1")
        if self.activation == "relu":
            inter = np.maximum(inter, 0.0)
        else:
            inter = 0.5 * inter * (1.0 + np.vectorize(math.erf)(inter / math.sqrt(2.0)))
        return x + self.linear(inter, prefix + ".w_2")

    def embed(self, table, ids, stack):
        return table[list(ids)] * math.sqrt(self.dim) + self.pe[stack][:len(ids)]

    # ---- encoder and decoder ------------------------------------------------

    def encode(self, src_ids):
        x = self.embed(self.src_emb, src_ids, "encoder")
        for i in range(self.enc_layers):
            prefix = "encoder.transformer.%d" % i
            normed = self.layer_norm(x, prefix + ".layer_norm")
            x = x + self.attention(prefix + ".self_attn", normed, normed, False)
            x = self.feed_forward(prefix + ".feed_forward", x)
        return self.layer_norm(x, "encoder.layer_norm")

    def decode_logits(self, memory, tokens):
        """Logits [len(tokens) + 1, V] of the decoder fed [start] + tokens."""
        x = self.embed(self.tgt_emb, [self.bos] + list(tokens), "decoder")
        for i in range(self.dec_layers):
            prefix = "decoder.transformer_layers.%d" % i
            normed = self.layer_norm(x, prefix + ".layer_norm_1")
            x = x + self.attention(prefix + ".self_attn", normed, normed, True)
            query = self.layer_norm(x, prefix + ".layer_norm_2")
            x = x + self.attention(prefix + ".context_attn", query, memory, False)
            x = self.feed_forward(prefix + ".feed_forward", x)
        x = self.layer_norm(x, "decoder.layer_norm")
        return x @ self.out_w.T + self.out_b
