"""M2M100ForConditionalGeneration (M2M100, NLLB-200) and MBartForConditionalGeneration
(mBART-50, mBART-cc25) in float64 numpy, from a Hugging Face directory's own files
and names, for tests/golden/families/hf-nllb-*, hf-m2m100-* and hf-mbart*.

Written from transformers' sources (models/m2m_100/modeling_m2m_100.py,
configuration_m2m_100.py, tokenization_m2m_100.py, models/nllb/tokenization_nllb.py,
generation/logits_process.py), never from tessera's converter:
- token embeddings times sqrt(d_model) (scale_embedding; M2M100ScaledWordEmbedding);
  encoder, decoder and lm_head share `model.shared.weight` (tie_word_embeddings);
- positions: M2M100SinusoidalPositionalEmbedding.get_embedding, half_dim = d/2,
  frequencies exp(-i log(10000) / (half_dim - 1)), [sin | cos], row p the
  position: create_position_ids_from_input_ids counts from padding_idx + 1, so
  token t of a sentence (from 0) reads row t + 2;
- pre-norm layers (M2M100EncoderLayer, M2M100DecoderLayer: LayerNorm before the
  self-attention, the cross-attention and the FFN, residual after), and the final
  encoder.layer_norm and decoder.layer_norm; nn.LayerNorm eps 1e-5; relu;
- attention q/k/v/out with biases, q scaled by head_dim^-0.5;
- no output bias;
- the tokenizers' special tokens: NllbTokenizer (legacy_behaviour false) and
  M2M100Tokenizer give [src_lang] tokens </s>; NLLB's legacy mode tokens </s>
  [src_lang]; generation starts the decoder from decoder_start_token_id (</s>)
  and ForcedBOSLogitsProcessor makes the target language the first token (the
  only one with a finite score: its log-probability counts 0), which
  skip_special_tokens then leaves out of the text.

mBART (models/mbart/modeling_mbart.py, tokenization_mbart50.py, tokenization_mbart.py)
differs in: learned positions (MBartLearnedPositionalEmbedding: position p reads row
p + 2 of each side's embed_positions.weight), layernorm_embedding after embedding +
position on each side, gelu (erf), the output bias final_logits_bias, scale_embedding
as its config says; MBart50Tokenizer's special tokens are NLLB's non-legacy ones,
MBartTokenizer's (mBART-cc25) tokens </s> [src_lang], and the decoder then starts
from the target language itself (decoder_start_token_id = the language), no token
forced.

The searches are tessera's (marian_reference.TesseraSearch, the port of
tools/tessera_torch.py's): decode_logits here returns the rows after the forced
language token, so that the search sees the tokens it chooses only.
"""

import json
import math
import os
import struct

import numpy as np

from marian_reference import TesseraSearch, format_logprobs, format_nbest  # noqa: F401

LAYER_NORM_EPS = 1e-5
DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8"}


