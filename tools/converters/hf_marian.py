"""Converts a Hugging Face MarianMT model directory (OPUS-MT on the Hub) into a tessera model.

Input: a directory with config.json (model_type "marian"), model.safetensors
(F16/F32/BF16; read with numpy) or pytorch_model.bin (read with torch, imported
only then), vocab.json (piece -> id), target_vocab.json when the vocabularies
are separate, optionally generation_config.json, source.spm, target.spm.
Output: config.json (family "hf-marian"), model.safetensors (F32 unless dtype
says otherwise; a tied or shared table written once), vocab.src.txt /
vocab.tgt.txt in id order, and the .spm files copied with config.json's
`tokenizer` naming them (files.plan_tokenizer: --source-spm /
--target-spm take their place).

transformers' semantics (src/transformers/models/marian/modeling_marian.py,
configuration_marian.py, tokenization_marian.py; generation/utils.py):
- token embeddings times sqrt(d_model) when scale_embedding (MarianConfig's
  default is false; OPUS-MT sets true); MarianEncoder/MarianDecoder
  embed_scale;
- positions: MarianSinusoidalPositionalEmbedding._init_weight, sin in the first
  d/2 columns and cos in the rest, angle p / 10000^(2i/d), p from 0 (no
  padding offset): position_encoding "sinusoid_halves". A stored
  embed_positions table (older checkpoints) is checked against it and, if it
  differs, written as positional_encoding.pos_embedding;
- post-norm layers, nn.LayerNorm (eps 1e-5): MarianEncoderLayer (self_attn,
  self_attn_layer_norm, fc1, fc2, final_layer_norm) and MarianDecoderLayer
  (self_attn, encoder_attn, their layer norms, fc1, fc2, final_layer_norm); no
  layernorm_embedding and no final encoder/decoder norm;
- MarianAttention: q_proj, k_proj, v_proj, out_proj with biases, [out, in]
  weights, scaling head_dim^-0.5; q/k/v stacked in that order into in_proj;
- activation_function through ACT2FN: "swish"/"silu" -> silu, "gelu" (erf)
  -> gelu, "relu" -> relu; anything else is refused;
- lm_head tied to the decoder's embedding (tie_word_embeddings, default true;
  model.shared when share_encoder_decoder_embeddings), plus final_logits_bias
  [1, V] -> generator.bias;
- the decoder starts from decoder_start_token_id (the pad id on OPUS-MT):
  bos_id, decoder_start "bos"; MarianTokenizer appends </s> to every source
  (build_inputs_with_special_tokens): source_suffix [eos_token_id];
- generation bans bad_words_ids (OPUS-MT: [[pad]]) with NoBadWordsLogitsProcessor.
  Since transformers 4.32 (PR 25294) it runs after the log-softmax in beam
  search (before it, a Marian-only hack also set the pad logit to -inf before
  the log-softmax); with generation_config renormalize_logits true a final
  log-softmax renormalises (PR 25459 asks Marian configs to set it), which
  amounts to banning before the softmax. So: banned_target_ids_mode
  "log_probs", or "logits" when renormalize_logits is true (tessera's
  "logits" also bans in `score`, which transformers' forward does not).
  Greedy applies the processors to the raw logits and takes the argmax: the
  same ids either way.

Tensor names are accepted with or without the "model." prefix. lm_head.weight,
when present and the model ties, must equal the decoder's table (else refused);
with tie_word_embeddings false it is the generator, untied.
Refusals raise ConvertError (converters.errors) with one line naming the culprit.
Needs numpy (torch only for pytorch_model.bin; python3-sentencepiece to check
the SentencePiece models).
"""

import json
import os
import struct

import numpy as np

from .errors import ConvertError, note as print_note, note_unused
from .files import carried_spm, plan_tokenizer, resolve_spm, write_model

