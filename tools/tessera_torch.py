"""Reference PyTorch model and file writers for tessera (see docs/model-format.md).

The model is the widely used translation model built on torch.nn.Transformer,
so its state_dict() names are exactly the tensor names tessera reads. It is
written from docs/model-format.md alone, never from tessera's C code, so that the
golden fixtures and the torch comparison are an independent check.

References are meant to be computed in float64: build the model in float32,
round its weights to the dtype they will be stored in (round_weights), then
run a `.double()` copy. The float64 result is then the exact answer for the
stored weights up to float64 rounding, and any difference is tessera's.
"""

import collections
import dataclasses
import json
import math
import os
import struct
import typing

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

ACTIVATIONS = {
    "relu": F.relu, "gelu": F.gelu, "silu": F.silu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "gelu_sigmoid": lambda x: x * torch.sigmoid(1.702 * x),
}

TORCH_DTYPES = {"F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16}
# What a safetensors file may hold: the float types, and I8 for quantized linear
# weights (each with a "<name>_scale" F32 tensor, docs/model-format.md).
STORAGE_DTYPES = dict(TORCH_DTYPES, I8=torch.int8)

# Optional config.json keys and their defaults (docs/model-format.md section 1).
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
    """The config with every docs/model-format.md key, defaults filled in, in the documented order."""
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

    Written with the exact docs/model-format.md formula rather than the exp/log form of
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
# by_eos is true for any ENDING token (eos, or DecodeOptions.end_token);
# ending is that token's id (None when cut at the limit).
Hypothesis = collections.namedtuple("Hypothesis", "tokens score length rank by_eos ending",
                                    defaults=(None,))

# What a beam search prints for the n-best entries it could not fill.
MISSING_HYPOTHESIS = Hypothesis([], -math.inf, 0, -math.inf, False)


def length_normalised(score, length, length_penalty):
    """score / length^length_penalty, the beam ranking (plain score when A == 0 or length == 0)."""
    if length_penalty == 0 or length == 0:
        return score
    return score / length ** length_penalty


def _beam_step_margin(candidates, beam, walked, endings):
    """Smallest gap between sorted candidate scores whose order decided a beam step.

    candidates: (score, hypothesis, token) sorted best first, of which the
    first `walked` were taken. The decisions: which candidates sort among the
    first `beam` (so which ending candidates finish), and where the walk
    stopped. endings: the ending token ids (eos, and the end token if any).
    """
    scores = [c[0] for c in candidates]
    gaps = []
    if len(scores) > beam:
        gaps.append(scores[beam - 1] - scores[beam])
    if 0 < walked < len(scores):
        gaps.append(scores[walked - 1] - scores[walked])
    for position, (score, _, token) in enumerate(candidates):
        if token in endings and position < beam and beam < len(scores):
            gaps.append(score - scores[beam])
        elif token in endings and position >= beam:
            gaps.append(scores[beam - 1] - score)
    return min(gaps, default=math.inf)


# ---- decoding options: sampling, target prefix, constraints -----------------
#
# The semantics are those of `tessera translate`'s options (issue 13, items
# 1-3), written here from their specification, not from tessera's code.

MASK64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15   # SplitMix64's increment (the golden ratio)
MAX_SAMPLING_TOPK = 1048576
MAX_NO_REPEAT_NGRAM = 1024


def mix64(z):
    """SplitMix64's output function, all arithmetic mod 2^64."""
    z &= MASK64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK64
    return z ^ (z >> 31)


def sentence_key(seed, index):
    """The random stream key of the sentence at 0-based input position index."""
    return mix64((seed & MASK64) ^ mix64(index + GAMMA))


def stream_word(key, t):
    """64-bit draw t (0, 1, ...) of the stream `key`: SplitMix64's t-th output from state key."""
    return mix64(key + (t + 1) * GAMMA)


def word_to_uniform(x):
    """The top 53 bits of a 64-bit word as a double in [0, 1)."""
    return (x >> 11) * 2.0 ** -53


def uniform_draw(key, t):
    """Uniform number t of the stream `key`, in [0, 1)."""
    return word_to_uniform(stream_word(key, t))


class SentenceStream:
    """The random stream of one sentence: each uniform() call is the next draw.

    Only sampled steps draw; forced (prefix) and greedy steps never call it.
    """

    def __init__(self, seed, index):
        self.key = sentence_key(seed, index)
        self.draws = 0

    def uniform(self):
        u = uniform_draw(self.key, self.draws)
        self.draws += 1
        return u


@dataclasses.dataclass(frozen=True)
class DecodeOptions:
    """The decoding options of `tessera translate` (defaults: plain greedy/beam).

    sampling_topk: 1 = no sampling, 0 = the whole vocabulary; sampling is on
    when it is not 1 (and needs beam 1). end_token: None, or a target id that
    ends a hypothesis as eos does.
    """
    sampling_topk: int = 1
    sampling_topp: float = 1.0
    sampling_temperature: float = 1.0
    seed: int = 0
    min_len: int = 0
    no_repeat_ngram: int = 0
    repetition_penalty: float = 1.0
    disable_unk: bool = False
    end_token: typing.Optional[int] = None
    # A vocabulary shortlist's candidates for the sentence (README
    # "Vocabulary shortlists"): the target ids it may produce, every other
    # logit -inf before anything else, so the softmax is over them alone;
    # None: every id.
    candidates: typing.Optional[frozenset] = None

    @property
    def sampling(self):
        return self.sampling_topk != 1

    def processes(self):
        """True when some step's logits may be changed (steps 2-5)."""
        return (self.repetition_penalty != 1 or self.no_repeat_ngram > 0 or self.disable_unk
                or self.min_len > 0)

    def endings(self, config):
        """The ENDING token ids: eos, and the end token when given."""
        ending = {config["eos_id"]}
        if self.end_token is not None:
            ending.add(self.end_token)
        return frozenset(ending)

    def check(self, config, beam=1, max_len=None):
        """Raises ValueError for what the CLI refuses (ranges, combinations).

        The CLI refuses --sampling-topp / --sampling-temperature *given* with
        top-k 1; here only their values are known, so a non-default value is
        refused.
        """
        def fail(message):
            raise ValueError(message)
        if not 0 <= self.sampling_topk <= MAX_SAMPLING_TOPK:
            fail("sampling_topk out of 0..%d" % MAX_SAMPLING_TOPK)
        if not 0 < self.sampling_topp <= 1:
            fail("sampling_topp out of (0, 1]")
        if not 0.001 <= self.sampling_temperature <= 100:
            fail("sampling_temperature out of 0.001..100")
        if not 0 <= self.seed <= MASK64:
            fail("seed out of 0..2^64-1")
        if not self.sampling and (self.sampling_topp != 1 or self.sampling_temperature != 1):
            fail("sampling_topp / sampling_temperature need sampling (sampling_topk != 1)")
        if self.sampling and beam != 1:
            fail("sampling needs beam 1")
        if self.min_len < 0 or (max_len is not None and self.min_len > max_len):
            fail("min_len out of 0..max_len")
        if not 0 <= self.no_repeat_ngram <= MAX_NO_REPEAT_NGRAM:
            fail("no_repeat_ngram out of 0..%d" % MAX_NO_REPEAT_NGRAM)
        if not 0.01 <= self.repetition_penalty <= 100:
            fail("repetition_penalty out of 0.01..100")
        if self.end_token is not None and not 0 <= self.end_token < config["tgt_vocab_size"]:
            fail("end_token out of 0..tgt_vocab_size-1")


DEFAULT_OPTIONS = DecodeOptions()


def restrict_logits(logits, options):
    """The generator's logits (a row, or rows) over options.candidates: -inf elsewhere."""
    if options.candidates is None:
        return logits
    keep = torch.zeros(logits.shape[-1], dtype=torch.bool)
    keep[torch.tensor(sorted(options.candidates), dtype=torch.long)] = True
    return torch.where(keep, logits, torch.tensor(-math.inf, dtype=logits.dtype))


def process_logits(logits, history, options, config):
    """Steps 2-6 of a step that is not forced: the processed log-probs (float64 row).

    logits: the generator's row (any float tensor, taken as float64);
    history: the hypothesis's target ids so far (forced prefix included, no bos).
    """
    z = logits.to(torch.float64).clone()
    penalty = options.repetition_penalty
    if penalty != 1 and history:
        seen = torch.tensor(sorted(set(history)), dtype=torch.long)
        values = z[seen]
        z[seen] = torch.where(values < 0, values * penalty, values / penalty)
    n = options.no_repeat_ngram
    length = len(history)
    if n > 0 and length >= n - 1:
        tail = list(history[length - (n - 1):])
        for j in range(length - n + 1):
            if list(history[j:j + n - 1]) == tail:
                z[history[j + n - 1]] = -math.inf
    if options.disable_unk:
        z[config["unk_id"]] = -math.inf
    if length < options.min_len:
        z[config["eos_id"]] = -math.inf
        if options.end_token is not None:
            z[options.end_token] = -math.inf
    if not torch.isfinite(z).any():
        raise ValueError("every token is banned at this step")
    return torch.log_softmax(z, dim=-1)


def greedy_choice(lp):
    """(argmax, lowest id among equal maxima; top-1 minus top-2 gap, inf if one candidate)."""
    token = int(torch.argmax(lp).item())
    if lp.numel() < 2:
        return token, math.inf
    top2 = torch.topk(lp, 2).values.tolist()
    return token, (top2[0] - top2[1] if top2[1] > -math.inf else math.inf)


def sampling_choice(lp, topk, topp, temperature, u):
    """(token, margin): the sampled token of one step, given the processed
    log-probs lp (a float64 row or a list) and the uniform number u.

    margin is the smallest gap met between values whose order decided the
    token: the log-probs of the K-th and (K+1)-th candidates (top-k cut);
    for top-p, the distance of P from the normalised running sums either side
    of the cut, and the log-probs of the last kept and first dropped
    candidates; and the distance of target = u * W from the running sums
    around the chosen token, over W (only the boundaries between two kept
    tokens: target >= 0 and target < W hold whatever the rounding).
    """
    values = lp.tolist() if torch.is_tensor(lp) else [float(v) for v in lp]
    cand = [i for i, v in enumerate(values) if v > -math.inf]
    if not cand:
        raise ValueError("no candidate token")
    order = sorted(cand, key=lambda i: (-values[i], i))
    margin = math.inf
    if 0 < topk < len(order):
        margin = min(margin, values[order[topk - 1]] - values[order[topk]])
        order = order[:topk]
    best = values[order[0]]
    weights = {i: math.exp((values[i] - best) / temperature) for i in order}
    kept = order
    if topp < 1:
        total = 0.0
        for i in order:
            total += weights[i]
        threshold = topp * total
        running = 0.0
        cut = len(order) - 1
        for j, i in enumerate(order):
            before = running
            running += weights[i]
            if running >= threshold:
                cut = j
                break
        margin = min(margin, topp - before / total, running / total - topp)
        if cut + 1 < len(order):
            margin = min(margin, values[order[cut]] - values[order[cut + 1]])
        kept = order[: cut + 1]
    kept = sorted(kept)
    total_kept = 0.0
    for i in kept:
        total_kept += weights[i]
    target = u * total_kept
    running = 0.0
    for position, i in enumerate(kept):
        before = running
        running += weights[i]
        if running > target:
            gaps = []
            if position > 0:
                gaps.append(target - before)
            if position < len(kept) - 1:
                gaps.append(running - target)
            if gaps:
                margin = min(margin, min(gaps) / total_kept)
            return i, margin
    return kept[-1], 0.0   # rounding left no running sum above target: on the edge


def _causal_mask(size):
    """Boolean mask, True where attention is forbidden (a later position)."""
    return torch.triu(torch.ones(size, size, dtype=torch.bool), diagonal=1)


def _as_column(ids):
    """Token ids as the [len, batch=1] LongTensor nn.Transformer expects."""
    return torch.tensor(list(ids), dtype=torch.long).reshape(-1, 1)


class Seq2SeqTransformer(nn.Module):
    """The translation model of docs/model-format.md.

    config: docs/model-format.md keys (see full_config). pos_table_rows: None for a
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

    def _next_logits(self, memory, prefixes):
        """Generator logits after each prefix, [len(prefixes), tgt_vocab].

        The prefixes of one beam step all have the same length, so they are
        decoded as one batch, each from scratch (no cache to get wrong).
        """
        columns = torch.tensor(prefixes, dtype=torch.long).t()
        tgt = self.positional_encoding(self.tgt_tok_emb(columns))
        out = self.transformer.decoder(tgt, memory.expand(-1, columns.size(1), -1),
                                       tgt_mask=_causal_mask(columns.size(0)))
        return self.generator(out[-1])

    def _next_logprobs(self, memory, prefixes, options=None):
        """Log-softmax of the generator after each prefix (over options'
        candidates), as a list of rows."""
        logits = self._next_logits(memory, prefixes)
        if options is not None:
            logits = restrict_logits(logits, options)
        return torch.log_softmax(logits, dim=-1).tolist()

    def _next_processed(self, memory, histories, options):
        """Processed log-probs (steps 2-6) after each history, as a list of rows.

        With no processing option the rows are _next_logprobs's, bit for bit.
        """
        bos = self.config["bos_id"]
        logits = restrict_logits(self._next_logits(memory, [[bos] + list(h) for h in histories]),
                                 options)
        if not options.processes():
            return torch.log_softmax(logits, dim=-1).tolist()
        return [process_logits(logits[k], history, options, self.config).tolist()
                for k, history in enumerate(histories)]

    def _check_prefix(self, prefix, endings, limit):
        """Raises ValueError for a prefix the CLI refuses."""
        for token in prefix:
            if not 0 <= token < self.config["tgt_vocab_size"]:
                raise ValueError("prefix id %d out of range" % token)
            if token in endings:
                raise ValueError("prefix holds an ending token (%d)" % token)
        if len(prefix) > limit:
            raise ValueError("prefix longer than the target limit")

    @torch.no_grad()
    def decode_hypothesis(self, src_ids, max_len, options=DEFAULT_OPTIONS, sentence_index=0,
                          prefix=(), length_penalty=0.0):
        """(Hypothesis, margin): greedy or sampled decoding with the options, beam 1.

        Steps while the output is shorter than prefix are forced (raw
        log-prob, no processing, no draw); the others are processed (steps
        2-6) and choose by argmax, or by sampling with draw t of the
        sentence's stream (sentence_index: its 0-based input line) for the
        t-th sampled step. An ENDING token (eos, end_token) ends the output,
        is not in it, and counts in the length. The decoder re-runs the whole
        prefix each step, as greedy_with_margin does.

        margin: the smallest gap met between values whose order decided a
        choice (greedy_choice / sampling_choice); forced steps decide nothing.
        """
        cfg = self.config
        limit = min(max_len, cfg["max_positions"] - 1)
        options.check(cfg, beam=1, max_len=max_len)
        endings = options.endings(cfg)
        prefix = list(prefix)
        self._check_prefix(prefix, endings, limit)
        stream = SentenceStream(options.seed, sentence_index) if options.sampling else None
        memory = self.encode(src_ids)
        history, score, margin, ending = [], 0.0, math.inf, None
        for _ in range(limit):
            logits = restrict_logits(self.decode_logits(memory, [cfg["bos_id"]] + history)[-1],
                                     options)
            if len(history) < len(prefix):
                token = prefix[len(history)]
                score += torch.log_softmax(logits, dim=-1)[token].item()
                history.append(token)
                continue
            lp = process_logits(logits, history, options, cfg)
            if stream is None:
                token, gap = greedy_choice(lp)
            else:
                token, gap = sampling_choice(lp, options.sampling_topk, options.sampling_topp,
                                             options.sampling_temperature, stream.uniform())
            margin = min(margin, gap)
            score += lp[token].item()
            if token in endings:
                ending = token
                break
            history.append(token)
        length = len(history) + (ending is not None)
        return Hypothesis(history, score, length,
                          length_normalised(score, length, length_penalty),
                          ending is not None, ending), margin

    def decode(self, src_ids, max_len, options=DEFAULT_OPTIONS, sentence_index=0, prefix=(),
               length_penalty=0.0):
        """(ids, score / length^length_penalty, margin): see decode_hypothesis."""
        hypothesis, margin = self.decode_hypothesis(src_ids, max_len, options, sentence_index,
                                                    prefix, length_penalty)
        return hypothesis.tokens, hypothesis.rank, margin

    def _beam_step(self, memory, live, options, endings, beam, finish):
        """One beam step that is not forced: (new live hypotheses, its margin).

        Candidates (h.score + lp[v], h, v) for every lp[v] > -inf, sorted by
        score desc, h asc, v asc, walked until `beam` new live hypotheses; an
        ending candidate finishes (finish(tokens, score, length, token)) only
        if it sorts among the first `beam`.
        """
        vocab = self.config["tgt_vocab_size"]
        rows = self._next_processed(memory, [tokens for tokens, _ in live], options)
        candidates = sorted(((score + rows[h][v], h, v) for h, (_, score) in enumerate(live)
                             for v in range(vocab) if rows[h][v] > -math.inf),
                            key=lambda c: (-c[0], c[1], c[2]))
        new_live = []
        walked = 0
        for position, (score, h, v) in enumerate(candidates):
            if len(new_live) == beam:
                break
            walked = position + 1
            tokens = live[h][0]
            if v not in endings:
                new_live.append((tokens + [v], score))
            elif position < beam:
                finish(tokens, score, len(tokens) + 1, v)
        return new_live, _beam_step_margin(candidates, beam, walked, endings)

    @torch.no_grad()
    def beam_search(self, src_ids, beam, max_len, length_penalty=0.0, n_best=1,
                    options=DEFAULT_OPTIONS, prefix=()):
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

        options (DecodeOptions, no sampling) and prefix: each live
        hypothesis's log-probs are processed (steps 2-6) from its own history;
        a candidate whose log-prob is -inf is left out; the end token, if
        any, ends a hypothesis as eos does. While the hypotheses are shorter
        than prefix, the step is forced: one live hypothesis, the prefix token
        its only candidate, scored with the raw log-prob (no margin).
        """
        cfg = self.config
        limit = min(max_len, cfg["max_positions"] - 1)
        options.check(cfg, beam=beam, max_len=max_len)
        if options.sampling:
            raise ValueError("beam_search does not sample (use decode)")
        endings = options.endings(cfg)
        prefix = list(prefix)
        self._check_prefix(prefix, endings, limit)
        memory = self.encode(src_ids)
        margin = math.inf
        finished = []
        if limit > 0:
            live = [([], 0.0)]
        else:
            live = []
            finished.append(Hypothesis([], 0.0, 0, 0.0, False))

        def finish(tokens, score, length, ending):
            rank = length_normalised(score, length, length_penalty)
            finished.append(Hypothesis(tokens, score, length, rank, ending is not None, ending))
            finished.sort(key=lambda f: -f.rank)

        while live:
            if len(live[0][0]) < len(prefix):
                tokens, score = live[0]
                token = prefix[len(tokens)]
                row = self._next_logprobs(memory, [[cfg["bos_id"]] + tokens], options)[0]
                live = [(tokens + [token], score + row[token])]
            else:
                live, step_margin = self._beam_step(memory, live, options, endings, beam, finish)
                margin = min(margin, step_margin)

            if live and len(live[0][0]) == limit:
                for tokens, score in live:
                    finish(tokens, score, limit, None)
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
    def alignments(self, src_ids, tokens):
        """(source position of each target token, margin), as `tessera translate --alignments`.

        tokens: a hypothesis's target ids (forced prefix included; no bos, no
        ending token). Token j's position is the argmax (the lowest on exact
        ties) of the LAST decoder layer's cross-attention probabilities,
        softmax(q_h . k_h / sqrt(d_head)) averaged over the heads, at query
        position j: the decoder input [bos] + tokens[:j] whose output predicted
        token j. The decoder is causal, so one pass over [bos] + tokens[:-1]
        gives every row. Depends only on the source and the tokens, not on
        the search that produced them.

        margin: the smallest (largest averaged weight - second largest) over
        the tokens; inf for a 1-token source or no tokens. Computed in the
        model's dtype (float64 for the references).
        """
        tokens = list(tokens)
        if not tokens:
            return [], math.inf
        memory = self.encode(src_ids)
        attention = self.transformer.decoder.layers[-1].multihead_attn
        captured = []

        def keep_weights(module, inputs, output):
            # The decoder layer calls multihead_attn(x, memory, memory,
            # need_weights=False) (torch 1.13 passes the three tensors
            # positionally; a forward hook sees no kwargs, and this model
            # never gives a memory mask). Run it again on the same inputs
            # asking for the head-averaged probabilities. forward() is called
            # directly, not module(...), so the hook does not fire again.
            query, key, value = inputs
            _, weights = module.forward(query, key, value, need_weights=True,
                                        average_attn_weights=True)
            captured.append(weights)

        handle = attention.register_forward_hook(keep_weights)
        try:
            self.decode_logits(memory, [self.config["bos_id"]] + tokens[:-1])
        finally:
            handle.remove()
        if len(captured) != 1:
            raise RuntimeError("the last decoder layer's cross-attention ran %d times"
                               % len(captured))
        weights = captured[0][0]   # [batch 1, len(tokens), len(src)] -> [len(tokens), len(src)]
        positions, margin = [], math.inf
        for row in weights.tolist():
            best = max(row)
            positions.append(row.index(best))   # the first (lowest) position holding the max
            if len(row) > 1:
                second = sorted(row)[-2]
                margin = min(margin, best - second)
        return positions, margin


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
    """The tensors docs/model-format.md lets be I8: a linear layer's 2-D weight."""
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


def format_alignment(positions):
    """ALIGN of `--alignments`: `i-j` per target token j (0-based) aligned to source position i."""
    return " ".join("%d-%d" % (i, j) for j, i in enumerate(positions))


def format_nbest(hypotheses, alignments=None):
    """An n-best line as tessera prints it: IDS<TAB>SCORE pairs, TAB separated, best first.

    alignments: None, or one list of source positions per hypothesis
    (Seq2SeqTransformer.alignments); then each hypothesis is
    IDS<TAB>SCORE<TAB>ALIGN (ALIGN empty for an empty hypothesis).
    """
    parts = ["%s\t%.9g" % (" ".join(str(t) for t in h.tokens), h.rank) for h in hypotheses]
    if alignments is not None:
        if len(alignments) != len(hypotheses):
            raise ValueError("one alignment per hypothesis expected")
        for h, positions in zip(hypotheses, alignments):
            if len(positions) != len(h.tokens):
                raise ValueError("one source position per target token expected")
        parts = [part + "\t" + format_alignment(positions)
                 for part, positions in zip(parts, alignments)]
    return "\t".join(parts)


def format_logprobs(values):
    """Log-probabilities as written in the fixtures: 9 significant digits."""
    return " ".join("%.9g" % v for v in values)