def load_safetensors(path):
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    header = json.loads(blob[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        a, b = info["data_offsets"]
        raw = np.frombuffer(blob[8 + n + a:8 + n + b], dtype=DTYPES[info["dtype"]])
        out[name] = raw.astype(np.float64).reshape(info["shape"])
    return out


def m2m100_sinusoid(rows, d):
    """get_embedding(rows, d, padding_idx) without the zeroed padding row."""
    half = d // 2
    freq = np.exp(np.arange(half, dtype=np.float64) * -(math.log(10000.0) / (half - 1)))
    angle = np.arange(rows, dtype=np.float64)[:, None] * freq[None, :]
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1)


class M2M100Reference(TesseraSearch):
    def __init__(self, directory, source_lang, target_lang):
        def load(name):
            with open(os.path.join(directory, name), encoding="utf-8") as f:
                return json.load(f)
        hf = load("config.json")
        tokenizer = load("tokenizer_config.json")
        self.hf = hf
        self.d = hf["d_model"]
        self.heads = hf["encoder_attention_heads"]
        self.scale = math.sqrt(self.d) if hf.get("scale_embedding", False) else 1.0
        raw = load_safetensors(os.path.join(directory, "model.safetensors"))
        self.w = {(k[6:] if k.startswith("model.") else k): v for k, v in raw.items()}
        self.table = self.w["shared.weight"]
        self.pad = hf["pad_token_id"]
        self.eos = hf["eos_token_id"]
        self.mbart = hf["model_type"] == "mbart"
        kind = tokenizer["tokenizer_class"]
        # the decoder's first inputs before the tokens it chooses
        self.cc25 = kind == "MBartTokenizer"
        self.start = None if self.cc25 else hf["decoder_start_token_id"]
        if self.mbart:
            self.positions = {side: self.w[side + ".embed_positions.weight"]
                              for side in ("encoder", "decoder")}
            self.act = lambda x: 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
            self.bias = self.w["final_logits_bias"][0]
        else:
            # padding_idx + 1 onwards; two more rows than max_position_embeddings hold
            table = m2m100_sinusoid(hf["max_position_embeddings"] + self.pad + 1, self.d)
            self.positions = {"encoder": table, "decoder": table}
            self.act = lambda x: np.maximum(x, 0.0)
            self.bias = 0.0
        self.legacy = tokenizer.get("legacy_behaviour", False) or self.cc25
        self.source_lang = self.language_id(directory, tokenizer, source_lang)
        self.target_lang = self.language_id(directory, tokenizer, target_lang)
        self.banned = []
        # what the search may fill: the start tokens come first
        self.config = {"max_positions": hf["max_position_embeddings"] - (0 if self.cc25 else 1)}

    def language_id(self, directory, tokenizer, code):
        """The tokenizer's id of language `code`: NLLB and mBART, after the
        SentencePiece pieces (offset 1); M2M100, after vocab.json's entries."""
        codes = tokenizer["additional_special_tokens"]
        if tokenizer["tokenizer_class"] != "M2M100Tokenizer":  # NLLB's and mBART's layout
            import sentencepiece as spm
            sp = spm.SentencePieceProcessor(
                model_file=os.path.join(directory, "sentencepiece.bpe.model"))
            return sp.get_piece_size() + 1 + codes.index(code)
        with open(os.path.join(directory, "vocab.json"), encoding="utf-8") as f:
            size = len(json.load(f))
        return size + codes.index("__%s__" % code)

    # ---- text, as the tokenizers read and write it -------------------------------

    def text_pipeline(self, directory):
        """(ids of a text, the text of ids) as the family's tokenizer gives them:
        SentencePiece's pieces, mapped by NLLB's and mBART's offset (piece j is j +
        1; the model's <unk> is fairseq's 3) or by M2M100's vocab.json; decoded
        without the special tokens (skip_special_tokens), None for an id that is
        not one of the pieces (a language code, <mask>, a placeholder row) and for
        <unk>, which skip_special_tokens drops and tessera, as SentencePiece,
        writes as its unknown sign."""
        import sentencepiece as spm
        sp = spm.SentencePieceProcessor(
            model_file=os.path.join(directory, "sentencepiece.bpe.model"))
        path = os.path.join(directory, "vocab.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                vocab = json.load(f)
            by_id = {i: piece for piece, i in vocab.items()}
            to_id = lambda piece: vocab.get(piece, 3)  # noqa: E731
        else:
            by_id = {j + 1: sp.id_to_piece(j) for j in range(3, sp.get_piece_size())}
            to_id = lambda piece: sp.piece_to_id(piece) + 1 if sp.piece_to_id(piece) >= 3 else 3  # noqa: E731,E501
        specials = {0, 1, 2, 3}

        def encode(text):
            return [to_id(piece) for piece in sp.encode(text, out_type=str)]

        def decode(ids):
            if any((i not in by_id and i not in specials) or i == 3 for i in ids):
                return None
            return sp.decode_pieces([by_id[i] for i in ids if i not in specials])
        return encode, decode

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
        q = (self._linear(x, name + ".q_proj") * dh ** -0.5).reshape(n, h, dh).transpose(1, 0, 2)
        k = self._linear(memory, name + ".k_proj").reshape(m, h, dh).transpose(1, 0, 2)
        v = self._linear(memory, name + ".v_proj").reshape(m, h, dh).transpose(1, 0, 2)
        s = q @ k.transpose(0, 2, 1)
        if causal:
            s = s + np.where(np.triu(np.ones((n, m), dtype=bool), 1), -np.inf, 0.0)
        p = np.exp(s - s.max(axis=-1, keepdims=True))
        p /= p.sum(axis=-1, keepdims=True)
        return self._linear((p @ v).transpose(1, 0, 2).reshape(n, self.d), name + ".out_proj")

    def _embed(self, ids, side):
        # both offsets are 2: M2M100's padding_idx + 1, MBartLearnedPositionalEmbedding's
        rows = 2 + np.arange(len(ids))
        x = self.table[ids] * self.scale + self.positions[side][rows]
        return self._norm(x, side + ".layernorm_embedding") if self.mbart else x

    def source_tokens(self, src_ids):
        """What the tokenizer gives for a sentence of src_ids."""
        if self.legacy:
            return list(src_ids) + [self.eos, self.source_lang]
        return [self.source_lang] + list(src_ids) + [self.eos]

    def encode(self, src_ids):
        if not src_ids:
            raise ValueError("empty source")
        x = self._embed(self.source_tokens(src_ids), "encoder")
        for i in range(self.hf["encoder_layers"]):
            p = "encoder.layers.%d" % i
            h = self._norm(x, p + ".self_attn_layer_norm")
            x = x + self._attention(h, h, p + ".self_attn", False)
            h = self._norm(x, p + ".final_layer_norm")
            x = x + self._linear(self.act(self._linear(h, p + ".fc1")), p + ".fc2")
        return self._norm(x, "encoder.layer_norm")

    def decode_logits(self, memory, tokens):
        """Logits [len(tokens) + 1, V]: the rows after the start, fed [</s>,
        tgt_lang] + tokens (the language forced first), or for mBART-cc25
        [tgt_lang] + tokens."""
        start = [self.target_lang] if self.cc25 else [self.start, self.target_lang]
        x = self._embed(start + list(tokens), "decoder")
        for i in range(self.hf["decoder_layers"]):
            p = "decoder.layers.%d" % i
            h = self._norm(x, p + ".self_attn_layer_norm")
            x = x + self._attention(h, h, p + ".self_attn", True)
            h = self._norm(x, p + ".encoder_attn_layer_norm")
            x = x + self._attention(h, memory, p + ".encoder_attn", False)
            h = self._norm(x, p + ".final_layer_norm")
            x = x + self._linear(self.act(self._linear(h, p + ".fc1")), p + ".fc2")
        x = self._norm(x, "decoder.layer_norm")
        return (x @ self.table.T + self.bias)[len(start) - 1:]
