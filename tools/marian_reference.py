"""An independent reference of Marian C++'s transformer, in numpy float64.

Reads a Marian model directory (one *.npz with its "special:model.yml" item,
decoder.yml, the vocabulary *.yml) with Marian's own tensor and option names,
and computes what Marian's legacy transformer (src/models/transformer.h, the
one `type: transformer` builds) computes, written from Marian's sources:

- Encoder: the source ids with </s> appended (Marian's corpus reader adds it,
  src/data/corpus_base.cpp), embeddings times sqrt(dim-emb), plus the sinusoid
  of src/tensors/cpu/tensor_operators.cpp SinusoidalPositionEmbeddings:
  PE[p, i] = sin(p * exp(-(i mod d/2) * ln(10000) / (d/2 - 1))) for i < d/2, cos
  of the same angle for i >= d/2, p from 0.
- Layers: transformer-preprocess ("" or "n": LayerNorm with the "_pre" tensors)
  before each block, transformer-postprocess ("dan": add then LayerNorm; "da":
  add) after it; LayerNorm (x - mean) / sqrt(var + 1e-6) * scale + bias (the
  eps of layerNorm() in src/layers/generic.h); attention softmax(q k^T /
  sqrt(d_head)) v per head, W stored [in, out]; FFN W2 act(W1 x + b1) + b2 with
  swish (x * sigmoid(x)), relu or gelu (x * sigmoid(1.702 x) when model.yml's
  version is below v1.12.3, 0.5 x (1 + erf(x / sqrt 2)) from it: commit
  d225c24d in src/graph/expression_operators.cpp); transformer-postprocess-top
  "n" a final LayerNorm ({encoder,decoder}_top_ln_*).
- transformer-postprocess-emb, applied with preProcess() to embedding +
  position in both stacks: "n" a LayerNorm {encoder,decoder}_emb_ln_*_pre.
- Decoder: the first input is a zero vector (embeddingsFromPrediction /
  embeddingsFromBatch in src/models/decoder.h), so its input is PE[0]; later
  inputs are the previous tokens' embeddings times sqrt(d) plus PE[p].
  Cross-attention reads the encoder output through the decoder_l{i}_context_*
  projections.
- Output: h Wemb^T (tied-embeddings-all), h decoder_Wemb^T (tied-embeddings),
  h decoder_ff_logit_out_W (legacy [d, V]) or h decoder_ff_logit_out_Wt^T
  ([V, d]); plus decoder_ff_logit_out_b unless output-omit-bias.
- Log-softmax over the whole vocabulary; greedy and beam search then set <unk>
  to -inf unless decoder.yml says allow-unk (src/translator/beam_search.cpp,
  suppressWords after LogSoftmaxStep). score applies no ban.

Pre-norm self-attention reads its keys and values from the normalised layer
input (Marian's LayerAttention since 2022, and what teacher-forced scoring
computes). `legacy_prenorm_history=True` instead reproduces Marian's
incremental decoding of pre-norm decoders (DecoderLayerSelfAttention: at step
p > 0 the keys and values are the *unnormalised* inputs of positions 0..p),
to measure how far Marian's own translate output is from its scoring.

The searches (greedy, beam_search) follow tessera's semantics exactly: they
are a port of greedy_with_margin/decode_hypothesis and beam_search/_beam_step
of tools/tessera_torch.py (no options, no prefix), with the same margins,
so that fixtures can drop near-ties. check_search_against_tessera_torch()
runs tessera_torch's own beam_search on this model (needs torch) and compares.

No torch and nothing of the converter or of tessera's tensor names: numpy
and yaml only.
"""

import collections
import glob
import math
import os

import numpy as np
import yaml

META_ITEM = "special:model.yml"
LAYER_NORM_EPS = 1e-6          # src/layers/generic.h layerNorm(): marian::layerNorm(x, scale, bias, 1e-6f)
EOS_PIECE, UNK_PIECE = "</s>", "<unk>"

# A finished hypothesis, as tessera_torch.Hypothesis: length counts the ending
# eos (by_eos); rank is score / length^length_penalty.
Hypothesis = collections.namedtuple("Hypothesis", "tokens score length rank by_eos")
MISSING_HYPOTHESIS = Hypothesis([], -math.inf, 0, -math.inf, False)


def length_normalised(score, length, length_penalty):
    """score / length^length_penalty (plain score when A == 0 or length == 0)."""
    if length_penalty == 0 or length == 0:
        return score
    return score / length ** length_penalty


