"""Reference PyTorch model and file writers for tessera (see INTERFACE.md).

The model is the widely used translation model built on torch.nn.Transformer,
so its state_dict() names are exactly the tensor names tessera reads. It is
written from INTERFACE.md alone, never from tessera's C code, so that the
golden fixtures and the torch comparison are an independent check.

References are meant to be computed in float64: build the model in float32,
round its weights to the dtype they will be stored in (round_weights), then
run a `.double()` copy. The float64 result is then the exact answer for the
stored weights up to float64 rounding, and any difference is tessera's.
"""

import collections
import json
import math
import os
import struct

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS = {"relu": F.relu, "gelu": F.gelu, "silu": F.silu}

TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
# What a safetensors file may hold: the float types, and I8 for quantized linear
# weights (each with a "<name>_scale" F32 tensor, INTERFACE.md).
STORAGE_DTYPES = dict(TORCH_DTYPES, I8=torch.int8)

# Optional config.json keys and their defaults (INTERFACE.md section 1).
CONFIG_DEFAULTS = {
    "max_positions": 1024,
    "activation": "relu",
    "norm_first": False,
    "layer_norm_eps": 1e-5,
    "scale_embedding": True,
    "bos_id": 2,
    "eos_id": 3,
    "pad_id": 1,
    "unk_id": 0,
    "layer_norm_form": "variance",
}

# How LayerNorm divides x - mean (config key layer_norm_form): PyTorch's
# nn.LayerNorm (sqrt of the biased variance plus eps), the biased standard
# deviation plus eps (Ba et al.), or the N - 1 estimate plus eps (The Annotated
# Transformer's LayerNorm, x.std(-1)).
LAYER_NORM_FORMS = ("variance", "std", "std_unbiased")

CONFIG_REQUIRED = (
    "d_model", "n_heads", "d_ff", "n_encoder_layers", "n_decoder_layers",
    "src_vocab_size", "tgt_vocab_size",
)

CONFIG_KEYS = CONFIG_REQUIRED + tuple(CONFIG_DEFAULTS)


def full_config(config):
    """The config with every INTERFACE key, defaults filled in, in the documented order."""
    missing = [key for key in CONFIG_REQUIRED if key not in config]
    if missing:
        raise ValueError("config lacks required key(s): " + ", ".join(missing))
    if config.get("activation", "relu") not in ACTIVATIONS:
        raise ValueError("config key 'activation': unknown value %r" % config["activation"])
    if config.get("layer_norm_form", "variance") not in LAYER_NORM_FORMS:
        raise ValueError("config key 'layer_norm_form': unknown value %r" % config["layer_norm_form"])
    merged = dict(CONFIG_DEFAULTS)
    merged.update(config)
    return {key: merged[key] for key in CONFIG_KEYS}


def sinusoid_table(n_positions, d_model):
    """PE[p, 2i] = sin(p / 10000^(2i/d)), PE[p, 2i+1] = cos(same), in float64.

    Written with the exact INTERFACE formula rather than the exp/log form of
    the PyTorch tutorial, so the reference does not lean on either rounding.
    """
    positions = torch.arange(n_positions, dtype=torch.float64)[:, None]
    two_i = torch.arange(0, d_model, 2, dtype=torch.float64)
    angles = positions / torch.pow(10000.0, two_i / d_model)
    table = torch.zeros(n_positions, d_model, dtype=torch.float64)
    table[:, 0::2] = torch.sin(angles)
    table[:, 1::2] = torch.cos(angles[:, : d_model // 2])
    return table


class StdLayerNorm(nn.Module):
    """weight * (x - mean) / (std + eps) + bias over the last dimension, std
    biased (divide by N) or not (N - 1): the forms of layer_norm_form other than
    nn.LayerNorm's. Parameters named as nn.LayerNorm's, so that the state dict
    has the same tensors."""

    def __init__(self, d_model, eps, unbiased):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(d_model))
        self.bias = nn.Parameter(torch.zeros(d_model))
        self.eps = eps
        self.unbiased = unbiased

    def forward(self, x):
        mean = x.mean(-1, keepdim=True)
        std = x.std(-1, unbiased=self.unbiased, keepdim=True)
        return self.weight * (x - mean) / (std + self.eps) + self.bias


def use_layer_norm_form(module, form, eps):
    """Replaces every nn.LayerNorm under module by the form's StdLayerNorm."""
    if form == "variance":
        return
    for name, child in list(module.named_children()):
        if isinstance(child, nn.LayerNorm):
            setattr(module, name, StdLayerNorm(child.normalized_shape[0], eps,
                                               unbiased=form == "std_unbiased"))
        else:
            use_layer_norm_form(child, form, eps)


class TokenEmbedding(nn.Module):
    """nn.Embedding wrapped under the name `embedding`, optionally times sqrt(d_model)."""

    def __init__(self, vocab_size, d_model, scale_embedding):
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, d_model)
        self.scale = math.sqrt(d_model) if scale_embedding else 1.0

    def forward(self, ids):
        return self.embedding(ids) * self.scale