FAMILY = "hf-marian"
LAYER_NORM_EPS = 1e-5             # nn.LayerNorm's default, as MarianEncoderLayer builds it
MAX_POSITIONS_LIMIT = 65536
ACTIVATIONS = {"swish": "silu", "silu": "silu", "gelu": "gelu", "relu": "relu"}
# MarianConfig's defaults for the keys read here (configuration_marian.py).
HF_DEFAULTS = {
    "vocab_size": 58101, "max_position_embeddings": 1024, "encoder_layers": 12,
    "encoder_ffn_dim": 4096, "encoder_attention_heads": 16, "decoder_layers": 12,
    "decoder_ffn_dim": 4096, "decoder_attention_heads": 16, "activation_function": "gelu",
    "d_model": 1024, "decoder_start_token_id": 58100, "scale_embedding": False,
    "pad_token_id": 58100, "eos_token_id": 0, "share_encoder_decoder_embeddings": True,
    "tie_word_embeddings": True,
}
SAFETENSORS_DTYPES = {"F32": "<f4", "F16": "<f2", "F64": "<f8", "BF16": "<u2"}
POS_TABLE = "positional_encoding.pos_embedding"


# ---- reading ------------------------------------------------------------------

def _load_json(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except OSError as e:
        raise ConvertError("%s: cannot read: %s" % (path, e.strerror or e))
    except ValueError as e:
        raise ConvertError("%s: not valid JSON (%s): %s" % (what, path, str(e).splitlines()[0]))


def hf_model_type(path):
    """The model_type of a transformers directory's config.json, or None."""
    config = os.path.join(path, "config.json")
    if not os.path.isdir(path) or not os.path.isfile(config):
        return None
    try:
        with open(config, encoding="utf-8") as f:
            value = json.load(f)
    except (OSError, ValueError):
        return None
    return value.get("model_type") if isinstance(value, dict) else None


def detect(path):
    """True when path is a directory holding a transformers MarianMT config.json."""
    return hf_model_type(path) == "marian"


def add_options(parser):
    """--dtype (tessera-convert --from hf-marian --help)."""
    parser.add_argument("--dtype", choices=["f32", "f16"], default="f32",
                        help="stored dtype of the weights (default f32)")


def read_safetensors(path):
    """{name: float32 array} from a safetensors file (F32, F16, BF16, F64)."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
    except OSError as e:
        raise ConvertError("%s: cannot read: %s" % (path, e.strerror or e))
    if len(blob) < 8:
        raise ConvertError("%s: too short for a safetensors file" % path)
    (n,) = struct.unpack("<Q", blob[:8])
    if n > len(blob) - 8:
        raise ConvertError("%s: header length %d past the end of the file" % (path, n))
    try:
        header = json.loads(blob[8:8 + n].decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise ConvertError("%s: the safetensors header is not JSON" % path)
    if not isinstance(header, dict):
        raise ConvertError("%s: the safetensors header is not a JSON object" % path)
    base = 8 + n
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        try:
            dtype, shape, (start, end) = entry["dtype"], entry["shape"], entry["data_offsets"]
        except (KeyError, TypeError, ValueError):
            raise ConvertError("tensor %s: malformed safetensors entry" % name)
        if dtype not in SAFETENSORS_DTYPES:
            raise ConvertError("tensor %s: dtype %s not supported (F32, F16, BF16, F64)"
                                % (name, dtype))
        count = int(np.prod(shape)) if shape else 1
        width = np.dtype(SAFETENSORS_DTYPES[dtype]).itemsize
        if not 0 <= start <= end <= len(blob) - base or end - start != count * width:
            raise ConvertError("tensor %s: data offsets %r do not fit its shape or the file"
                                % (name, [start, end]))
        raw = np.frombuffer(blob, dtype=SAFETENSORS_DTYPES[dtype], count=count,
                            offset=base + start)
        if dtype == "BF16":
            values = (raw.astype(np.uint32) << 16).view(np.float32)
        else:
            values = raw.astype(np.float32)
        tensors[name] = values.reshape(shape)
    return tensors


def read_pytorch_bin(path):
    """{name: float32 array} from a torch.save'd state dict (needs torch)."""
    try:
        import torch
    except ImportError:
        raise ConvertError("%s: reading pytorch_model.bin needs torch (python3-torch); "
                            "model.safetensors needs only numpy" % path)
    try:
        try:
            state = torch.load(path, map_location="cpu", weights_only=True)
        except TypeError:        # a torch without weights_only
            state = torch.load(path, map_location="cpu")
    except Exception as e:  # noqa: BLE001 - whatever torch raises is the user's file
        raise ConvertError("%s: cannot load: %s" % (path, str(e).splitlines()[0] if str(e) else e))
    if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
        state = state["state_dict"]
    if not isinstance(state, dict):
        raise ConvertError("%s: not a state dict" % path)
    out = {}
    for name, value in state.items():
        if torch.is_tensor(value) and value.is_floating_point():
            out[name] = value.detach().to(torch.float32).numpy()
    return out


def read_weights(directory):
    st = os.path.join(directory, "model.safetensors")
    if os.path.isfile(st):
        return read_safetensors(st), "model.safetensors"
    pt = os.path.join(directory, "pytorch_model.bin")
    if os.path.isfile(pt):
        return read_pytorch_bin(pt), "pytorch_model.bin"
    raise ConvertError("%s: neither model.safetensors nor pytorch_model.bin" % directory)


def read_vocab(path, expected, name):
    """Pieces in id order from a piece -> id JSON; ids must be 0..expected-1."""
    vocab = _load_json(path, name)
    if not isinstance(vocab, dict):
        raise ConvertError("%s: not a JSON object (piece -> id)" % name)
    by_id = {}
    for piece, i in vocab.items():
        if isinstance(i, bool) or not isinstance(i, int):
            raise ConvertError("%s: the id of %r is not an integer" % (name, piece))
        if i in by_id:
            raise ConvertError("%s: id %d given to both %r and %r" % (name, i, by_id[i], piece))
        if not 0 <= i < expected:
            raise ConvertError("%s: id %d of %r out of 0..%d (the embedding has %d rows)"
                                % (name, i, piece, expected - 1, expected))
        if piece == "" or any(c.isspace() for c in piece):
            raise ConvertError("%s: piece %r (id %d) is empty or holds white space, which a "
                                "vocab.*.txt line cannot" % (name, piece, i))
        by_id[i] = piece
    if len(by_id) != expected:
        missing = min(set(range(expected)) - set(by_id))
        raise ConvertError("%s: %d ids for an embedding of %d rows (id %d has no piece)"
                            % (name, len(by_id), expected, missing))
    return [by_id[i] for i in range(expected)]


# ---- checks -------------------------------------------------------------------

def _get(config, key):
    return config.get(key, HF_DEFAULTS.get(key))


def _int(config, key, low=0, high=None):
    value = _get(config, key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConvertError("config.json: %s must be an integer, not %r" % (key, value))
    if value < low or (high is not None and value > high):
        raise ConvertError("config.json: %s %d out of %d..%s" % (key, value, low, high))
    return value


def architecture(config):
    """The tessera-relevant settings of a MarianConfig dict, refusing what tessera lacks."""
    if config.get("model_type") != "marian":
        raise ConvertError("config.json: model_type is %r, not \"marian\""
                            % config.get("model_type"))
    for key in ("normalize_before", "add_final_layer_norm", "normalize_embedding"):
        if config.get(key, False) is not False:
            raise ConvertError("config.json: %s %r: tessera converts only Marian's post-norm "
                                "layers without extra norms (%s false)"
                                % (key, config[key], key))
    if config.get("static_position_embeddings", True) is not True:
        raise ConvertError("config.json: static_position_embeddings %r: learned positions "
                            "are not MarianMT's" % config["static_position_embeddings"])
    if config.get("is_encoder_decoder", True) is not True:
        raise ConvertError("config.json: is_encoder_decoder %r: only MarianMTModel "
                            "(encoder-decoder) is converted" % config["is_encoder_decoder"])
    scale = _get(config, "scale_embedding")
    if not isinstance(scale, bool):
        raise ConvertError("config.json: scale_embedding must be true or false, not %r" % scale)
    activation = _get(config, "activation_function")
    if activation not in ACTIVATIONS:
        raise ConvertError("config.json: activation_function %r not supported (swish, silu, "
                            "gelu, relu)" % (activation,))
    for key in ("share_encoder_decoder_embeddings", "tie_word_embeddings"):
        if not isinstance(_get(config, key), bool):
            raise ConvertError("config.json: %s must be true or false, not %r"
                                % (key, _get(config, key)))
    arch = {
        "d": _int(config, "d_model", 1),
        "enc_layers": _int(config, "encoder_layers", 1),
        "dec_layers": _int(config, "decoder_layers", 1),
        "heads": _int(config, "encoder_attention_heads", 1),
        "ffn": _int(config, "encoder_ffn_dim", 1),
        "max_positions": _int(config, "max_position_embeddings", 2, MAX_POSITIONS_LIMIT),
        "activation": ACTIVATIONS[activation],
        "scale_embedding": scale,
        "shared": _get(config, "share_encoder_decoder_embeddings"),
        "tied": _get(config, "tie_word_embeddings"),
        "vocab_size": _int(config, "vocab_size", 1),
        "pad": _int(config, "pad_token_id"),
        "eos": _int(config, "eos_token_id"),
    }
    if _int(config, "decoder_attention_heads", 1) != arch["heads"]:
        raise ConvertError("config.json: decoder_attention_heads %d differs from "
                            "encoder_attention_heads %d (tessera has one n_heads)"
                            % (config["decoder_attention_heads"], arch["heads"]))
    if _int(config, "decoder_ffn_dim", 1) != arch["ffn"]:
        raise ConvertError("config.json: decoder_ffn_dim %d differs from encoder_ffn_dim %d "
                            "(tessera has one d_ff)" % (config["decoder_ffn_dim"], arch["ffn"]))
    if arch["d"] % arch["heads"]:
        raise ConvertError("config.json: d_model %d is not a multiple of "
                            "encoder_attention_heads %d" % (arch["d"], arch["heads"]))
    if arch["d"] % 2:
        raise ConvertError("config.json: d_model %d is odd; tessera's sinusoid_halves needs "
                            "an even width" % arch["d"])
    start = config.get("decoder_start_token_id", arch["pad"])
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise ConvertError("config.json: decoder_start_token_id must be an id, not %r" % start)
    arch["start"] = start
    decoder_vocab = config.get("decoder_vocab_size") or arch["vocab_size"]
    if isinstance(decoder_vocab, bool) or not isinstance(decoder_vocab, int) or decoder_vocab < 1:
        raise ConvertError("config.json: decoder_vocab_size must be a positive integer, not %r"
                            % (decoder_vocab,))
    arch["decoder_vocab_size"] = arch["vocab_size"] if arch["shared"] else decoder_vocab
    return arch


def banned_ids(config, generation, eos, note):
    """bad_words_ids' single ids (eos dropped, as NoBadWordsLogitsProcessor does),
    generation_config.json first, then config.json; and the mode."""
    source = "generation_config.json" if "bad_words_ids" in generation else "config.json"
    bad = generation.get("bad_words_ids", config.get("bad_words_ids"))
    ids = []
    if bad is not None:
        if not isinstance(bad, list) or not all(isinstance(s, list) for s in bad):
            raise ConvertError("%s: bad_words_ids must be a list of lists of ids, not %r"
                                % (source, bad))
        for sequence in bad:
            if len(sequence) != 1:
                raise ConvertError("%s: bad_words_ids entry %r bans a sequence; tessera bans "
                                    "single ids only" % (source, sequence))
            token = sequence[0]
            if isinstance(token, bool) or not isinstance(token, int) or token < 0:
                raise ConvertError("%s: bad_words_ids entry %r is not an id" % (source, sequence))
            if token == eos:
                note("bad_words_ids holds eos (%d); transformers ignores that entry" % eos)
                continue
            if token not in ids:
                ids.append(token)
    if len(ids) > 16:
        raise ConvertError("%s: bad_words_ids bans %d ids; tessera bans at most 16"
                            % (source, len(ids)))
    renormalize = generation.get("renormalize_logits", config.get("renormalize_logits", False))
    if not isinstance(renormalize, bool):
        raise ConvertError("generation_config.json: renormalize_logits must be true or false, "
                            "not %r" % (renormalize,))
    return sorted(ids), ("logits" if renormalize else "log_probs")


# ---- tensors ------------------------------------------------------------------

class StateDict:
    """The input tensors by name, with or without the "model." prefix."""

    def __init__(self, tensors, origin):
        self.tensors = tensors
        self.origin = origin
        self.used = set()

    def _key(self, name):
        for key in (name, "model." + name) if not name.startswith("model.") else (name, name[6:]):
            if key in self.tensors:
                return key
        return None

    def has(self, name):
        return self._key(name) is not None

    def get(self, name, shape):
        key = self._key(name)
        if key is None:
            raise ConvertError("%s: tensor %s missing" % (self.origin, name))
        value = self.tensors[key]
        if tuple(value.shape) != tuple(shape):
            raise ConvertError("%s: tensor %s has shape %s, expected %s"
                                % (self.origin, key, list(value.shape), list(shape)))
        if not np.all(np.isfinite(value)):
            raise ConvertError("%s: tensor %s holds a non-finite value" % (self.origin, key))
        self.used.add(key)
        return value


def sinusoid_halves(n_positions, d):
    """transformers' MarianSinusoidalPositionalEmbedding table in float32."""
    p = np.arange(n_positions, dtype=np.float64)[:, None]
    i = np.arange(d // 2, dtype=np.float64)[None, :]
    angle = p / np.power(10000.0, 2.0 * i / d)
    return np.concatenate([np.sin(angle), np.cos(angle)], axis=1).astype(np.float32)


def position_table(t, arch, note):
    """None when the stored tables (if any) are the computed sinusoid, else the table."""
    d, rows = arch["d"], arch["max_positions"]
    stored = []
    for side in ("encoder", "decoder"):
        name = "%s.embed_positions.weight" % side
        if t.has(name):
            stored.append((name, t.get(name, (rows, d))))
    if not stored:
        return None
    if len(stored) == 2 and not np.array_equal(stored[0][1], stored[1][1]):
        raise ConvertError("%s: encoder.embed_positions.weight and decoder.embed_positions.weight "
                            "differ; tessera has one position table" % t.origin)
    table = stored[0][1]
    if np.max(np.abs(table - sinusoid_halves(rows, d))) <= 1e-6:
        return None
    note("%s is not transformers' sinusoid; writing it as %s" % (stored[0][0], POS_TABLE))
    return table.reshape(rows, 1, d)


def layer_tensors(t, arch, out):
    """Every encoder and decoder layer of a BART-style state dict (MarianMT,
    M2M100, NLLB, mBART share the names) into out, by tessera's names:
    q/k/v stacked into in_proj, self_attn_layer_norm / encoder_attn_layer_norm /
    final_layer_norm as norm1..norm3 (in the layer's order, pre- or post-norm
    alike)."""
    d, ffn = arch["d"], arch["ffn"]

    def attention(hf, ours):
        out[ours + ".in_proj_weight"] = np.concatenate(
            [t.get("%s.%s.weight" % (hf, p), (d, d)) for p in ("q_proj", "k_proj", "v_proj")])
        out[ours + ".in_proj_bias"] = np.concatenate(
            [t.get("%s.%s.bias" % (hf, p), (d,)) for p in ("q_proj", "k_proj", "v_proj")])
        out[ours + ".out_proj.weight"] = t.get(hf + ".out_proj.weight", (d, d))
        out[ours + ".out_proj.bias"] = t.get(hf + ".out_proj.bias", (d,))

    def norm(hf, ours):
        out[ours + ".weight"] = t.get(hf + ".weight", (d,))
        out[ours + ".bias"] = t.get(hf + ".bias", (d,))

    def ffn_block(hf, ours):
        out[ours + ".linear1.weight"] = t.get(hf + ".fc1.weight", (ffn, d))
        out[ours + ".linear1.bias"] = t.get(hf + ".fc1.bias", (ffn,))
        out[ours + ".linear2.weight"] = t.get(hf + ".fc2.weight", (d, ffn))
        out[ours + ".linear2.bias"] = t.get(hf + ".fc2.bias", (d,))

    for i in range(arch["enc_layers"]):
        hf, ours = "encoder.layers.%d" % i, "transformer.encoder.layers.%d" % i
        attention(hf + ".self_attn", ours + ".self_attn")
        norm(hf + ".self_attn_layer_norm", ours + ".norm1")
        ffn_block(hf, ours)
        norm(hf + ".final_layer_norm", ours + ".norm2")
    for i in range(arch["dec_layers"]):
        hf, ours = "decoder.layers.%d" % i, "transformer.decoder.layers.%d" % i
        attention(hf + ".self_attn", ours + ".self_attn")
        norm(hf + ".self_attn_layer_norm", ours + ".norm1")
        attention(hf + ".encoder_attn", ours + ".multihead_attn")
        norm(hf + ".encoder_attn_layer_norm", ours + ".norm2")
        ffn_block(hf, ours)
        norm(hf + ".final_layer_norm", ours + ".norm3")


def select_tensors(t, arch, note):
    d = arch["d"]
    vs, vt = arch["vocab_size"], arch["decoder_vocab_size"]
    out = {}
    if arch["shared"]:
        if t.has("shared.weight"):
            table = t.get("shared.weight", (vs, d))
            for side in ("encoder", "decoder"):
                name = "%s.embed_tokens.weight" % side
                if t.has(name) and not np.array_equal(t.get(name, (vs, d)), table):
                    raise ConvertError("%s: %s differs from shared.weight although "
                                        "share_encoder_decoder_embeddings is true"
                                        % (t.origin, name))
        else:
            table = t.get("encoder.embed_tokens.weight", (vs, d))
            if t.has("decoder.embed_tokens.weight") and not np.array_equal(
                    t.get("decoder.embed_tokens.weight", (vs, d)), table):
                raise ConvertError("%s: decoder.embed_tokens.weight differs from "
                                    "encoder.embed_tokens.weight although "
                                    "share_encoder_decoder_embeddings is true" % t.origin)
        out["tgt_tok_emb.embedding.weight"] = table
        decoder_table = table
    else:
        out["src_tok_emb.embedding.weight"] = t.get("encoder.embed_tokens.weight", (vs, d))
        decoder_table = t.get("decoder.embed_tokens.weight", (vt, d))
        out["tgt_tok_emb.embedding.weight"] = decoder_table
    if arch["tied"]:
        if t.has("lm_head.weight") and not np.array_equal(t.get("lm_head.weight", (vt, d)),
                                                          decoder_table):
            raise ConvertError("%s: lm_head.weight differs from the decoder's embedding although "
                                "tie_word_embeddings is true" % t.origin)
    else:
        out["generator.weight"] = t.get("lm_head.weight", (vt, d))
    if t.has("final_logits_bias"):
        out["generator.bias"] = t.get("final_logits_bias", (1, vt)).reshape(vt)
    else:
        note("no final_logits_bias: the logits have no bias (transformers' zeros)")
    table = position_table(t, arch, note)
    if table is not None:
        out[POS_TABLE] = table

    layer_tensors(t, arch, out)
    for name in ("encoder.layernorm_embedding.weight", "decoder.layernorm_embedding.weight",
                 "encoder.layer_norm.weight", "decoder.layer_norm.weight"):
        if t.has(name):
            raise ConvertError("%s: tensor %s: MarianMT has no such norm and tessera would "
                                "not apply it" % (t.origin, name))
    return out


# ---- writing ------------------------------------------------------------------

def write_conversion(out_dir, tessera_config, selected, origin, st_dtype, pieces, tokenizer,
                     unused, note):
    """A Hugging Face conversion's files (files.write_model: both vocabularies in id
    order, pieces), then a note of the input tensors tessera does not read."""
    write_model(out_dir, tessera_config, selected, {"format": "pt", "converted_from": origin},
                st_dtype, vocabs=pieces, tokenizer=tokenizer)
    note_unused(note, unused, shown=4)


def stored_dtype(input_dir, dtype):
    """The safetensors dtype for --dtype, once input_dir is known to be a directory."""
    st_dtype = {"f32": "F32", "f16": "F16", "bf16": "BF16"}.get(str(dtype).lower())
    if st_dtype is None:
        raise ConvertError("dtype %r not supported (f32, f16, bf16)" % (dtype,))
    if not os.path.isdir(input_dir):
        raise ConvertError("%s: not a directory" % input_dir)
    return st_dtype


def convert(input_dir, out_dir, note=None, dtype="f32", source_spm=None, target_spm=None):
    """Converts the HF MarianMT directory input_dir into out_dir; returns tessera's config.

    note: a function given each remark (default: print it). dtype: the output
    tensors' type, "f32" (default), "f16" or "bf16". source_spm, target_spm:
    SentencePiece models given in place of the directory's.
    """
    note = note or print_note
    st_dtype = stored_dtype(input_dir, dtype)
    spm_files = resolve_spm((source_spm, target_spm), carried_spm(input_dir), note)
    config = _load_json(os.path.join(input_dir, "config.json"), "config.json")
    if not isinstance(config, dict):
        raise ConvertError("config.json: not a JSON object")
    arch = architecture(config)
    generation = {}
    generation_path = os.path.join(input_dir, "generation_config.json")
    if os.path.isfile(generation_path):
        generation = _load_json(generation_path, "generation_config.json")
        if not isinstance(generation, dict):
            raise ConvertError("generation_config.json: not a JSON object")
    for key, ours in (("decoder_start_token_id", "start"), ("eos_token_id", "eos"),
                      ("pad_token_id", "pad")):
        if key in generation and generation[key] != arch[ours]:
            raise ConvertError("generation_config.json: %s %r differs from config.json's %r"
                                % (key, generation[key], arch[ours]))
    tensors, origin = read_weights(input_dir)
    t = StateDict(tensors, origin)
    selected = select_tensors(t, arch, note)
    vs, vt = arch["vocab_size"], arch["decoder_vocab_size"]

    src_pieces = read_vocab(os.path.join(input_dir, "vocab.json"), vs, "vocab.json")
    target_json = os.path.join(input_dir, "target_vocab.json")
    if arch["shared"]:
        tgt_pieces = src_pieces
    elif os.path.isfile(target_json):
        tgt_pieces = read_vocab(target_json, vt, "target_vocab.json")
    elif vs == vt:
        note("no target_vocab.json: the target uses vocab.json")
        tgt_pieces = read_vocab(os.path.join(input_dir, "vocab.json"), vt, "vocab.json")
    else:
        raise ConvertError("%s: target_vocab.json missing (share_encoder_decoder_embeddings "
                            "is false and the vocabulary sizes differ)" % input_dir)

    eos, start = arch["eos"], arch["start"]
    if eos >= vt or eos >= vs:
        raise ConvertError("config.json: eos_token_id %d out of the vocabularies (%d, %d)"
                            % (eos, vs, vt))
    if start >= vt:
        raise ConvertError("config.json: decoder_start_token_id %d out of the target "
                            "vocabulary (%d)" % (start, vt))
    if start == eos:
        raise ConvertError("config.json: decoder_start_token_id equals eos_token_id (%d); "
                            "tessera needs them apart" % eos)
    if src_pieces[eos] != "</s>":
        note("source id %d (eos_token_id, appended to every source) is %r, not </s>"
             % (eos, src_pieces[eos]))
    pad = arch["pad"]
    if pad >= min(vs, vt):
        if "<pad>" in src_pieces and src_pieces.index("<pad>") < min(vs, vt):
            note("pad_token_id %d is outside the source vocabulary; pad_id is the source's "
                 "<pad> (%d), which tessera uses for nothing" % (pad, src_pieces.index("<pad>")))
            pad = src_pieces.index("<pad>")
        else:
            raise ConvertError("config.json: pad_token_id %d out of the vocabularies (%d, %d)"
                                % (pad, vs, vt))
    unk = None
    for pieces_ in (src_pieces, tgt_pieces):
        if "<unk>" in pieces_ and pieces_.index("<unk>") < min(vs, vt):
            unk = pieces_.index("<unk>") if unk is None else unk
    if unk is None:
        raise ConvertError("vocab.json: no <unk> piece within both vocabularies")
    banned, mode = banned_ids(config, generation, eos, note)
    for token in banned:
        if token >= vt:
            raise ConvertError("bad_words_ids: id %d out of the target vocabulary (%d)"
                                % (token, vt))

    tessera_config = {
        "d_model": arch["d"],
        "n_heads": arch["heads"],
        "d_ff": arch["ffn"],
        "n_encoder_layers": arch["enc_layers"],
        "n_decoder_layers": arch["dec_layers"],
        "src_vocab_size": vs,
        "tgt_vocab_size": vt,
        "max_positions": arch["max_positions"],
        "activation": arch["activation"],
        "norm_first": False,
        "layer_norm_eps": LAYER_NORM_EPS,
        "layer_norm_form": "variance",
        "scale_embedding": arch["scale_embedding"],
        "bos_id": start,
        "eos_id": eos,
        "pad_id": pad,
        "unk_id": unk,
        "position_encoding": "sinusoid_halves",
        "tie_output_projection": arch["tied"],
        "share_embeddings": arch["shared"],
        "decoder_start": "bos",
        "source_suffix": [eos],
        "banned_target_ids": banned,
        "banned_target_ids_mode": mode,
        "family": FAMILY,
    }
    tokenizer = plan_tokenizer(spm_files, (src_pieces, tgt_pieces))
    write_conversion(out_dir, tessera_config, selected, "hf-marian", st_dtype,
                     (src_pieces, tgt_pieces), tokenizer, sorted(set(tensors) - t.used), note)
    if _get(config, "forced_eos_token_id") is not None:
        note("forced_eos_token_id: transformers forces </s> as the last token at its max_length; "
             "tessera's --max-len ends without it")
    return tessera_config
