"""An independent reference of CTranslate2's Transformer, in numpy float64.

Reads a CTranslate2 model directory by CTranslate2's own variable names
(ctranslate2_files.py) and computes what CTranslate2 4.x computes at
inference, written from its layers (src/layers/transformer.cc, common.cc,
attention.cc) and specs (python/ctranslate2/specs/), not from tessera's C
reader:

- Attributes default as CTranslate2's layers default them: num_heads 8 (16
  for spec TransformerBig), pre_norm true, activation 0 (ReLU; 1 GELU tanh,
  2 Swish, 3 GELU erf, 4 GELU sigmoid), embeddings scaled by sqrt(d_model)
  unless scale_embeddings (or embeddings/multiply_by_sqrt_depth) says
  otherwise (an int8 flag, or the factor itself), alignment -1 / 1. Before
  spec revision 5 the attributes sit at the root.
- Embeddings: weight[ids] (dequantized: w = q / scale) x scale, plus the
  position: the stored table's row t, else CTranslate2's sinusoid of
  position t + 1, [sin | cos] of (t + 1) exp(-i ln(10000) / (d/2 - 1));
  then layernorm_embedding when present. The decoder's first input is
  config.json's decoder_start_token (older files: bos unless
  with_target_bos is false); with start_from_zero_embedding its vector is 0.
- Layers: pre-norm x + f(LN(x)), post-norm LN(x + f(x)), for
  self_attention (linear_0 the fused q | k | v, linear_1 the output),
  attention (linear_0 q, linear_1 the fused k | v over the encoder output,
  linear_2 the output) and ffn (linear_0, activation, linear_1); a final
  layer_norm when present. LayerNorm: (x - mean) / sqrt(var + eps) gamma +
  beta, eps config.json's layer_norm_epsilon, else 1e-5.
- Attention: q / sqrt(d_head), causal in the decoder, softmax.
- Output: decoder/projection (x W^T + b), log-softmax.
- The source is given tokens, with config.json's add_source_eos appending
  </s> (add_source_bos is refused here as tessera refuses it).

The searches are tools/marian_reference.py's TesseraSearch (tessera's search
over these log-probabilities).
"""

import math
import os

import numpy as np

import ctranslate2_files as files
from marian_reference import TesseraSearch


def gelu_erf(x):
    return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))


ACTIVATIONS = {
    0: lambda x: np.maximum(x, 0.0),
    1: lambda x: 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x ** 3))),
    2: lambda x: x / (1.0 + np.exp(-x)),
    3: gelu_erf,
    4: lambda x: x / (1.0 + np.exp(-1.702 * x)),
}