class TablePositionalEncoding(nn.Module):
    """Adds row p of the `pos_embedding` buffer [max_len, 1, d] to position p."""

    def __init__(self, d_model, max_len):
        super().__init__()
        table = sinusoid_table(max_len, d_model).to(torch.float32).unsqueeze(1)
        self.register_buffer("pos_embedding", table)

    def forward(self, x):
        return x + self.pos_embedding[: x.size(0)]


class ComputedPositionalEncoding(nn.Module):
    """No buffer: the sinusoid is computed on the fly, as tessera must do when
    the table is absent from model.safetensors."""

    def __init__(self, d_model):
        super().__init__()
        self.d_model = d_model

    def forward(self, x):
        table = sinusoid_table(x.size(0), self.d_model).to(x.dtype)
        return x + table.unsqueeze(1)


# A finished beam hypothesis. length counts the eos when the hypothesis ended
# by one (by_eos), so a hypothesis cut at the length limit has length == limit.
Hypothesis = collections.namedtuple("Hypothesis", "tokens score length rank by_eos")

# What a beam search prints for the n-best entries it could not fill.
MISSING_HYPOTHESIS = Hypothesis([], -math.inf, 0, -math.inf, False)


def length_normalised(score, length, length_penalty):
    """score / length^length_penalty, the beam ranking (plain score when A == 0 or length == 0)."""
    if length_penalty == 0 or length == 0:
        return score
    return score / length ** length_penalty


def _beam_step_margin(candidates, beam, walked, eos):
    """Smallest gap between sorted candidate scores whose order decided a beam step.

    candidates: (score, hypothesis, token) sorted best first, of which the
    first `walked` were taken. The decisions: which candidates sort among the
    first `beam` (so which eos candidates finish), and where the walk stopped.
    """
    scores = [c[0] for c in candidates]
    gaps = []
    if len(scores) > beam:
        gaps.append(scores[beam - 1] - scores[beam])
    if walked < len(scores):
        gaps.append(scores[walked - 1] - scores[walked])
    for position, (score, _, token) in enumerate(candidates):
        if token == eos and position < beam and beam < len(scores):
            gaps.append(score - scores[beam])
        elif token == eos and position >= beam:
            gaps.append(scores[beam - 1] - score)
    return min(gaps, default=math.inf)


def _causal_mask(size):
    """Boolean mask, True where attention is forbidden (a later position)."""
    return torch.triu(torch.ones(size, size, dtype=torch.bool), diagonal=1)


def _as_column(ids):
    """Token ids as the [len, batch=1] LongTensor nn.Transformer expects."""
    return torch.tensor(list(ids), dtype=torch.long).reshape(-1, 1)


