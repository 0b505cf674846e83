"""Converts a Hugging Face M2M100, NLLB-200 or mBART model directory into a tessera model.

Input: a directory with config.json (model_type "m2m_100", or "mbart": below), model.safetensors
(F16/F32/BF16) or pytorch_model.bin (read with torch, imported only then),
tokenizer_config.json (tokenizer_class NllbTokenizer or M2M100Tokenizer, the
language codes as additional_special_tokens, NLLB's legacy_behaviour),
sentencepiece.bpe.model, vocab.json (M2M100), optionally generation_config.json.
Output: config.json (family "hf-nllb", "hf-m2m100", "hf-mbart50" or "hf-mbart-cc25"),
model.safetensors (the one shared table), vocab.src.txt = vocab.tgt.txt in id order, the SentencePiece
model as shared.spm with config.json's `tokenizer`, and the languages
(docs/model-format.md, "Languages").

transformers' semantics (models/m2m_100/modeling_m2m_100.py,
tokenization_m2m_100.py, models/nllb/tokenization_nllb.py):
- embeddings times sqrt(d_model) (scale_embedding), one table for the encoder,
  the decoder and lm_head (tie_word_embeddings; save_pretrained keeps only
  model.shared.weight);
- positions: M2M100SinusoidalPositionalEmbedding, sin | cos halves with
  frequencies 10000^(-i/(d/2 - 1)), read from row padding_idx + 1:
  position_encoding "sinusoid_halves_t2t", position_offset pad + 1;
- pre-norm layers with the final encoder.layer_norm and decoder.layer_norm
  (norm_first, eps 1e-5), relu (or the activation_function given), no output bias;
- ids: NLLB's are the SentencePiece pieces shifted by one after <s> <pad> </s>
  <unk>, the language codes after them, <mask> last; M2M100's are vocab.json's,
  then __xx__ for each language; rows of the table past the last token get
  placeholder pieces (<extra_N>);
- sources: [src_lang] tokens </s> (source_language "prefix", source_suffix
  [eos]); NLLB's legacy_behaviour true: tokens </s> [src_lang] ("suffix");
- the decoder starts from decoder_start_token_id (</s>) and the target language
  is forced first (ForcedBOSLogitsProcessor): target_language "forced".
Languages are named as the tokenizer takes them: "eng_Latn" (NLLB), "en"
(M2M100's src_lang, whose token is __en__).

mBART (model_type "mbart": mBART-50 with MBart50Tokenizer, mBART-cc25 with
MBartTokenizer; models/mbart/modeling_mbart.py) differs in: learned positions, each
side's embed_positions.weight from row 2 (positional_encoding.pos_embedding and
.decoder_pos_embedding, position_offset 2), layernorm_embedding on each side
(embedding_norm), gelu, final_logits_bias (generator.bias); MBart50Tokenizer's ids
are NLLB's layout with codes such as en_XX, sources [src_lang] tokens </s>;
MBartTokenizer's sources are tokens </s> [src_lang] ("suffix") and generation
starts the decoder from the target language (target_language "start").

Refusals raise ConvertError (converters.errors) with one line naming the culprit.
"""

import os

import numpy as np

from .errors import ConvertError, note as print_note
from .files import plan_tokenizer, resolve_spm
from .hf_marian import (  # noqa: F401 (add_options: the same --dtype)
    StateDict, _load_json, add_options, hf_model_type, layer_tensors, read_vocab, read_weights,
    stored_dtype, write_conversion)

LAYER_NORM_EPS = 1e-5
MAX_POSITIONS_LIMIT = 65536
ACTIVATIONS = {"relu": "relu", "gelu": "gelu", "swish": "silu", "silu": "silu"}
SPM_NAME = "sentencepiece.bpe.model"
# tokenizer_class -> (family, the model_type it goes with)
TOKENIZERS = {"NllbTokenizer": ("hf-nllb", "m2m_100"), "NllbTokenizerFast": ("hf-nllb", "m2m_100"),
              "M2M100Tokenizer": ("hf-m2m100", "m2m_100"),
              "MBart50Tokenizer": ("hf-mbart50", "mbart"),
              "MBart50TokenizerFast": ("hf-mbart50", "mbart"),
              "MBartTokenizer": ("hf-mbart-cc25", "mbart"),
              "MBartTokenizerFast": ("hf-mbart-cc25", "mbart")}