def format_nbest(hypotheses):
    """IDS<TAB>SCORE pairs joined by TABs, best first (`tessera translate --n-best`)."""
    return "\t".join("%s\t%.9g" % (" ".join(str(t) for t in h.tokens), h.rank) for h in hypotheses)


def format_logprobs(values):
    return " ".join("%.9g" % v for v in values)


# ---- reading Marian's files -------------------------------------------------

def read_yaml_text(text):
    return yaml.safe_load(text) or {}


def read_vocab(path):
    """piece -> id, every key read as the text written (yaml-cpp's as<std::string>)."""
    with open(path, encoding="utf-8") as f:
        raw = yaml.load(f, Loader=yaml.BaseLoader)
    return {piece: int(i) for piece, i in raw.items()}


def ops(options, key, default):
    value = options.get(key, default)
    return "" if value is None else str(value)


def gelu_by_version(version):
    """"sigmoid" or "erf": Marian's gelu() was Expression<SwishNodeOp>(a, 1.702f)
    (x * sigmoid(1.702 x)) until commit d225c24d, which made it GeluNodeOp
    (0.5 x (1 + erf(x / sqrt 2))) and bumped VERSION from v1.12.2 to v1.12.3.
    `version` is model.yml's ("v1.11.0 f00d062 2022-02-08 ..."); no version is
    an error here (the converter asks the user)."""
    parts = str(version or "").split()
    numbers = parts[0].lstrip("v").split(".") if parts else []
    if len(numbers) < 2 or not all(n.isdigit() for n in numbers[:3]):
        raise ValueError("gelu model without a Marian version: pass gelu='sigmoid' or 'erf'")
    key = tuple(int(n) for n in (numbers + ["0"])[:3])
    return "erf" if key >= (1, 12, 3) else "sigmoid"


class TesseraSearch:
    """tessera's score, greedy and beam search over a model's log-probabilities.

    A model class provides encode(src_ids) -> memory, decode_logits(memory,
    tokens) -> logits [len(tokens) + 1, V] of the decoder fed [start] + tokens,
    self.eos, self.banned (ids set to -inf for the search's choices) and
    self.config["max_positions"]. Shared by marian_reference.py and
    opennmt_reference.py, so that both families' fixtures are decided by the
    same port of tools/tessera_torch.py's search."""

    @staticmethod
    def log_softmax(z):
        z = z - z.max(-1, keepdims=True)
        return z - np.log(np.exp(z).sum(-1, keepdims=True))

    def next_logprobs(self, memory, tokens):
        """The search's row after tokens: log-softmax, then the bans set to -inf."""
        row = self.log_softmax(self.decode_logits(memory, tokens)[-1])
        row[self.banned] = -np.inf
        return row

    # ---- what tessera must print -------------------------------------------

    def score(self, src_ids, tgt_ids):
        """Log-probability of each target token then of </s>; no bans."""
        logprobs = self.log_softmax(self.decode_logits(self.encode(src_ids), list(tgt_ids)))
        wanted = list(tgt_ids) + [self.eos]
        return [float(logprobs[i, token]) for i, token in enumerate(wanted)]

    def greedy_with_margin(self, src_ids, max_len):
        """(greedy ids, smallest top-1 minus top-2 gap of the banned log-probs met)."""
        memory = self.encode(src_ids)
        limit = min(max_len, self.config["max_positions"] - 1)
        tokens, margin = [], math.inf
        for _ in range(limit):
            row = self.next_logprobs(memory, tokens)
            token = int(np.argmax(row))
            top2 = np.sort(row)[-2:]
            if top2[0] > -math.inf:
                margin = min(margin, float(top2[1] - top2[0]))
            if token == self.eos:
                break
            tokens.append(token)
        return tokens, margin

    def greedy(self, src_ids, max_len):
        return self.greedy_with_margin(src_ids, max_len)[0]

    # ---- beam search: tools/tessera_torch.py's, ported --------------------

    def _beam_step(self, memory, live, beam, finish):
        """Candidates (h.score + lp[v], h, v) for lp[v] > -inf, sorted by score
        desc, h asc, v asc, walked until `beam` live ones; an eos candidate
        finishes only if it sorts among the first `beam`."""
        rows = [self.next_logprobs(memory, tokens).tolist() for tokens, _ in live]
        vocab = len(rows[0])
        candidates = sorted(((score + rows[h][v], h, v) for h, (_, score) in enumerate(live)
                             for v in range(vocab) if rows[h][v] > -math.inf),
                            key=lambda c: (-c[0], c[1], c[2]))
        new_live, walked = [], 0
        for position, (score, h, v) in enumerate(candidates):
            if len(new_live) == beam:
                break
            walked = position + 1
            tokens = live[h][0]
            if v != self.eos:
                new_live.append((tokens + [v], score))
            elif position < beam:
                finish(tokens, score, len(tokens) + 1, True)
        return new_live, self._beam_step_margin(candidates, beam, walked)

    def _beam_step_margin(self, candidates, beam, walked):
        scores = [c[0] for c in candidates]
        gaps = []
        if len(scores) > beam:
            gaps.append(scores[beam - 1] - scores[beam])
        if 0 < walked < len(scores):
            gaps.append(scores[walked - 1] - scores[walked])
        for position, (score, _, token) in enumerate(candidates):
            if token == self.eos and position < beam and beam < len(scores):
                gaps.append(score - scores[beam])
            elif token == self.eos and position >= beam:
                gaps.append(scores[beam - 1] - score)
        return min(gaps, default=math.inf)

    def beam_search(self, src_ids, beam, max_len, length_penalty=0.0, n_best=1):
        """(the n_best best Hypothesis, best first; margin), as `tessera translate --beam`."""
        limit = min(max_len, self.config["max_positions"] - 1)
        memory = self.encode(src_ids)
        margin, finished = math.inf, []
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
            live, step_margin = self._beam_step(memory, live, beam, finish)
            margin = min(margin, step_margin)
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