class Seq2SeqTransformer(nn.Module):
    """The translation model of INTERFACE.md.

    config: INTERFACE keys (see full_config). pos_table_rows: None for a
    computed sinusoid, else the number of rows of the registered
    `positional_encoding.pos_embedding` buffer. final_norms: False drops
    transformer.encoder.norm and transformer.decoder.norm (absent from the
    state dict, not applied).
    """

    def __init__(self, config, pos_table_rows=None, final_norms=True):
        super().__init__()
        self.config = full_config(config)
        cfg = self.config
        d_model = cfg["d_model"]
        self.src_tok_emb = TokenEmbedding(cfg["src_vocab_size"], d_model, cfg["scale_embedding"])
        self.tgt_tok_emb = TokenEmbedding(cfg["tgt_vocab_size"], d_model, cfg["scale_embedding"])
        if pos_table_rows is None:
            self.positional_encoding = ComputedPositionalEncoding(d_model)
        else:
            if pos_table_rows < cfg["max_positions"]:
                raise ValueError("pos_table_rows must be >= max_positions")
            self.positional_encoding = TablePositionalEncoding(d_model, pos_table_rows)
        self.transformer = nn.Transformer(
            d_model=d_model,
            nhead=cfg["n_heads"],
            num_encoder_layers=cfg["n_encoder_layers"],
            num_decoder_layers=cfg["n_decoder_layers"],
            dim_feedforward=cfg["d_ff"],
            dropout=0.0,
            activation=ACTIVATIONS[cfg["activation"]],
            layer_norm_eps=cfg["layer_norm_eps"],
            batch_first=False,
            norm_first=cfg["norm_first"],
        )
        if not final_norms:
            self.transformer.encoder.norm = None
            self.transformer.decoder.norm = None
        use_layer_norm_form(self.transformer, cfg["layer_norm_form"], cfg["layer_norm_eps"])
        self.generator = nn.Linear(d_model, cfg["tgt_vocab_size"])
        self.eval()

    def _check_ids(self, ids, vocab_key, what):
        if not ids and what == "source":
            raise ValueError("empty source")
        for token in ids:
            if not 0 <= token < self.config[vocab_key]:
                raise ValueError("%s id %d out of range" % (what, token))

    def encode(self, src_ids):
        """Encoder output [len(src), 1, d_model]."""
        self._check_ids(src_ids, "src_vocab_size", "source")
        if len(src_ids) > self.config["max_positions"]:
            raise ValueError("source longer than max_positions")
        src = self.positional_encoding(self.src_tok_emb(_as_column(src_ids)))
        return self.transformer.encoder(src)

    def decode_logits(self, memory, tgt_in_ids):
        """Generator logits [len(tgt_in), tgt_vocab] with a causal self-attention mask."""
        self._check_ids(tgt_in_ids, "tgt_vocab_size", "target")
        if len(tgt_in_ids) > self.config["max_positions"]:
            raise ValueError("[bos] + target longer than max_positions")
        tgt = self.positional_encoding(self.tgt_tok_emb(_as_column(tgt_in_ids)))
        mask = _causal_mask(len(tgt_in_ids))
        out = self.transformer.decoder(tgt, memory, tgt_mask=mask)
        return self.generator(out)[:, 0, :]

    @torch.no_grad()
    def score(self, src_ids, tgt_ids):
        """Log-probabilities of each tgt token and then of eos, the decoder fed [bos] + tgt."""
        bos, eos = self.config["bos_id"], self.config["eos_id"]
        logits = self.decode_logits(self.encode(src_ids), [bos] + list(tgt_ids))
        logprobs = torch.log_softmax(logits, dim=-1)
        wanted = list(tgt_ids) + [eos]
        return [logprobs[i, token].item() for i, token in enumerate(wanted)]

    @torch.no_grad()
    def greedy_with_margin(self, src_ids, max_len):
        """Greedy ids (no bos/eos) and the smallest top-1 minus top-2 logit gap met.

        The gap tells callers whether the argmax could flip under float
        rounding; re-running the decoder on the whole prefix is slow but simple.
        """
        cfg = self.config
        steps = min(max_len, cfg["max_positions"] - 1)
        memory = self.encode(src_ids)
        prefix = [cfg["bos_id"]]
        margin = math.inf
        for _ in range(steps):
            last = self.decode_logits(memory, prefix)[-1]
            top2 = torch.topk(last, 2).values
            margin = min(margin, (top2[0] - top2[1]).item())
            token = int(torch.argmax(last).item())
            if token == cfg["eos_id"]:
                break
            prefix.append(token)
        return prefix[1:], margin

    @torch.no_grad()
    def eos_gap(self, src_ids, max_len):
        """How much the eos logit must grow for greedy to stop at eos within max_len.

        Raising the eos bias by s changes no greedy choice until the first step
        where eos wins, so greedy with bias + s stops at eos exactly when s
        exceeds this gap (the smallest best-non-eos minus eos logit along the
        path that ignores eos). Lets a caller pick s without re-decoding.
        """
        cfg = self.config
        steps = min(max_len, cfg["max_positions"] - 1)
        memory = self.encode(src_ids)
        prefix = [cfg["bos_id"]]
        gap = math.inf
        for _ in range(steps):
            last = self.decode_logits(memory, prefix)[-1].clone()
            eos_logit = last[cfg["eos_id"]].item()
            last[cfg["eos_id"]] = -math.inf
            token = int(torch.argmax(last).item())
            gap = min(gap, last[token].item() - eos_logit)
            prefix.append(token)
        return gap

    def greedy(self, src_ids, max_len):
        """Greedy ids: argmax each step, stop at eos or after max_len tokens."""
        return self.greedy_with_margin(src_ids, max_len)[0]

    def _next_logprobs(self, memory, prefixes):
        """Log-softmax of the generator after each prefix, as a list of rows.

        The prefixes of one beam step all have the same length, so they are
        decoded as one batch, each from scratch (no cache to get wrong).
        """
        columns = torch.tensor(prefixes, dtype=torch.long).t()
        tgt = self.positional_encoding(self.tgt_tok_emb(columns))
        out = self.transformer.decoder(tgt, memory.expand(-1, columns.size(1), -1),
                                       tgt_mask=_causal_mask(columns.size(0)))
        return torch.log_softmax(self.generator(out[-1]), dim=-1).tolist()

    @torch.no_grad()
    def beam_search(self, src_ids, beam, max_len, length_penalty=0.0, n_best=1):
        """(the n_best best Hypothesis, best first; margin), as `tessera translate --beam`.

        Each step every (live hypothesis h, token v) is a candidate scored
        h.score + log p(v); candidates are sorted by score (ties: h, then v)
        and walked until `beam` new live hypotheses are collected. An eos
        candidate finishes only if it sorts among the first `beam`. When the
        live hypotheses reach the length limit they finish without eos.
        Finished ones are ranked by score / length^length_penalty (stable).
        The search stops when nothing is live, or when n_best have finished
        and the best live score over limit^A cannot beat the n_best-th rank
        (not when `beam` have finished: with a sharp model the eos candidates
        of the poor live hypotheses sort among the first `beam` and would end
        the search before the best one ends). Entries it could not fill are
        MISSING_HYPOTHESIS.

        margin is the smallest gap met between two values whose order decides
        the output: the beam-th and (beam+1)-th candidates, the last walked
        candidate and the next, each eos candidate and the other side of the
        beam boundary, the early-stop test, and neighbouring ranks among the
        n_best + 1 best finished. Float rounding smaller than it cannot change
        the ids printed.
        """
        cfg = self.config
        eos, vocab = cfg["eos_id"], cfg["tgt_vocab_size"]
        limit = min(max_len, cfg["max_positions"] - 1)
        memory = self.encode(src_ids)
        margin = math.inf
        finished = []
        if limit > 0:
            live = [([], 0.0)]
        else:
            live = []
            finished.append(Hypothesis([], 0.0, 0, 0.0, False))

        def finish(tokens, score, length, by_eos):
            rank = length_normalised(score, length, length_penalty)
            finished.append(Hypothesis(tokens, score, length, rank, by_eos))
            finished.sort(key=lambda f: -f.rank)

        while live:
            rows = self._next_logprobs(memory, [[cfg["bos_id"]] + tokens for tokens, _ in live])
            candidates = sorted(((score + rows[h][v], h, v) for h, (_, score) in enumerate(live)
                                 for v in range(vocab)), key=lambda c: (-c[0], c[1], c[2]))
            new_live = []
            walked = 0
            for position, (score, h, v) in enumerate(candidates):
                if len(new_live) == beam:
                    break
                walked = position + 1
                tokens = live[h][0]
                if v != eos:
                    new_live.append((tokens + [v], score))
                elif position < beam:
                    finish(tokens, score, len(tokens) + 1, True)
            margin = min(margin, _beam_step_margin(candidates, beam, walked, eos))

            live = new_live
            if live and len(live[0][0]) == limit:
                for tokens, score in live:
                    finish(tokens, score, limit, False)
                live = []
            if not live:
                break
            if len(finished) >= n_best:
                bound = length_normalised(live[0][1], limit, length_penalty)
                kth_rank = finished[n_best - 1].rank
                margin = min(margin, abs(bound - kth_rank))
                if bound <= kth_rank:
                    break

        ranks = [f.rank for f in finished[: n_best + 1]]
        for better, worse in zip(ranks, ranks[1:]):
            margin = min(margin, better - worse)
        best = finished[:n_best]
        return best + [MISSING_HYPOTHESIS] * (n_best - len(best)), margin