MODEL_TYPES = ("m2m_100", "mbart")


def detect_m2m100(path):
    """True for a directory whose config.json says model_type m2m_100 (M2M100, NLLB)."""
    return hf_model_type(path) == "m2m_100"


def detect_mbart(path):
    """True for a directory whose config.json says model_type mbart."""
    return hf_model_type(path) == "mbart"


def _int(config, key, low=0, high=None, where="config.json"):
    value = config.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ConvertError("%s: %s must be an integer, not %r" % (where, key, value))
    if value < low or (high is not None and value > high):
        raise ConvertError("%s: %s %d out of %d..%s" % (where, key, value, low, high))
    return value


def architecture(config):
    model_type = config.get("model_type")
    if model_type not in MODEL_TYPES:
        raise ConvertError("config.json: model_type is %r, not \"m2m_100\" or \"mbart\""
                            % (model_type,))
    activation = config.get("activation_function", "relu" if model_type == "m2m_100" else "gelu")
    if activation not in ACTIVATIONS:
        raise ConvertError("config.json: activation_function %r not supported (relu, gelu, "
                            "swish, silu)" % (activation,))
    for key in ("scale_embedding", "tie_word_embeddings"):
        if not isinstance(config.get(key, True), bool):
            raise ConvertError("config.json: %s must be true or false" % key)
    if config.get("tie_word_embeddings", True) is not True:
        raise ConvertError("config.json: tie_word_embeddings false: M2M100 and NLLB tie "
                            "lm_head to the shared table, and tessera converts only that")
    arch = {"d": _int(config, "d_model", 1), "enc_layers": _int(config, "encoder_layers", 1),
            "dec_layers": _int(config, "decoder_layers", 1),
            "heads": _int(config, "encoder_attention_heads", 1),
            "ffn": _int(config, "encoder_ffn_dim", 1),
            "max_positions": _int(config, "max_position_embeddings", 2, MAX_POSITIONS_LIMIT - 2),
            "vocab": _int(config, "vocab_size", 1), "pad": _int(config, "pad_token_id"),
            "eos": _int(config, "eos_token_id"),
            "start": _int(dict(config, decoder_start_token_id=config.get(
                "decoder_start_token_id", config.get("eos_token_id"))), "decoder_start_token_id"),
            "mbart": model_type == "mbart",
            "activation": ACTIVATIONS[activation],
            "scale_embedding": config.get("scale_embedding", model_type == "m2m_100")}
    for key, ours in (("decoder_attention_heads", "heads"), ("decoder_ffn_dim", "ffn")):
        if _int(config, key, 1) != arch[ours]:
            raise ConvertError("config.json: %s %d differs from the encoder's %d (tessera has "
                                "one)" % (key, config[key], arch[ours]))
    if arch["d"] % arch["heads"] or arch["d"] % 2 or arch["d"] < 4:
        raise ConvertError("config.json: d_model %d: needs an even width of at least 4 that "
                            "encoder_attention_heads %d divides" % (arch["d"], arch["heads"]))
    return arch


def language_codes(tokenizer):
    codes = tokenizer.get("additional_special_tokens")
    if not isinstance(codes, list) or not codes or not all(isinstance(c, str) for c in codes):
        raise ConvertError("tokenizer_config.json: additional_special_tokens must list the "
                            "language codes")
    return codes