class Ctranslate2Reference(TesseraSearch):
    def __init__(self, model_dir):
        self.header, self.vars = files.read(os.path.join(model_dir, "model.bin"))
        self.config = {}
        path = os.path.join(model_dir, "config.json")
        if os.path.exists(path):
            import json
            self.config = json.load(open(path, encoding="utf-8"))
        legacy = self.header["version"] < 6
        unk = self._string("unk_token", "<unk>") if legacy else self.config.get("unk_token", "<unk>")
        bos = self._string("bos_token", "<s>") if legacy else self.config.get("bos_token", "<s>")
        eos = self._string("eos_token", "</s>") if legacy else self.config.get("eos_token", "</s>")
        if legacy:
            start = bos if self._scalar("with_target_bos", 1) else eos
            self.add_eos = bool(self._scalar("with_source_eos", 0))
        else:
            start = self.config.get("decoder_start_token", bos)
            self.add_eos = bool(self.config.get("add_source_eos", False))
        if self.header["spec"] == "TransformerEncoderSpec":  # an encoder alone
            shared = files.read_vocabulary(model_dir, "vocabulary", unk)
        else:
            shared = files.read_vocabulary(model_dir, "shared_vocabulary", unk)
        self.src_vocab = shared or files.read_vocabulary(model_dir, "source_vocabulary", unk)
        self.tgt_vocab = shared or files.read_vocabulary(model_dir, "target_vocabulary", unk)
        self.src_index = {t: i for i, t in reversed(list(enumerate(self.src_vocab)))}
        self.tgt_index = {t: i for i, t in reversed(list(enumerate(self.tgt_vocab)))}
        self.start = self.tgt_index[start]
        self.eos = self.tgt_index[eos]
        self.src_eos = self.src_index.get(eos)
        self.unk = (self.src_index[unk], self.tgt_index[unk])
        self.banned = []
        eps = self.config.get("layer_norm_epsilon")
        self.eps = 1e-5 if eps is None else float(eps)
        spec_heads = 16 if self.header["spec"] == "TransformerBig" else 8
        self.heads = int(self._attribute("encoder", "num_heads", spec_heads))
        self.pre_norm = bool(self._attribute("encoder", "pre_norm", 1))
        self.act = ACTIVATIONS[int(self._attribute("encoder", "activation", 0))]
        self.enc_emb = "encoder/embeddings" if "encoder/embeddings/weight" in self.vars \
            else "encoder/embeddings_0"
        self.d = self.vars[self.enc_emb + "/weight"].shape[1]
        self.zero_start = bool(self._attribute("decoder", "start_from_zero_embedding", 0))
        self.n_enc = self._layers("encoder")
        self.n_dec = self._layers("decoder")
        tables = [self.vars[s + "/position_encodings/encodings"].shape[0]
                  for s in ("encoder", "decoder") if s + "/position_encodings/encodings" in self.vars]
        self.config["max_positions"] = min(tables) if tables else 1024

    # ---- attributes ----------------------------------------------------------
    def _scalar(self, name, default):
        value = self.vars.get(name)
        return default if value is None else float(np.asarray(value).reshape(()))

    def _attribute(self, scope, name, default):
        if scope + "/" + name in self.vars:
            return self._scalar(scope + "/" + name, default)
        if self.header["revision"] < 5:
            return self._scalar(name, default)
        return default

    def _string(self, name, default):
        value = self.vars.get(name)
        return default if value is None else bytes(value.astype(np.uint8)).decode("utf-8")

    def _layers(self, scope):
        n = 0
        while "%s/layer_%d/self_attention/linear_0/weight" % (scope, n) in self.vars:
            n += 1
        return n

    def _w(self, name):
        return files.dequantize(self.vars, name)

    def _opt(self, name):
        return self._w(name) if name in self.vars else None

    # ---- layers --------------------------------------------------------------
    def _scale(self, scope, emb):
        value = self.vars.get(scope + "/scale_embeddings")
        if value is None:
            value = self.vars.get(emb + "/multiply_by_sqrt_depth")
        if value is None:
            return math.sqrt(self.d)
        value = np.asarray(value)
        if value.dtype == np.int8:
            return math.sqrt(self.d) if int(value) else 1.0
        return float(value)

    def _positions(self, scope, n):
        table = self.vars.get(scope + "/position_encodings/encodings")
        if table is not None:
            return files.dequantize(self.vars, scope + "/position_encodings/encodings")[:n]
        half = self.d // 2
        inc = math.log(10000.0) / (half - 1)
        freq = np.exp(-inc * np.arange(half))
        angle = (np.arange(n)[:, None] + 1.0) * freq[None, :]
        return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)

    def _norm(self, x, scope):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + self.eps) * self._w(scope + "/gamma") + \
            self._w(scope + "/beta")

    def _linear(self, x, scope):
        y = x @ self._w(scope + "/weight").T
        bias = self._opt(scope + "/bias")
        return y if bias is None else y + bias

    def _attend(self, q, k, v, causal):
        dh = self.d // self.heads
        out = np.zeros((q.shape[0], self.d))
        for h in range(self.heads):
            cols = slice(h * dh, (h + 1) * dh)
            s = (q[:, cols] / math.sqrt(dh)) @ k[:, cols].T
            if causal:
                s = s + np.triu(np.full(s.shape, -np.inf), 1)
            s = np.exp(s - s.max(-1, keepdims=True))
            out[:, cols] = (s / s.sum(-1, keepdims=True)) @ v[:, cols]
        return out

    def _sublayer(self, x, scope, f):
        if self.pre_norm:
            return x + f(self._norm(x, scope + "/layer_norm"))
        return self._norm(x + f(x), scope + "/layer_norm")

    def _self_attention(self, scope, causal):
        def f(x):
            qkv = self._linear(x, scope + "/linear_0")
            q, k, v = np.split(qkv, 3, axis=1)
            return self._linear(self._attend(q, k, v, causal), scope + "/linear_1")
        return f

    def _cross_attention(self, scope, memory):
        def f(x):
            q = self._linear(x, scope + "/linear_0")
            k, v = np.split(self._linear(memory, scope + "/linear_1"), 2, axis=1)
            return self._linear(self._attend(q, k, v, False), scope + "/linear_2")
        return f

    def _ffn(self, scope):
        return lambda x: self._linear(self.act(self._linear(x, scope + "/linear_0")),
                                      scope + "/linear_1")

    def _embed(self, scope, emb, ids, zero_first):
        x = self._w(emb + "/weight")[ids] * self._scale(scope, emb)
        if zero_first:
            x[0] = 0.0
        x = x + self._positions(scope, len(ids))
        if scope + "/layernorm_embedding/gamma" in self.vars:
            x = self._norm(x, scope + "/layernorm_embedding")
        return x

    # ---- what TesseraSearch needs -------------------------------------------
    def source_ids(self, tokens):
        ids = [self.src_index.get(t, self.unk[0]) for t in tokens]
        return ids + ([self.src_eos] if self.add_eos else [])

    def target_ids(self, tokens):
        return [self.tgt_index.get(t, self.unk[1]) for t in tokens]

    def encode(self, src_ids):
        x = self._embed("encoder", self.enc_emb, list(src_ids), False)
        for i in range(self.n_enc):
            p = "encoder/layer_%d" % i
            x = self._sublayer(x, p + "/self_attention", self._self_attention(
                p + "/self_attention", False))
            x = self._sublayer(x, p + "/ffn", self._ffn(p + "/ffn"))
        if "encoder/layer_norm/gamma" in self.vars:
            x = self._norm(x, "encoder/layer_norm")
        return x

    def decode_logits(self, memory, tokens):
        ids = [self.start] + list(tokens)
        x = self._embed("decoder", "decoder/embeddings", ids, self.zero_start)
        for i in range(self.n_dec):
            p = "decoder/layer_%d" % i
            x = self._sublayer(x, p + "/self_attention", self._self_attention(
                p + "/self_attention", True))
            x = self._sublayer(x, p + "/attention", self._cross_attention(
                p + "/attention", memory))
            x = self._sublayer(x, p + "/ffn", self._ffn(p + "/ffn"))
        if "decoder/layer_norm/gamma" in self.vars:
            x = self._norm(x, "decoder/layer_norm")
        return self._linear(x, "decoder/projection")