@torch.no_grad()
def perturb_for_testing(model, generator_scale=3.0, seed=None):
    """Moves the parameters away from values a buggy runtime could get right by luck.

    nn.Transformer starts LayerNorms at weight 1 / bias 0 and attention biases
    at 0; a runtime that ignored them would still match. A larger generator
    keeps the output distribution away from uniform so that greedy choices and
    log-probabilities depend on every part of the network.
    """
    rng = torch.Generator().manual_seed(seed) if seed is not None else None
    for name, tensor in model.state_dict().items():
        noise = torch.randn(tensor.shape, generator=rng)
        if name.endswith("pos_embedding"):
            tensor.add_(0.1 * noise)
        elif ".norm" in name and name.endswith(".weight"):
            tensor.copy_(1.0 + 0.2 * noise)
        elif name.endswith("bias"):
            tensor.copy_(0.1 * noise)
    model.generator.weight.mul_(generator_scale)


@torch.no_grad()
def round_weights(model, dtype):
    """Rounds every parameter and buffer to dtype ('F32', 'F16', 'BF16') in place.

    The reference must see the values tessera will read from the file.
    """
    for tensor in model.state_dict().values():
        tensor.copy_(tensor.to(TORCH_DTYPES[dtype]).to(tensor.dtype))


def is_linear_weight(name, shape):
    """The tensors INTERFACE.md lets be I8: a linear layer's 2-D weight."""
    return len(shape) == 2 and (name.endswith("in_proj_weight") or
                                (name.endswith(".weight") and not name.endswith("embedding.weight")))