def vocabulary(input_dir, tokenizer, family, vocab_size, note):
    """(pieces in id order, [(language name, id)], the SentencePiece model's path)."""
    import sentencepiece as spm
    path = os.path.join(input_dir, SPM_NAME)
    if not os.path.isfile(path):
        raise ConvertError("%s: %s missing (the tokenizer's SentencePiece model)"
                            % (input_dir, SPM_NAME))
    try:
        sp = spm.SentencePieceProcessor(model_file=path)
    except (OSError, RuntimeError) as e:
        raise ConvertError("%s: not a SentencePiece model (%s)" % (path, e))
    codes = language_codes(tokenizer)
    if family != "hf-m2m100":
        # NllbTokenizer, MBart50Tokenizer, MBartTokenizer: fairseq's four
        # specials, then piece j at j + 1 (j >= 3: the model's own <unk> <s>
        # </s> are the specials), the codes, <mask>.
        pieces = ["<s>", "<pad>", "</s>", "<unk>"]
        pieces += [sp.id_to_piece(j) for j in range(3, sp.get_piece_size())]
        languages = [(code, len(pieces) + i) for i, code in enumerate(codes)]
        pieces += codes + ["<mask>"]
    else:
        # M2M100Tokenizer: vocab.json's ids, then __xx__ for each language.
        vocab = _load_json(os.path.join(input_dir, "vocab.json"), "vocab.json")
        if not isinstance(vocab, dict):
            raise ConvertError("vocab.json: not a JSON object (piece -> id)")
        pieces = read_vocab(os.path.join(input_dir, "vocab.json"), len(vocab), "vocab.json")
        languages = []
        for i, code in enumerate(codes):
            if not (code.startswith("__") and code.endswith("__") and len(code) > 4):
                raise ConvertError("tokenizer_config.json: %r is not an M2M100 language token "
                                    "(__xx__)" % code)
            languages.append((code[2:-2], len(pieces) + i))
        pieces += codes
        pieces += ["madeupword%d" % i
                   for i in range(int(tokenizer.get("num_madeup_words", 8)))]
    if len(pieces) > vocab_size:
        raise ConvertError("the tokenizer has %d tokens, more than the %d rows of the "
                            "embedding (vocab_size)" % (len(pieces), vocab_size))
    if len(pieces) < vocab_size:
        note("%d embedding rows past the tokenizer's last token: pieces <extra_N>"
             % (vocab_size - len(pieces)))
        pieces += ["<extra_%d>" % i for i in range(vocab_size - len(pieces))]
    return pieces, languages, path


def select_tensors(t, arch):
    d, vocab = arch["d"], arch["vocab"]
    table = None
    for name in ("shared.weight", "encoder.embed_tokens.weight", "decoder.embed_tokens.weight",
                 "lm_head.weight"):
        if t.has(name):
            values = t.get(name, (vocab, d))
            if table is None:
                table = values
            elif not np.array_equal(values, table):
                raise ConvertError("%s: tensor %s differs from the shared table: tessera holds "
                                    "one" % (t.origin, name))
    if table is None:
        raise ConvertError("%s: tensor model.shared.weight missing" % t.origin)
    out = {"tgt_tok_emb.embedding.weight": table}
    layer_tensors(t, arch, out)
    for stack in ("encoder", "decoder"):
        out["transformer.%s.norm.weight" % stack] = t.get(stack + ".layer_norm.weight", (d,))
        out["transformer.%s.norm.bias" % stack] = t.get(stack + ".layer_norm.bias", (d,))
    if not arch["mbart"]:
        for name in ("encoder.layernorm_embedding.weight", "final_logits_bias",
                     "encoder.embed_positions.weight"):
            if t.has(name):
                raise ConvertError("%s: tensor %s: not M2M100's (model_type m2m_100)"
                                    % (t.origin, name))
        return out
    rows = arch["max_positions"] + 2  # MBartLearnedPositionalEmbedding's offset
    for stack, ours in (("encoder", "pos_embedding"), ("decoder", "decoder_pos_embedding")):
        out["positional_encoding." + ours] = t.get(
            stack + ".embed_positions.weight", (rows, d)).reshape(rows, 1, d)
        out["transformer.%s.embedding_norm.weight" % stack] = t.get(
            stack + ".layernorm_embedding.weight", (d,))
        out["transformer.%s.embedding_norm.bias" % stack] = t.get(
            stack + ".layernorm_embedding.bias", (d,))
    out["generator.bias"] = t.get("final_logits_bias", (1, vocab)).reshape(vocab)
    return out