class MarianModel(TesseraSearch):
    """A Marian transformer read from its directory, run in float64."""

    def __init__(self, model_dir, legacy_prenorm_history=False, gelu=None):
        npz = sorted(glob.glob(os.path.join(model_dir, "*.npz")))
        if len(npz) != 1:
            raise ValueError("%s: expected one *.npz, found %d" % (model_dir, len(npz)))
        with np.load(npz[0], allow_pickle=False) as archive:
            items = {name: archive[name] for name in archive.files}
        meta = items.pop(META_ITEM).tobytes().split(b"\0")[0].decode("utf-8")
        self.options = read_yaml_text(meta)
        self.w = {name: array.astype(np.float64) for name, array in items.items()}
        with open(os.path.join(model_dir, "decoder.yml"), encoding="utf-8") as f:
            self.decoder_options = read_yaml_text(f.read())
        vocab_paths = [os.path.join(model_dir, v) for v in self.decoder_options["vocabs"]]
        src_vocab, tgt_vocab = read_vocab(vocab_paths[0]), read_vocab(vocab_paths[-1])
        self.src_eos = src_vocab[EOS_PIECE]
        self.eos = tgt_vocab[EOS_PIECE]
        self.unk = tgt_vocab[UNK_PIECE]
        allow_unk = self.decoder_options.get("allow-unk", False) is True
        self.banned = [] if allow_unk else [self.unk]
        o = self.options
        if o.get("type") != "transformer":
            raise ValueError("not a transformer: type %r" % o.get("type"))
        self.dim = int(o["dim-emb"])
        self.heads = int(o["transformer-heads"])
        self.enc_depth = int(o["enc-depth"])
        self.dec_depth = int(o["dec-depth"])
        self.activation = o.get("transformer-ffn-activation", "swish")
        self.pre = ops(o, "transformer-preprocess", "")
        self.post = ops(o, "transformer-postprocess", "dan")
        self.top = ops(o, "transformer-postprocess-top", "")
        self.emb_ops = ops(o, "transformer-postprocess-emb", "d")
        if self.activation == "gelu":
            self.activation = "gelu_" + (gelu or gelu_by_version(o.get("version")))
        if self.activation not in ("swish", "relu", "gelu_sigmoid", "gelu_erf"):
            raise ValueError("activation %r" % self.activation)
        if set(self.pre) - set("dn") or set(self.post) - set("dan") or set(self.top) - set("dn") \
                or set(self.emb_ops) - set("dn"):
            raise ValueError("unsupported pre/postprocess ops")
        tie_all = o.get("tied-embeddings-all", False) or o.get("tied-embeddings-src", False)
        self.src_emb = self.w["Wemb"] if tie_all else self.w["encoder_Wemb"]
        self.tgt_emb = self.w["Wemb"] if tie_all else self.w["decoder_Wemb"]
        if o.get("tied-embeddings", False) or o.get("tied-embeddings-all", False):
            self.out_w = self.tgt_emb.T
        elif "decoder_ff_logit_out_W" in self.w:
            self.out_w = self.w["decoder_ff_logit_out_W"]
        else:
            self.out_w = self.w["decoder_ff_logit_out_Wt"].T
        self.out_b = (np.zeros(self.out_w.shape[1]) if o.get("output-omit-bias", False)
                      else self.w["decoder_ff_logit_out_b"].reshape(-1))
        self.legacy_prenorm_history = legacy_prenorm_history
        # tessera's search reads these (tools/tessera_torch.py beam_search).
        self.config = {"max_positions": 1024, "eos_id": self.eos, "bos_id": None,
                       "tgt_vocab_size": self.out_w.shape[1]}

    # ---- building blocks ----------------------------------------------------

    def positions(self, start, count):
        half = self.dim // 2
        p = np.arange(start, start + count, dtype=np.float64)[:, None]
        i = np.arange(self.dim) % half
        angle = p * np.exp(i * -(math.log(10000.0) / (half - 1)))
        return np.where(np.arange(self.dim) < half, np.sin(angle), np.cos(angle))

    def layer_norm(self, x, prefix, suffix=""):
        scale = self.w[prefix + "_ln_scale" + suffix].reshape(-1)
        bias = self.w[prefix + "_ln_bias" + suffix].reshape(-1)
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return scale * (x - mean) / np.sqrt(var + LAYER_NORM_EPS) + bias

    def preprocess(self, x, prefix):
        for op in self.pre:
            if op == "n":
                x = self.layer_norm(x, prefix, "_pre")
        return x

    def postprocess(self, y, x, prefix, operations=None):
        for op in self.post if operations is None else operations:
            if op == "a":
                y = y + x
            elif op == "n":
                y = self.layer_norm(y, prefix)
        return y

    def affine(self, x, name_w, name_b):
        return x @ self.w[name_w] + self.w[name_b].reshape(-1)

    def multi_head(self, prefix, q_in, kv_in, causal):
        """Marian's MultiHead: q_in [n, d], kv_in [m, d]; causal masks j > i + (m - n)."""
        n, m, h = q_in.shape[0], kv_in.shape[0], self.heads
        dk = self.dim // h
        q = self.affine(q_in, prefix + "_Wq", prefix + "_bq").reshape(n, h, dk).transpose(1, 0, 2)
        k = self.affine(kv_in, prefix + "_Wk", prefix + "_bk").reshape(m, h, dk).transpose(1, 0, 2)
        v = self.affine(kv_in, prefix + "_Wv", prefix + "_bv").reshape(m, h, dk).transpose(1, 0, 2)
        z = q @ k.transpose(0, 2, 1) / math.sqrt(dk)
        if causal:
            allowed = np.arange(m)[None, :] <= np.arange(n)[:, None] + (m - n)
            z = np.where(allowed[None], z, -np.inf)
        z = z - z.max(-1, keepdims=True)
        weights = np.exp(z)
        weights /= weights.sum(-1, keepdims=True)
        out = (weights @ v).transpose(1, 0, 2).reshape(n, self.dim)
        return self.affine(out, prefix + "_Wo", prefix + "_bo")

    def attention_block(self, prefix, x, memory=None, causal=False):
        """LayerAttention: self-attention (memory None; keys/values the
        normalised input) or cross-attention over memory."""
        normed = self.preprocess(x, prefix + "_Wo")
        kv = normed if memory is None else memory
        return self.postprocess(self.multi_head(prefix, normed, kv, causal), x, prefix + "_Wo")

    def ffn_block(self, prefix, x):
        normed = self.preprocess(x, prefix + "_ffn")
        hidden = self.affine(normed, prefix + "_W1", prefix + "_b1")
        if self.activation == "relu":
            hidden = np.maximum(hidden, 0.0)
        elif self.activation == "gelu_erf":
            hidden = 0.5 * hidden * (1.0 + np.vectorize(math.erf)(hidden / math.sqrt(2.0)))
        elif self.activation == "gelu_sigmoid":
            hidden = hidden / (1.0 + np.exp(-1.702 * hidden))
        else:
            hidden = hidden / (1.0 + np.exp(-hidden))
        out = self.affine(hidden, prefix + "_W2", prefix + "_b2")
        return self.postprocess(out, x, prefix + "_ffn")

    def embedding_ops(self, x, stack):
        """transformer-postprocess-emb, applied by preProcess(): 'n' is the
        LayerNorm {stack}_emb_ln_{scale,bias}_pre; 'd' is dropout (nothing)."""
        for op in self.emb_ops:
            if op == "n":
                x = self.layer_norm(x, stack + "_emb", "_pre")
        return x

    def top_norm(self, x, stack):
        for op in self.top:
            if op == "n":
                x = self.layer_norm(x, stack + "_top")
        return x

    # ---- encoder and decoder ------------------------------------------------

    def encode(self, src_ids):
        """Encoder output [len(src) + 1, d]: the source with </s> appended."""
        ids = list(src_ids) + [self.src_eos]
        x = self.src_emb[ids] * math.sqrt(self.dim) + self.positions(0, len(ids))
        x = self.embedding_ops(x, "encoder")
        for i in range(1, self.enc_depth + 1):
            x = self.attention_block("encoder_l%d_self" % i, x)
            x = self.ffn_block("encoder_l%d_ffn" % i, x)
        return self.top_norm(x, "encoder")

    def decoder_inputs(self, tokens):
        """Embeddings of [start] + tokens: a zero vector first, then scaled rows; plus PE."""
        x = np.zeros((len(tokens) + 1, self.dim))
        if tokens:
            x[1:] = self.tgt_emb[list(tokens)] * math.sqrt(self.dim)
        return self.embedding_ops(x + self.positions(0, len(tokens) + 1), "decoder")

    def decode_logits(self, memory, tokens):
        """Logits [len(tokens) + 1, V] of the decoder fed [start] + tokens (causal)."""
        if self.legacy_prenorm_history and self.pre:
            return self._decode_incremental(memory, tokens)
        x = self.decoder_inputs(tokens)
        for i in range(1, self.dec_depth + 1):
            x = self.attention_block("decoder_l%d_self" % i, x, causal=True)
            x = self.attention_block("decoder_l%d_context" % i, x, memory=memory)
            x = self.ffn_block("decoder_l%d_ffn" % i, x)
        return self.top_norm(x, "decoder") @ self.out_w + self.out_b

    def _decode_incremental(self, memory, tokens):
        """Marian's step-by-step decoding: position p's self-attention keys and
        values are the layer inputs of positions 0..p, normalised only at p == 0
        (DecoderLayerSelfAttention + LayerAttention's `input == keys` test)."""
        inputs = self.decoder_inputs(tokens)
        history = [[] for _ in range(self.dec_depth)]
        rows = []
        for p in range(len(tokens) + 1):
            x = inputs[p:p + 1]
            for i in range(1, self.dec_depth + 1):
                prefix = "decoder_l%d_self" % i
                history[i - 1].append(x)
                normed = self.preprocess(x, prefix + "_Wo")
                kv = normed if p == 0 else np.concatenate(history[i - 1])
                x = self.postprocess(self.multi_head(prefix, normed, kv, False), x, prefix + "_Wo")
                x = self.attention_block("decoder_l%d_context" % i, x, memory=memory)
                x = self.ffn_block("decoder_l%d_ffn" % i, x)
            rows.append(self.top_norm(x, "decoder") @ self.out_w + self.out_b)
        return np.concatenate(rows)