def quantize_int8(weight):
    """Symmetric per-row int8 of a [out, in] weight: (q int8, scale float32 [out]).

    scale = max|w_row| / 127 (1 for an all-zero row, so every scale is > 0),
    q = round(w / scale), ties to even, within [-127, 127].
    """
    weight = weight.detach().to(torch.float32)
    scale = weight.abs().amax(dim=1) / 127.0
    scale = torch.where(scale > 0, scale, torch.ones_like(scale))
    q = torch.round(weight / scale[:, None]).clamp(-127, 127).to(torch.int8)
    return q, scale


def dequantize_int8(q, scale):
    """q * scale in float32, each product rounded once (what tessera's loader computes)."""
    return q.to(torch.float32) * scale.to(torch.float32)[:, None]


def _tensor_bytes(tensor, dtype):
    """Raw little-endian bytes of tensor stored as dtype."""
    if not isinstance(tensor, torch.Tensor):
        tensor = torch.from_numpy(np.asarray(tensor))
    tensor = tensor.detach().cpu().to(STORAGE_DTYPES[dtype]).contiguous()
    if dtype == "BF16":
        array = tensor.view(torch.int16).numpy()
    else:
        array = tensor.numpy()
    return array.astype(array.dtype.newbyteorder("<"), copy=False).tobytes(), list(tensor.shape)