def convert(input_dir, out_dir, note=None, dtype="f32", source_spm=None, target_spm=None):
    """Converts the M2M100 / NLLB directory input_dir into out_dir; returns tessera's config."""
    note = note or print_note
    st_dtype = stored_dtype(input_dir, dtype)
    config = _load_json(os.path.join(input_dir, "config.json"), "config.json")
    if not isinstance(config, dict):
        raise ConvertError("config.json: not a JSON object")
    arch = architecture(config)
    tokenizer = _load_json(os.path.join(input_dir, "tokenizer_config.json"),
                           "tokenizer_config.json")
    if not isinstance(tokenizer, dict):
        raise ConvertError("tokenizer_config.json: not a JSON object")
    kind = tokenizer.get("tokenizer_class")
    if kind not in TOKENIZERS:
        raise ConvertError("tokenizer_config.json: tokenizer_class %r is not one of %s"
                            % (kind, ", ".join(sorted({k.replace("Fast", "")
                                                       for k in TOKENIZERS}))))
    family, model_type = TOKENIZERS[kind]
    if model_type != config["model_type"]:
        raise ConvertError("tokenizer_config.json: tokenizer_class %s goes with model_type %s, "
                            "not %s" % (kind, model_type, config["model_type"]))
    cc25 = family == "hf-mbart-cc25"
    generation_path = os.path.join(input_dir, "generation_config.json")
    if os.path.isfile(generation_path):
        generation = _load_json(generation_path, "generation_config.json")
        for key, ours in (("decoder_start_token_id", "start"), ("eos_token_id", "eos")):
            if isinstance(generation, dict) and generation.get(key, arch[ours]) != arch[ours]:
                raise ConvertError("generation_config.json: %s %r differs from config.json's "
                                    "%r" % (key, generation[key], arch[ours]))
    legacy = tokenizer.get("legacy_behaviour", False)
    if not isinstance(legacy, bool):
        raise ConvertError("tokenizer_config.json: legacy_behaviour must be true or false")
    pieces, languages, spm_path = vocabulary(input_dir, tokenizer, family, arch["vocab"], note)
    tensors, origin = read_weights(input_dir)
    t = StateDict(tensors, origin)
    selected = select_tensors(t, arch)
    for key in ("eos", "start", "pad"):
        if arch[key] >= arch["vocab"]:
            raise ConvertError("config.json: the %s id %d is out of the vocabulary (%d)"
                                % (key, arch[key], arch["vocab"]))
    spm_files = resolve_spm((source_spm, target_spm), (spm_path, spm_path), note)
    tessera_config = {
        "d_model": arch["d"], "n_heads": arch["heads"], "d_ff": arch["ffn"],
        "n_encoder_layers": arch["enc_layers"], "n_decoder_layers": arch["dec_layers"],
        "src_vocab_size": arch["vocab"], "tgt_vocab_size": arch["vocab"],
        "max_positions": arch["max_positions"], "activation": arch["activation"],
        "norm_first": True, "layer_norm_eps": LAYER_NORM_EPS, "layer_norm_form": "variance",
        "scale_embedding": arch["scale_embedding"], "bos_id": arch["start"],
        "eos_id": arch["eos"], "pad_id": arch["pad"], "unk_id": pieces.index("<unk>"),
        "position_encoding": "sinusoid_halves_t2t",
        "position_offset": 2 if arch["mbart"] else arch["pad"] + 1,
        "tie_output_projection": True, "share_embeddings": True, "decoder_start": "bos",
        "source_suffix": [arch["eos"]],
        "source_language": "suffix" if legacy or cc25 else "prefix",
        "target_language": "start" if cc25 else "forced",
        "languages": dict(languages), "family": family,
    }
    tokenizer_plan = plan_tokenizer(spm_files, (pieces, pieces))
    write_conversion(out_dir, tessera_config, selected, family, st_dtype, (pieces, pieces),
                     tokenizer_plan, sorted(set(tensors) - t.used), note)
    return tessera_config