def check_search_against_tessera_torch(model, sources, beam, max_len, length_penalty, n_best):
    """Runs tools/tessera_torch.py's own beam_search on `model` (its _beam_step
    and beam_search functions, fed this model's banned log-prob rows) and
    raises AssertionError where the port above differs. Needs torch; returns
    False when torch is not installed."""
    try:
        import tessera_torch as tt
    except ImportError:
        return False

    class Borrowed:
        config = dict(model.config, bos_id=-1)
        encode = staticmethod(model.encode)
        _check_prefix = tt.Seq2SeqTransformer._check_prefix
        _beam_step = tt.Seq2SeqTransformer._beam_step
        beam_search = tt.Seq2SeqTransformer.beam_search

        def _next_processed(self, memory, histories, options):
            return [model.next_logprobs(memory, list(h)).tolist() for h in histories]

    theirs_model = Borrowed()
    for src in sources:
        ours, our_margin = model.beam_search(src, beam, max_len, length_penalty, n_best)
        theirs, their_margin = theirs_model.beam_search(src, beam, max_len, length_penalty, n_best)
        assert [(h.tokens, h.score, h.rank, h.by_eos) for h in ours] == \
               [(h.tokens, h.score, h.rank, h.by_eos) for h in theirs], src
        assert our_margin == their_margin, (src, our_margin, their_margin)
    return True