def write_safetensors(path, tensors, dtype="F32", metadata=None, dtypes=None):
    """Writes name -> array/tensor as a safetensors file, stored as dtype, or
    as dtypes[name] for the names that mapping gives (e.g. "I8").

    Tensors are laid out in name order; the header is padded with spaces to
    a multiple of 8 bytes so that the data section is aligned.
    """
    dtypes = dtypes or {}
    for kind in [dtype] + list(dtypes.values()):
        if kind not in STORAGE_DTYPES:
            raise ValueError("dtype must be one of " + ", ".join(STORAGE_DTYPES))
    header = {}
    blobs = []
    offset = 0
    for name in sorted(tensors):
        kind = dtypes.get(name, dtype)
        data, shape = _tensor_bytes(tensors[name], kind)
        header[name] = {"dtype": kind, "shape": shape, "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    header_bytes = json.dumps(header, separators=(",", ":")).encode("utf-8")
    header_bytes += b" " * (-len(header_bytes) % 8)
    with open(path, "wb") as out:
        out.write(struct.pack("<Q", len(header_bytes)))
        out.write(header_bytes)
        for data in blobs:
            out.write(data)


def read_safetensors(path):
    """name -> float32 torch tensor, for round-trip checks of write_safetensors.

    An I8 weight comes back dequantized with its scale tensor, which is dropped.
    """
    with open(path, "rb") as f:
        raw = f.read()
    (header_len,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + header_len])
    data = raw[8 + header_len :]
    result = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        chunk = bytearray(data[begin:end])
        if info["dtype"] == "BF16":
            tensor = torch.frombuffer(chunk, dtype=torch.int16).view(torch.bfloat16)
        else:
            tensor = torch.frombuffer(chunk, dtype=STORAGE_DTYPES[info["dtype"]])
        result[name] = tensor.reshape(info["shape"])
    for name, info in header.items():
        if name != "__metadata__" and info["dtype"] == "I8":
            result[name] = dequantize_int8(result[name], result.pop(name + "_scale"))
    return {name: tensor.to(torch.float32) for name, tensor in result.items()}


def write_vocab(path, tokens):
    """One token per line, line number = id."""
    with open(path, "w", encoding="utf-8") as f:
        for token in tokens:
            if not token or any(c.isspace() for c in token):
                raise ValueError("vocab token %r is empty or holds white space" % token)
            f.write(token + "\n")


def write_model_dir(directory, model, config, dtype="F32", src_vocab=None, tgt_vocab=None):
    """Writes config.json and model.safetensors (and the vocab files if given)."""
    os.makedirs(directory, exist_ok=True)
    written = full_config(config)
    # The default form is left out: files written before the key existed
    # stay byte for byte the same.
    if written["layer_norm_form"] == "variance":
        del written["layer_norm_form"]
    with open(os.path.join(directory, "config.json"), "w", encoding="utf-8") as f:
        json.dump(written, f, indent=2)
        f.write("\n")
    write_safetensors(os.path.join(directory, "model.safetensors"), model.state_dict(), dtype)
    if src_vocab is not None:
        write_vocab(os.path.join(directory, "vocab.src.txt"), src_vocab)
    if tgt_vocab is not None:
        write_vocab(os.path.join(directory, "vocab.tgt.txt"), tgt_vocab)


def load_model_dir(directory):
    """A float32 Seq2SeqTransformer from a model directory (for round-trip checks)."""
    with open(os.path.join(directory, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    tensors = read_safetensors(os.path.join(directory, "model.safetensors"))
    table = tensors.get("positional_encoding.pos_embedding")
    model = Seq2SeqTransformer(config, pos_table_rows=None if table is None else table.shape[0],
                               final_norms="transformer.encoder.norm.weight" in tensors)
    model.load_state_dict(tensors)
    return model


def format_nbest(hypotheses):
    """An n-best line as tessera prints it: IDS<TAB>SCORE pairs, TAB separated, best first."""
    return "\t".join("%s\t%.9g" % (" ".join(str(t) for t in h.tokens), h.rank) for h in hypotheses)


def format_logprobs(values):
    """Log-probabilities as written in the fixtures: 9 significant digits."""
    return " ".join("%.9g" % v for v in values)
