#!/usr/bin/python3
"""Self-test of the reference model in tessera_torch.py.

The golden fixtures and check-against-torch are only as good as the
reference, so it is checked three independent ways:
  1. against a plain numpy forward pass written from docs/model-format.md's words
     (post/pre-norm order, final norms, q/k/v stacking, sinusoid formula);
  2. against nn.Transformer called directly on a padded batch with key
     padding masks (a different code path through torch than score());
  3. greedy output against one teacher-forced pass over its own output
     (each emitted token must be the argmax at its position).
Also a safetensors round trip, tools/tessera-convert (round trip and its
error messages), and the fixtures under tests/golden/ re-derived
from their files with the numpy forward pass (so a fault in writing, rounding
or formatting them shows up).

The decoding options (sampling, target prefix, constraints: DecodeOptions,
decode_hypothesis, beam_search's options) are checked against a second,
numpy implementation of their specification (SplitMix64 as published, the
processors, the sampling choice, a decode loop and a beam search over the
numpy forward pass), and by their properties: top-k 1 is the argmax, sampled
tokens stay within the top K / the nucleus and their frequencies follow the
tempered distribution, prefixes come first and score raw log-probs, no
output breaks --min-len, --no-repeat-ngram or --disable-unk, the end token
ends. The options/ fixtures are re-derived with the numpy version.

The alignments of --alignments (Seq2SeqTransformer.alignments) are checked
against the numpy forward pass's last-layer cross-attention weights
(np_alignments); planted bugs (first layer, max over heads, a target position
off by one, no 1/sqrt(d_head)) must each be told apart; format_nbest's ALIGN
field is checked against the documented format, and the align-* fixtures'
ALIGN fields are re-derived with numpy.
Run: /usr/bin/python3 tools/test_tessera_torch.py
"""

import collections
import dataclasses
import json
import math
import os
import subprocess
import sys
import tempfile

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import torch  # noqa: E402

import tessera_torch as tt  # noqa: E402

CONFIGS = [
    # (config, pos_table_rows, final_norms)
    (dict(d_model=24, n_heads=3, d_ff=40, n_encoder_layers=2, n_decoder_layers=2,
          src_vocab_size=31, tgt_vocab_size=37, max_positions=64), 70, True),
    (dict(d_model=36, n_heads=6, d_ff=52, n_encoder_layers=1, n_decoder_layers=3,
          src_vocab_size=29, tgt_vocab_size=23, activation="gelu", norm_first=True,
          scale_embedding=False, bos_id=5, eos_id=6, pad_id=0, unk_id=1), None, False),
    (dict(d_model=20, n_heads=4, d_ff=33, n_encoder_layers=3, n_decoder_layers=2,
          src_vocab_size=41, tgt_vocab_size=43, activation="silu", max_positions=40), None, True),
    (dict(d_model=28, n_heads=4, d_ff=44, n_encoder_layers=2, n_decoder_layers=1,
          src_vocab_size=33, tgt_vocab_size=35, layer_norm_form="std", layer_norm_eps=1e-2),
     None, True),
    (dict(d_model=32, n_heads=4, d_ff=48, n_encoder_layers=1, n_decoder_layers=2,
          src_vocab_size=27, tgt_vocab_size=29, activation="gelu", norm_first=True,
          layer_norm_form="std_unbiased", layer_norm_eps=1e-2), None, True),
]


# ---- numpy forward pass from docs/model-format.md ---------------------------------

def np_layer_norm(x, w, b, eps, form="variance"):
    mean = x.mean(-1, keepdims=True)
    squares = ((x - mean) ** 2).sum(-1, keepdims=True)
    n = x.shape[-1]
    if form == "std":
        denominator = np.sqrt(squares / n) + eps
    elif form == "std_unbiased":
        denominator = np.sqrt(squares / (n - 1)) + eps
    else:
        denominator = np.sqrt(squares / n + eps)
    return (x - mean) / denominator * w + b


def np_activation(name, x):
    if name == "relu":
        return np.maximum(x, 0.0)
    if name == "gelu":
        return 0.5 * x * (1.0 + np.vectorize(math.erf)(x / math.sqrt(2.0)))
    return x / (1.0 + np.exp(-x))


def np_attention(W, prefix, xq, xkv, n_heads, causal):
    d = xq.shape[1]
    w_in, b_in = W[prefix + "in_proj_weight"], W[prefix + "in_proj_bias"]
    q = xq @ w_in[:d].T + b_in[:d]
    k = xkv @ w_in[d : 2 * d].T + b_in[d : 2 * d]
    v = xkv @ w_in[2 * d :].T + b_in[2 * d :]
    dh = d // n_heads
    out = np.zeros_like(q)
    for h in range(n_heads):
        cols = slice(h * dh, (h + 1) * dh)
        s = q[:, cols] @ k[:, cols].T / math.sqrt(dh)
        if causal:
            s = np.where(np.triu(np.ones_like(s, dtype=bool), 1), -np.inf, s)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        out[:, cols] = p @ v[:, cols]
    return out @ W[prefix + "out_proj.weight"].T + W[prefix + "out_proj.bias"]


def np_ffn(W, prefix, x, activation):
    h = np_activation(activation, x @ W[prefix + "linear1.weight"].T + W[prefix + "linear1.bias"])
    return h @ W[prefix + "linear2.weight"].T + W[prefix + "linear2.bias"]


def np_sublayer(W, norm, x, f, cfg):
    """Post-norm LN(x + f(x)) or pre-norm x + f(LN(x))."""
    ln = lambda y: np_layer_norm(y, W[norm + ".weight"], W[norm + ".bias"], cfg["layer_norm_eps"],
                                 cfg["layer_norm_form"])
    return x + f(ln(x)) if cfg["norm_first"] else ln(x + f(x))


def np_embed(W, cfg, name, ids):
    x = W[name][ids] * (math.sqrt(cfg["d_model"]) if cfg["scale_embedding"] else 1.0)
    table = W.get("positional_encoding.pos_embedding")
    if table is not None:
        return x + table[: len(ids), 0, :]
    d = cfg["d_model"]
    pe = np.zeros((len(ids), d))
    for p in range(len(ids)):
        for i in range(0, d, 2):
            pe[p, i] = math.sin(p / 10000 ** (i / d))
            if i + 1 < d:
                pe[p, i + 1] = math.cos(p / 10000 ** (i / d))
    return x + pe


def np_final_norm(W, name, x, cfg):
    if name + ".weight" not in W:
        return x
    return np_layer_norm(x, W[name + ".weight"], W[name + ".bias"], cfg["layer_norm_eps"],
                         cfg["layer_norm_form"])


def np_encode(W, cfg, src):
    """[len(src), d_model]: the encoder's output, after its final norm if any."""
    heads, act = cfg["n_heads"], cfg["activation"]
    x = np_embed(W, cfg, "src_tok_emb.embedding.weight", src)
    for i in range(cfg["n_encoder_layers"]):
        p = "transformer.encoder.layers.%d." % i
        x = np_sublayer(W, p + "norm1", x,
                        lambda y: np_attention(W, p + "self_attn.", y, y, heads, False), cfg)
        x = np_sublayer(W, p + "norm2", x, lambda y: np_ffn(W, p, y, act), cfg)
    return np_final_norm(W, "transformer.encoder.norm", x, cfg)


def np_logprobs(W, cfg, src, tgt_in):
    """[len(tgt_in), tgt_vocab] log-probabilities."""
    logits = np_logits(W, cfg, np_encode(W, cfg, src), tgt_in)
    logits -= logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


def np_logits(W, cfg, memory, tgt_in):
    """[len(tgt_in), tgt_vocab] generator logits, given the encoder's output."""
    heads, act = cfg["n_heads"], cfg["activation"]
    x = np_embed(W, cfg, "tgt_tok_emb.embedding.weight", tgt_in)
    for i in range(cfg["n_decoder_layers"]):
        p = "transformer.decoder.layers.%d." % i
        x = np_sublayer(W, p + "norm1", x,
                        lambda y: np_attention(W, p + "self_attn.", y, y, heads, True), cfg)
        x = np_sublayer(W, p + "norm2", x,
                        lambda y: np_attention(W, p + "multihead_attn.", y, memory, heads, False), cfg)
        x = np_sublayer(W, p + "norm3", x, lambda y: np_ffn(W, p, y, act), cfg)
    x = np_final_norm(W, "transformer.decoder.norm", x, cfg)
    return x @ W["generator.weight"].T + W["generator.bias"]


def np_cross_attention_weights(W, cfg, memory, tgt_in, layer=-1, reduce="mean", scaled=True):
    """[len(tgt_in), len(memory)]: a decoder layer's cross-attention probabilities, reduced
    over the heads (mean: what `--alignments` uses).

    The decoder is run as in np_logits up to that layer; the query input is
    what its cross-attention sublayer is given (after norm2 when pre-norm).
    layer, reduce ("mean" or "max") and scaled (divide by sqrt(d_head)) exist
    to plant bugs: the alignments are the last layer, mean, scaled.
    """
    heads, act = cfg["n_heads"], cfg["activation"]
    wanted = layer % cfg["n_decoder_layers"]
    x = np_embed(W, cfg, "tgt_tok_emb.embedding.weight", tgt_in)
    for i in range(wanted + 1):
        p = "transformer.decoder.layers.%d." % i
        x = np_sublayer(W, p + "norm1", x,
                        lambda y: np_attention(W, p + "self_attn.", y, y, heads, True), cfg)
        queries = []

        def cross(y):
            queries.append(y)
            return np_attention(W, p + "multihead_attn.", y, memory, heads, False)
        x = np_sublayer(W, p + "norm2", x, cross, cfg)
        x = np_sublayer(W, p + "norm3", x, lambda y: np_ffn(W, p, y, act), cfg)
    d = cfg["d_model"]
    prefix = "transformer.decoder.layers.%d.multihead_attn." % wanted
    w_in, b_in = W[prefix + "in_proj_weight"], W[prefix + "in_proj_bias"]
    q = queries[0] @ w_in[:d].T + b_in[:d]
    k = memory @ w_in[d : 2 * d].T + b_in[d : 2 * d]
    dh = d // heads
    probs = []
    for h in range(heads):
        cols = slice(h * dh, (h + 1) * dh)
        s = q[:, cols] @ k[:, cols].T / (math.sqrt(dh) if scaled else 1.0)
        e = np.exp(s - s.max(-1, keepdims=True))
        probs.append(e / e.sum(-1, keepdims=True))
    return np.mean(probs, axis=0) if reduce == "mean" else np.max(probs, axis=0)


def np_alignments(W, cfg, src, tokens, shift=0, **bug):
    """(source positions, per-token margins) of `--alignments` for target tokens.

    Token j: the argmax (np.argmax: the first maximum) of row j of the
    cross-attention weights over [bos] + tokens (causal, so row j only sees
    [bos] + tokens[:j]); margin: largest - second largest (inf for one source
    token). shift and bug (np_cross_attention_weights's layer, reduce,
    scaled) plant bugs: shift 1 reads the row of the next position.
    """
    if not tokens:
        return [], []
    weights = np_cross_attention_weights(W, cfg, np_encode(W, cfg, src),
                                         [cfg["bos_id"]] + list(tokens), **bug)
    positions, margins = [], []
    for j in range(len(tokens)):
        row = weights[min(j + shift, len(tokens))]
        positions.append(int(np.argmax(row)))
        top2 = np.sort(row)[-2:]
        margins.append(top2[1] - top2[0] if len(row) > 1 else math.inf)
    return positions, margins


# ---- the checks -------------------------------------------------------------

def build(index, seed):
    cfg, rows, final_norms = CONFIGS[index]
    torch.manual_seed(seed)
    model = tt.Seq2SeqTransformer(cfg, pos_table_rows=rows, final_norms=final_norms)
    tt.perturb_for_testing(model)
    return model.double()


def random_ids(rng, vocab, lo, hi):
    return [int(t) for t in rng.integers(0, vocab, size=int(rng.integers(lo, hi + 1)))]


def check_against_numpy(failures):
    rng = np.random.default_rng(1)
    for index in range(len(CONFIGS)):
        model = build(index, 10 + index)
        cfg = model.config
        W = {k: v.numpy() for k, v in model.state_dict().items()}
        worst = 0.0
        for _ in range(4):
            src = random_ids(rng, cfg["src_vocab_size"], 1, 15)
            tgt = random_ids(rng, cfg["tgt_vocab_size"], 0, 15)
            got = model.score(src, tgt)
            lp = np_logprobs(W, cfg, src, [cfg["bos_id"]] + tgt)
            want = [lp[i, t] for i, t in enumerate(tgt + [cfg["eos_id"]])]
            worst = max(worst, max(abs(a - b) for a, b in zip(got, want)))
        report(failures, "score vs numpy, config %d" % index, worst, 1e-10)


def check_against_padded_batch(failures):
    """nn.Transformer forward on a padded batch with padding masks, float32 mask form."""
    rng = np.random.default_rng(2)
    for index in range(len(CONFIGS)):
        model = build(index, 20 + index)
        cfg = model.config
        pairs = [(random_ids(rng, cfg["src_vocab_size"], 1, 12),
                  random_ids(rng, cfg["tgt_vocab_size"], 0, 12)) for _ in range(3)]
        s_len = max(len(s) for s, _ in pairs)
        t_len = max(len(t) for _, t in pairs) + 1
        src = torch.full((s_len, len(pairs)), cfg["pad_id"], dtype=torch.long)
        tgt = torch.full((t_len, len(pairs)), cfg["pad_id"], dtype=torch.long)
        src_pad = torch.ones(len(pairs), s_len, dtype=torch.bool)
        tgt_pad = torch.ones(len(pairs), t_len, dtype=torch.bool)
        for b, (s, t) in enumerate(pairs):
            src[: len(s), b] = torch.tensor(s)
            tgt[: len(t) + 1, b] = torch.tensor([cfg["bos_id"]] + t)
            src_pad[b, : len(s)] = False
            tgt_pad[b, : len(t) + 1] = False
        causal = torch.nn.Transformer.generate_square_subsequent_mask(t_len).double()
        with torch.no_grad():
            out = model.transformer(
                model.positional_encoding(model.src_tok_emb(src)),
                model.positional_encoding(model.tgt_tok_emb(tgt)),
                tgt_mask=causal, src_key_padding_mask=src_pad,
                tgt_key_padding_mask=tgt_pad, memory_key_padding_mask=src_pad)
            lp = torch.log_softmax(model.generator(out), dim=-1)
        worst = 0.0
        for b, (s, t) in enumerate(pairs):
            want = [lp[i, b, tok].item() for i, tok in enumerate(t + [cfg["eos_id"]])]
            got = model.score(s, t)
            worst = max(worst, max(abs(x - y) for x, y in zip(got, want)))
        report(failures, "score vs padded nn.Transformer batch, config %d" % index, worst, 1e-10)


def check_greedy_consistency(failures):
    rng = np.random.default_rng(3)
    for index in range(len(CONFIGS)):
        model = build(index, 30 + index)
        cfg = model.config
        bad = 0
        ended = 0
        for _ in range(6):
            src = random_ids(rng, cfg["src_vocab_size"], 1, 15)
            out, margin = model.greedy_with_margin(src, 12)
            if margin < 1e-6:
                continue
            with torch.no_grad():
                logits = model.decode_logits(model.encode(src), [cfg["bos_id"]] + out)
            expect = out + ([cfg["eos_id"]] if len(out) < 12 else [])
            ended += len(out) < 12
            picked = torch.argmax(logits, dim=-1).tolist()[: len(expect)]
            bad += picked != expect
        report(failures, "greedy vs one teacher-forced pass, config %d (%d ended by eos)"
               % (index, ended), float(bad), 0.0)


def check_safetensors_round_trip(failures):
    model = build(0, 40)
    for dtype in ("F32", "F16", "BF16"):
        with tempfile.TemporaryDirectory() as tmp:
            path = os.path.join(tmp, "m.safetensors")
            tt.write_safetensors(path, model.state_dict(), dtype, metadata={"format": "pt"})
            with open(path, "rb") as f:
                header_len = int.from_bytes(f.read(8), "little")
            back = tt.read_safetensors(path)
        worst = 0.0
        for name, tensor in model.state_dict().items():
            rounded = tensor.to(tt.TORCH_DTYPES[dtype]).to(torch.float32)
            if back[name].shape != tensor.shape:
                worst = math.inf
            else:
                worst = max(worst, (back[name] - rounded).abs().max().item())
        if header_len % 8 or set(back) != set(model.state_dict()):
            worst = math.inf
        report(failures, "safetensors round trip %s" % dtype, worst, 0.0)


def run_convert(args):
    tool = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tessera-convert")
    return subprocess.run([sys.executable, tool] + args, capture_output=True, text=True)


def check_converter(failures):
    """A checkpoint in, the same model (after rounding) out; bad input named in one line."""
    model = build(1, 50).float()
    hparams = {"nhead": 6, "activation": "gelu", "norm_first": True, "scale_embedding": False,
               "layer_norm_eps": 1e-5, "bos_id": 5, "eos_id": 6, "pad_id": 0, "unk_id": 1, "lr": 0.5}
    with tempfile.TemporaryDirectory() as tmp:
        checkpoint = os.path.join(tmp, "model.pt")
        torch.save({"state_dict": model.state_dict(), "hparams": hparams}, checkpoint)
        out_dir = os.path.join(tmp, "out")
        run = run_convert([checkpoint, out_dir, "--dtype", "bf16"])
        worst = math.inf
        if run.returncode == 0:
            back = tt.load_model_dir(out_dir).double()
            tt.round_weights(model, "BF16")
            reference = model.double()
            worst = 0.0 if back.config == reference.config else math.inf
            for src, tgt in (([3, 4, 0, 9], [1, 2, 0]), ([7], [])):
                got, want = back.score(src, tgt), reference.score(src, tgt)
                worst = max(worst, max(abs(a - b) for a, b in zip(got, want)))
        report(failures, "tessera-convert round trip (bf16)", worst, 1e-12)

        for kind in ("int8", "bf16"):
            model = build(1, 50).float()
            torch.save({"state_dict": model.state_dict(), "hparams": hparams}, checkpoint)
            run = run_convert([checkpoint, out_dir, "--quantize", kind])
            worst = math.inf
            if run.returncode == 0:
                back = tt.load_model_dir(out_dir).double()
                with torch.no_grad():  # the values the file holds, computed independently
                    for name, tensor in model.state_dict().items():
                        if not tt.is_linear_weight(name, tensor.shape):
                            continue
                        if kind == "bf16":
                            tensor.copy_(tensor.to(torch.bfloat16).to(torch.float32))
                            continue
                        amax = tensor.abs().amax(dim=1, keepdim=True)
                        scale = torch.where(amax > 0, amax / 127.0, torch.ones_like(amax))
                        q = torch.clamp(torch.round(tensor / scale), -127, 127)
                        tensor.copy_(q * scale)
                reference = model.double()
                worst = 0.0 if back.config == reference.config else math.inf
                for src, tgt in (([3, 4, 0, 9], [1, 2, 0]), ([7], [])):
                    got, want = back.score(src, tgt), reference.score(src, tgt)
                    worst = max(worst, max(abs(a - b) for a, b in zip(got, want)))
            report(failures, "tessera-convert --quantize %s round trip" % kind, worst, 1e-12)

        bad_cases = {  # tensor name -> replacement (None: left out)
            "transformer.decoder.layers.2.norm3.bias": None,
            "transformer.encoder.layers.0.linear2.weight": torch.zeros(36, 53),
        }
        for name, replacement in bad_cases.items():
            state = dict(model.state_dict())
            if replacement is None:
                del state[name]
            else:
                state[name] = replacement
            torch.save(state, checkpoint)
            run = run_convert([checkpoint, out_dir, "--n-heads", "6"])
            last = run.stderr.strip().splitlines()[-1] if run.stderr.strip() else ""
            ok = run.returncode == 1 and name in last and "Traceback" not in run.stderr
            report(failures, "tessera-convert names %s" % name, 0.0 if ok else 1.0, 0.0)
        run = run_convert([checkpoint, out_dir])
        ok = run.returncode == 1 and "n_heads" in run.stderr
        report(failures, "tessera-convert asks for n_heads", 0.0 if ok else 1.0, 0.0)


def np_greedy(W, cfg, src, max_len):
    """Greedy ids and smallest top-1 minus top-2 log-prob gap, re-running the whole prefix."""
    prefix = [cfg["bos_id"]]
    margin = math.inf
    for _ in range(min(max_len, cfg["max_positions"] - 1)):
        last = np_logprobs(W, cfg, src, prefix)[-1]
        top2 = np.sort(last)[-2:]
        margin = min(margin, top2[1] - top2[0])
        token = int(np.argmax(last))
        if token == cfg["eos_id"]:
            break
        prefix.append(token)
    return prefix[1:], margin


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def fixture_sentences(directory, cfg, tokens):
    """Parses inputs as tessera would: ids, or tokens through the vocab files."""
    if not tokens:
        return lambda text, side: [int(t) for t in text.split()]
    vocabs = {}
    for side in ("src", "tgt"):
        tokens = read_lines(os.path.join(directory, "vocab.%s.txt" % side))
        vocabs[side] = {token: i for i, token in enumerate(tokens)}
    return lambda text, side: [vocabs[side].get(t, cfg["unk_id"]) for t in text.split()]


def fixture_score_error(directory, suffix, W, cfg, parse):
    """Largest relative difference between numpy and score<suffix>.expected (9 digits)."""
    worst = 0.0
    for line, expected in zip(read_lines(os.path.join(directory, "score%s.in" % suffix)),
                              read_lines(os.path.join(directory, "score%s.expected" % suffix))):
        src_text, tgt_text = line.split("\t")
        src, tgt = parse(src_text, "src"), parse(tgt_text, "tgt")
        lp = np_logprobs(W, cfg, src, [cfg["bos_id"]] + tgt)
        want = [float(v) for v in expected.split()]
        got = [lp[i, t] for i, t in enumerate(tgt + [cfg["eos_id"]])]
        if len(got) != len(want):
            return math.inf
        worst = max([worst] + [abs(a - b) / max(1.0, abs(b)) for a, b in zip(got, want)])
    return worst


def fixture_translate_errors(directory, suffix, W, cfg, parse, max_len):
    """Sentences of translate<suffix>.expected that numpy greedy disagrees with or finds near a tie."""
    tgt_vocab = read_lines(os.path.join(directory, "vocab.tgt.txt")) if suffix else None
    wrong = 0
    for line, expected in zip(read_lines(os.path.join(directory, "translate%s.in" % suffix)),
                              read_lines(os.path.join(directory, "translate%s.expected" % suffix))):
        out, margin = np_greedy(W, cfg, parse(line, "src"), max_len)
        text = " ".join(tgt_vocab[t] if tgt_vocab else str(t) for t in out)
        wrong += text != expected or margin < 1e-3
    return wrong


def fixture_encode_error(directory, W, cfg):
    """Worst |got - numpy| / (1 + |numpy|) over encode.expected."""
    source = "encode.in" if os.path.exists(os.path.join(directory, "encode.in")) else "translate.in"
    sentences = [[int(t) for t in line.split()] for line in read_lines(os.path.join(directory, source))]
    expected = read_lines(os.path.join(directory, "encode.expected"))
    if len(sentences) != len(expected):
        return math.inf
    worst = 0.0
    for ids, line in zip(sentences, expected):
        want = np_encode(W, cfg, ids).reshape(-1)
        got = np.array([float(v) for v in line.split()])
        if got.shape != want.shape:
            return math.inf
        worst = max(worst, float(np.max(np.abs(got - want) / (1 + np.abs(want)))))
    return worst


def check_golden_fixtures(failures, root, max_len=20):
    for name in sorted(os.listdir(root)):
        directory = os.path.join(root, name)
        if not os.path.isfile(os.path.join(directory, "config.json")):
            continue  # families/ and options/: fixtures of their own, checked elsewhere
        with open(os.path.join(directory, "config.json")) as f:
            given = json.load(f)
        # An encoder alone has no target side: full_config's defaults fill in
        # a placeholder target vocabulary that nothing reads.
        cfg = tt.full_config(dict({"tgt_vocab_size": 1}, **given))
        stored = tt.read_safetensors(os.path.join(directory, "model.safetensors"))
        W = {k: v.double().numpy() for k, v in stored.items()}
        report(failures, "fixture %s encode (relative)" % name,
               fixture_encode_error(directory, W, cfg), 1e-8)
        if cfg["n_decoder_layers"] == 0:
            continue
        for suffix in ("", ".tokens"):
            if not os.path.exists(os.path.join(directory, "score%s.in" % suffix)):
                continue
            parse = fixture_sentences(directory, cfg, suffix == ".tokens")
            report(failures, "fixture %s score%s (relative)" % (name, suffix),
                   fixture_score_error(directory, suffix, W, cfg, parse), 1e-8)
            report(failures, "fixture %s translate%s (sentences wrong or near-tie)" % (name, suffix),
                   float(fixture_translate_errors(directory, suffix, W, cfg, parse, max_len)), 0.0)
        if os.path.isdir(os.path.join(directory, "options")):
            wrong, worst, cases = fixture_option_errors(directory, W, cfg)
            report(failures, "fixture %s options, %d cases (lines wrong or near-tie)"
                   % (name, cases), float(wrong) if cases else math.inf, 0.0)
            report(failures, "fixture %s options (scores, relative)" % name, worst, 1e-8)


# ---- decoding options: an independent numpy version of the specification ----
#
# Written again from the specification (SplitMix64 as published, vectorised
# numpy processors and sampling, its own decode loop and beam search over the
# numpy forward pass), so that a slip in tessera_torch.py's version shows up.

SPLITMIX_GAMMA = 0x9E3779B97F4A7C15
SPLITMIX_PUBLISHED = (1234567, [6457827717110365317, 3203168211198807973, 9817491932198370423])


def np_splitmix(state, count):
    """SplitMix64 as published: state += gamma, then the output function."""
    outputs = []
    for _ in range(count):
        state = (state + SPLITMIX_GAMMA) % 2 ** 64
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) % 2 ** 64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) % 2 ** 64
        outputs.append(z ^ (z >> 31))
    return outputs


class NpStream:
    """The random stream of a sentence, as a SplitMix64 generator from state key."""

    def __init__(self, seed, index):
        self.state = np_mix(seed ^ np_mix(index + SPLITMIX_GAMMA))

    def uniform(self):
        self.state = (self.state + SPLITMIX_GAMMA) % 2 ** 64
        return (np_mix(self.state) >> 11) / 2.0 ** 53


def np_mix(z):
    """SplitMix64's output function (the generator's state taken as z - gamma)."""
    return np_splitmix((z - SPLITMIX_GAMMA) % 2 ** 64, 1)[0]


def np_process(z, history, o, cfg):
    """Steps 2-6 in numpy: processed log-probs of a logit row."""
    z = np.array(z, dtype=np.float64)
    if o.repetition_penalty != 1:
        for t in set(history):
            z[t] = z[t] * o.repetition_penalty if z[t] < 0 else z[t] / o.repetition_penalty
    n = o.no_repeat_ngram
    if n > 0 and len(history) >= n - 1:
        followers = {}
        for j in range(len(history) - n + 1):
            followers.setdefault(tuple(history[j:j + n - 1]), set()).add(history[j + n - 1])
        last = tuple(history[len(history) - n + 1:]) if n > 1 else ()
        for t in followers.get(last, ()):
            z[t] = -np.inf
    if o.disable_unk:
        z[cfg["unk_id"]] = -np.inf
    if len(history) < o.min_len:
        z[[cfg["eos_id"]] + ([o.end_token] if o.end_token is not None else [])] = -np.inf
    finite = np.isfinite(z)
    top = z[finite].max()
    lp = np.full_like(z, -np.inf)
    lp[finite] = z[finite] - (top + np.log(np.exp(z[finite] - top).sum()))
    return lp


def np_normalise(z):
    z = z - z.max()
    return z - np.log(np.exp(z).sum())


def np_sample(lp, k, p, temperature, u):
    """(token, margin) of the sampling choice, vectorised: cumsum for the running sums."""
    lp = np.asarray(lp, dtype=np.float64)
    cand = np.flatnonzero(lp > -np.inf)
    order = cand[np.lexsort((cand, -lp[cand]))]
    gaps = []
    if 0 < k < len(order):
        gaps.append(lp[order[k - 1]] - lp[order[k]])
        order = order[:k]
    w = np.exp((lp[order] - lp[order[0]]) / temperature)
    if p < 1:
        running = np.cumsum(w)
        total = running[-1]
        cut = int(np.argmax(running >= p * total))
        gaps += [p - (running[cut - 1] if cut else 0.0) / total, running[cut] / total - p]
        if cut + 1 < len(order):
            gaps.append(lp[order[cut]] - lp[order[cut + 1]])
        order, w = order[: cut + 1], w[: cut + 1]
    by_id = np.argsort(order)
    kept, w = order[by_id], w[by_id]
    running = np.cumsum(w)
    target = u * running[-1]
    pos = int(np.searchsorted(running, target, side="right"))
    if pos == len(kept):
        return int(kept[-1]), 0.0
    if pos > 0:
        gaps.append((target - running[pos - 1]) / running[-1])
    if pos < len(kept) - 1:
        gaps.append((running[pos] - target) / running[-1])
    return int(kept[pos]), min(gaps, default=math.inf)


def np_endings(o, cfg):
    return {cfg["eos_id"]} | ({o.end_token} if o.end_token is not None else set())


def np_decode(W, cfg, src, max_len, o, index, prefix=(), length_penalty=0.0):
    """(ids, score over length^A, ending token or None, margin): beam 1, greedy or sampling."""
    memory = np_encode(W, cfg, src)
    stream = NpStream(o.seed, index)
    out, score, margin = [], 0.0, math.inf
    for _ in range(min(max_len, cfg["max_positions"] - 1)):
        z = np_logits(W, cfg, memory, [cfg["bos_id"]] + out)[-1]
        if len(out) < len(prefix):
            out.append(prefix[len(out)])
            score += np_normalise(z)[out[-1]]
            continue
        lp = np_process(z, out, o, cfg)
        if o.sampling_topk != 1:
            token, gap = np_sample(lp, o.sampling_topk, o.sampling_topp,
                                   o.sampling_temperature, stream.uniform())
        else:
            token = int(np.argmax(lp))
            top2 = np.sort(lp)[-2:]
            gap = top2[1] - top2[0] if top2[0] > -np.inf else math.inf
        margin = min(margin, gap)
        score += lp[token]
        if token in np_endings(o, cfg):
            length = len(out) + 1
            return out, score / length ** length_penalty, token, margin
        out.append(token)
    return out, (score / len(out) ** length_penalty if out else score), None, margin


def np_beam(W, cfg, src, beam, max_len, length_penalty, n_best, o, prefix=()):
    """The n-best [(ids, rank, ending or None)] of the beam search, one hypothesis at a time."""
    memory = np_encode(W, cfg, src)
    limit = min(max_len, cfg["max_positions"] - 1)
    endings = np_endings(o, cfg)

    def rank(score, length):
        return score / length ** length_penalty if length else score

    finished = []   # (rank, ids, ending), kept sorted by rank, stable
    live = [([], 0.0)] if limit else []
    if not limit:
        finished.append((0.0, [], None))
    while live:
        step = len(live[0][0])
        if step < len(prefix):
            ids, score = live[0]
            z = np_logits(W, cfg, memory, [cfg["bos_id"]] + ids)[-1]
            live = [(ids + [prefix[step]], score + np_normalise(z)[prefix[step]])]
        else:
            candidates = []
            for h, (ids, score) in enumerate(live):
                lp = np_process(np_logits(W, cfg, memory, [cfg["bos_id"]] + ids)[-1], ids, o, cfg)
                candidates += [(score + lp[v], h, int(v)) for v in np.flatnonzero(lp > -np.inf)]
            candidates.sort(key=lambda c: (-c[0], c[1], c[2]))
            new_live = []
            for position, (score, h, v) in enumerate(candidates):
                if len(new_live) == beam:
                    break
                if v not in endings:
                    new_live.append((live[h][0] + [v], score))
                elif position < beam:
                    finished.append((rank(score, len(live[h][0]) + 1), live[h][0], v))
            live = new_live
        if live and len(live[0][0]) == limit:
            finished += [(rank(score, limit), ids, None) for ids, score in live]
            live = []
        finished.sort(key=lambda f: -f[0])
        if live and len(finished) >= n_best and rank(live[0][1], limit) <= finished[n_best - 1][0]:
            break
    return [(ids, r, ending) for r, ids, ending in finished[:n_best]]


def options_model(index, seed, unk_boost=0.0, eos_boost=0.0):
    model = build(index, seed)
    with torch.no_grad():
        model.generator.bias[model.config["unk_id"]] += unk_boost
        model.generator.bias[model.config["eos_id"]] += eos_boost
    return model, {k: v.numpy() for k, v in model.state_dict().items()}


def check_random_stream(failures):
    state, published = SPLITMIX_PUBLISHED
    got = [tt.stream_word(state, t) for t in range(3)]
    report(failures, "stream: SplitMix64's published outputs from state 1234567",
           float(got != published or np_splitmix(state, 3) != published), 0.0)
    bad, draws = 0, []
    for seed, index in ((0, 0), (7, 0), (7, 1), (2 ** 64 - 1, 3), (12345678901, 11), (5, 2 ** 40)):
        stream, mine = tt.SentenceStream(seed, index), NpStream(seed, index)
        for _ in range(200):
            u = stream.uniform()
            bad += u != mine.uniform()
            draws.append(u)
    report(failures, "stream: keys and draws vs a SplitMix64 generator (draws differing)",
           float(bad), 0.0)
    key = tt.sentence_key(7, 0)
    draws += [tt.uniform_draw(key, t) for t in range(20000)]
    edges = (tt.word_to_uniform(0) == 0.0 and tt.word_to_uniform(2 ** 64 - 1) < 1.0
             and tt.word_to_uniform(2 ** 64 - 1) == 1 - 2.0 ** -53)
    in_range = all(0.0 <= u < 1.0 for u in draws)
    mean = sum(draws) / len(draws)
    report(failures, "stream: u in [0, 1), edges, mean of %d draws %.4f (|mean - 0.5|)"
           % (len(draws), mean), abs(mean - 0.5) if in_range and edges else math.inf, 0.01)
    first = [tt.uniform_draw(tt.sentence_key(3, i), 0) for i in range(100)]
    report(failures, "stream: sentences 0..99 draw different numbers",
           float(len(set(first)) != len(first)), 0.0)


def random_options(rng, vocab, cfg):
    return tt.DecodeOptions(
        min_len=int(rng.choice([0, 0, 3, 8])),
        no_repeat_ngram=int(rng.choice([0, 1, 2, 3])),
        repetition_penalty=float(rng.choice([1.0, 0.5, 1.5, 2.3])),
        disable_unk=bool(rng.integers(0, 2)),
        end_token=(None if rng.integers(0, 2) else
                   int(rng.choice([t for t in range(vocab) if t != cfg["eos_id"]]))))


def check_processors_random_rows(failures):
    rng = np.random.default_rng(71)
    cfg = tt.full_config(CONFIGS[1][0])
    vocab = cfg["tgt_vocab_size"]
    worst, pattern_bad = 0.0, 0
    for _ in range(400):
        z = rng.normal(0.0, 3.0, vocab)
        z[rng.integers(0, vocab)] = 0.0
        history = [int(t) for t in rng.integers(0, 6, size=int(rng.integers(0, 13)))]
        o = random_options(rng, vocab, cfg)
        got = tt.process_logits(torch.tensor(z), history, o, cfg).numpy()
        want = np_process(z, history, o, cfg)
        pattern_bad += not np.array_equal(np.isfinite(got), np.isfinite(want))
        finite = np.isfinite(want)
        worst = max(worst, float(np.max(np.abs(got[finite] - want[finite]))))
    report(failures, "processors vs numpy on random rows (-inf patterns differing)",
           float(pattern_bad), 0.0)
    report(failures, "processors vs numpy on random rows (finite log-probs)", worst, 1e-12)


def random_lp_row(rng, vocab):
    z = rng.normal(0.0, rng.choice([0.5, 2.0, 5.0]), vocab)
    z[rng.integers(0, vocab, size=int(rng.integers(0, vocab // 2)))] = -np.inf
    if rng.integers(0, 4) == 0:
        z[rng.integers(0, vocab)] = z[rng.integers(0, vocab)]  # an exact tie
    return np_process(z, [], tt.DecodeOptions(), dict(unk_id=0, eos_id=1))


def check_sampling_random_rows(failures):
    rng = np.random.default_rng(72)
    disagree, compared, margin_worst, greedy_bad = 0, 0, 0.0, 0
    for _ in range(3000):
        vocab = int(rng.integers(2, 30))
        lp = random_lp_row(rng, vocab)
        k = int(rng.choice([0, 1, 2, 3, 5, 50]))
        p = float(rng.choice([1.0, 0.95, 0.7, 0.3]))
        temperature = float(rng.choice([0.3, 1.0, 1.7]))
        u = float(rng.random())
        token, margin = tt.sampling_choice(torch.tensor(lp), k, p, temperature, u)
        want, want_margin = np_sample(lp, k, p, temperature, u)
        if min(margin, want_margin) > 1e-9:
            compared += 1
            disagree += token != want
            margin_worst = max(margin_worst, abs(margin - want_margin) if margin < math.inf
                               else float(want_margin < math.inf))
        if k == 1:
            top2 = np.sort(lp)[-2:]
            gap = top2[1] - top2[0] if len(lp) > 1 and top2[0] > -np.inf else math.inf
            greedy_bad += token != int(np.argmax(lp)) or (
                p == 1 and (margin != gap or want_margin != gap))
    report(failures, "sampling choice vs numpy, %d random rows compared (tokens differing)"
           % compared, float(disagree) if compared > 2500 else math.inf, 0.0)
    report(failures, "sampling choice vs numpy (margins)", margin_worst, 1e-9)
    report(failures, "sampling choice with top-k 1 is the argmax (rows differing)",
           float(greedy_bad), 0.0)


def kept_set(lp, k, p, temperature):
    """Tokens the sampling may choose, and their probabilities, the plain way."""
    probs = {}
    cand = sorted((i for i in range(len(lp)) if lp[i] > -np.inf), key=lambda i: (-lp[i], i))
    if 0 < k < len(cand):
        cand = cand[:k]
    weights = np.array([math.exp(lp[i] / temperature) for i in cand])
    weights /= weights.sum()
    if p < 1:
        cut = next(j for j in range(len(cand)) if weights[: j + 1].sum() >= p - 1e-12)
        cand, weights = cand[: cut + 1], weights[: cut + 1] / weights[: cut + 1].sum()
    for i, w in zip(cand, weights):
        probs[i] = w
    return probs


def check_sampling_frequencies(failures):
    lp = np_normalise(np.array([2.0, 1.2, 0.9, 0.85, 0.1, -0.4, -1.0, -np.inf, -2.5, -3.0]))
    draws = 20000
    for k, p, temperature in ((5, 1.0, 0.7), (0, 0.8, 1.0), (0, 1.0, 1.3), (4, 0.7, 2.0)):
        probs = kept_set(lp, k, p, temperature)
        counts = collections.Counter()
        stream = tt.SentenceStream(3, k)
        for _ in range(draws):
            counts[tt.sampling_choice(lp, k, p, temperature, stream.uniform())[0]] += 1
        outside = sum(c for t, c in counts.items() if t not in probs)
        chi2 = sum((counts[t] - draws * q) ** 2 / (draws * q) for t, q in probs.items())
        dof = len(probs) - 1
        bound = dof + 8 * math.sqrt(2 * dof) + 10
        report(failures, "sampling frequencies, top-k %d top-p %g T %g: chi-square over %d "
               "tokens (bound %.0f)" % (k, p, temperature, len(probs), bound),
               chi2 if outside == 0 else math.inf, bound)


def teacher_forced_rows(model, src, out, ended):
    """Log-prob rows of each step of out (and of its ending step), one decoder pass."""
    cfg = model.config
    with torch.no_grad():
        logits = model.decode_logits(model.encode(src), [cfg["bos_id"]] + out)
    rows = torch.log_softmax(logits, dim=-1).numpy()
    return rows[: len(out) + ended]


def check_sampling_support(failures):
    """Over many seeds, every sampled token is within the top K / the nucleus."""
    model, _ = options_model(0, 81)
    cfg = model.config
    rng = np.random.default_rng(73)
    sources = [random_ids(rng, cfg["src_vocab_size"], 2, 12) for _ in range(3)]
    for o, what in ((tt.DecodeOptions(sampling_topk=3, sampling_temperature=2.0), "top-k 3"),
                    (tt.DecodeOptions(sampling_topk=0, sampling_topp=0.6), "top-p 0.6")):
        outside, not_argmax, outputs, steps = 0, 0, set(), 0
        for seed in range(10):
            for index, src in enumerate(sources):
                hypothesis, _ = model.decode_hypothesis(src, 10, dataclasses.replace(o, seed=seed),
                                                        index)
                chosen = hypothesis.tokens + ([hypothesis.ending] if hypothesis.by_eos else [])
                rows = teacher_forced_rows(model, src, hypothesis.tokens, hypothesis.by_eos)
                for row, token in zip(rows, chosen):
                    allowed = kept_set(row, o.sampling_topk, o.sampling_topp, 1.0)
                    outside += token not in allowed
                    not_argmax += token != int(np.argmax(row))
                    steps += 1
                outputs.add(tuple(hypothesis.tokens))
        ok = not_argmax > 0 and len(outputs) > 3
        report(failures, "sampling %s: tokens outside it (%d steps, %d not the argmax, %d outputs)"
               % (what, steps, not_argmax, len(outputs)), float(outside) if ok else math.inf, 0.0)


def check_decode_vs_numpy(failures):
    """decode_hypothesis and beam_search against np_decode / np_beam on random models."""
    rng = np.random.default_rng(74)
    for index in (0, 1):
        model, W = options_model(index, 90 + index, eos_boost=1.5)
        cfg = model.config
        vocab = cfg["tgt_vocab_size"]
        wrong, decodes, beams, score_worst = 0, 0, 0, 0.0
        for trial in range(24):
            src = random_ids(rng, cfg["src_vocab_size"], 1, 12)
            o = random_options(rng, vocab, cfg)
            sampling = trial % 3 != 0
            if sampling:
                o = dataclasses.replace(o, sampling_topk=int(rng.choice([0, 4, 8])),
                                        sampling_topp=float(rng.choice([1.0, 0.85])),
                                        sampling_temperature=float(rng.choice([0.8, 1.0, 1.4])),
                                        seed=int(rng.integers(0, 2 ** 63)))
            endings = np_endings(o, cfg)
            prefix = [int(t) for t in rng.integers(0, vocab, size=int(rng.integers(0, 4)))
                      if t not in endings]
            line = int(rng.integers(0, 1000))
            hypothesis, margin = model.decode_hypothesis(src, 12, o, line, prefix, 0.5)
            out, score, ending, np_margin = np_decode(W, cfg, src, 12, o, line, prefix, 0.5)
            if min(margin, np_margin) >= 1e-6:
                decodes += 1
                wrong += (hypothesis.tokens, hypothesis.ending) != (out, ending)
                score_worst = max(score_worst, abs(hypothesis.rank - score))
            if not sampling:
                hypotheses, margin = model.beam_search(src, 3, 10, 0.6, 2, o, prefix)
                want = np_beam(W, cfg, src, 3, 10, 0.6, 2, o, prefix)
                if margin >= 1e-6:
                    beams += 1
                    got = [(h.tokens, h.ending) for h in hypotheses if h.rank > -math.inf]
                    wrong += got != [(ids, e) for ids, _, e in want]
                    score_worst = max([score_worst] + [abs(h.rank - w[1])
                                                        for h, w in zip(hypotheses, want)])
        report(failures, "decode / beam_search with options vs numpy, config %d (%d + %d "
               "compared, outputs differing)" % (index, decodes, beams),
               float(wrong) if decodes >= 16 and beams >= 5 else math.inf, 0.0)
        report(failures, "decode / beam_search with options vs numpy, config %d (scores)" % index,
               score_worst, 1e-10)


def check_decode_defaults(failures):
    """Default options: decode is greedy_with_margin, top-k 1 is greedy, options=default is the old beam."""
    rng = np.random.default_rng(75)
    bad = 0
    for index in (0, 1):
        model, _ = options_model(index, 100 + index, eos_boost=1.0)
        cfg = model.config
        for _ in range(4):
            src = random_ids(rng, cfg["src_vocab_size"], 1, 12)
            out, margin = model.greedy_with_margin(src, 12)
            ids, score, decode_margin = model.decode(src, 12)
            lps = model.score(src, ids)
            want = sum(lps) if len(ids) < 12 else sum(lps[:-1])
            bad += ids != out or abs(score - want) > 1e-9 or abs(margin - decode_margin) > 1e-9
    report(failures, "decode with default options is greedy (sentences differing)", float(bad), 0.0)


def has_repeated_ngram(ids, n):
    grams = [tuple(ids[j:j + n]) for j in range(len(ids) - n + 1)]
    return len(grams) != len(set(grams))


def check_prefix(failures):
    rng = np.random.default_rng(76)
    for index in (0, 1):
        model, _ = options_model(index, 110 + index, eos_boost=1.0)
        cfg = model.config
        vocab, eos, unk = cfg["tgt_vocab_size"], cfg["eos_id"], cfg["unk_id"]
        not_first, score_worst, forced_worst = 0, 0.0, 0.0
        for trial in range(4):
            src = random_ids(rng, cfg["src_vocab_size"], 1, 12)
            prefix = [int(t) for t in rng.integers(0, vocab, size=trial + 1) if t != eos]
            ids, score, _ = model.decode(src, 12, prefix=prefix)
            lps = model.score(src, ids)
            want = sum(lps) if len(ids) < 12 else sum(lps[:-1])
            score_worst = max(score_worst, abs(score - want))
            hypotheses, _ = model.beam_search(src, 3, 12, 0.6, 3, prefix=prefix)
            sampled, _, _ = model.decode(src, 12, tt.DecodeOptions(sampling_topk=0, seed=trial),
                                         trial, prefix)
            not_first += any(h.tokens[: len(prefix)] != prefix for h in hypotheses + [
                tt.Hypothesis(ids, 0, 0, 0, False), tt.Hypothesis(sampled, 0, 0, 0, False)])
            # Every step forced: raw log-probs, whatever the options (the
            # prefix repeats tokens, holds unk, is shorter than min_len).
            forced = [unk] + prefix + prefix[:1]
            o = tt.DecodeOptions(min_len=len(forced), no_repeat_ngram=1, repetition_penalty=3.0,
                                 disable_unk=True)
            want = sum(model.score(src, forced)[:-1])
            ids, score, margin = model.decode(src, len(forced), o, prefix=forced)
            hypotheses, _ = model.beam_search(src, 3, len(forced), 0.6, 1, o, forced)
            forced_worst = max(forced_worst, abs(score - want) + (ids != forced) + (margin != math.inf),
                               abs(hypotheses[0].score - want) + (hypotheses[0].tokens != forced))
        report(failures, "prefix, config %d: outputs (greedy, beam, sampling) not starting with it"
               % index, float(not_first), 0.0)
        report(failures, "prefix, config %d: greedy score vs score()'s log-probs" % index,
               score_worst, 1e-9)
        report(failures, "prefix, config %d: forced steps score raw log-probs, no margin" % index,
               forced_worst, 1e-9)
        refused = 0
        ordinary = next(t for t in range(vocab) if t != eos)
        for bad in ([ordinary, eos], [vocab], [ordinary] * 13):
            try:
                model.decode([1, 2], 12, prefix=bad)
            except ValueError:
                refused += 1
        try:
            model.beam_search([1, 2], 2, 12, options=tt.DecodeOptions(end_token=4), prefix=[4])
        except ValueError:
            refused += 1
        report(failures, "prefix, config %d: bad prefixes refused (of 4)" % index,
               float(4 - refused), 0.0)


def check_constraints(failures):
    """min-len, no-repeat n-gram, disable-unk and the end token, in greedy, sampling and beam."""
    rng = np.random.default_rng(77)
    # unk and eos made likely enough that the constraints have work to do
    for index, unk_boost, eos_boost in ((0, 2.5, 1.0), (1, 6.0, 6.0)):
        model, _ = options_model(index, 120 + index, unk_boost, eos_boost)
        cfg = model.config
        unk = cfg["unk_id"]
        sources = [random_ids(rng, cfg["src_vocab_size"], 1, 12) for _ in range(6)]
        plain = [model.decode(src, 12)[0] for src in sources]
        counts = collections.Counter(t for out in plain for t in set(out) if t != unk)
        end_token = counts.most_common(1)[0][0]

        def outputs(o, beam=True):
            result = []
            for k, src in enumerate(sources):
                result.append(model.decode(src, 12, o, k)[0])
                if not o.sampling:
                    if beam:
                        result += [h.tokens for h in model.beam_search(src, 3, 12, 0.6, 3, o)[0]]
                else:
                    for seed in range(1, 3):
                        result.append(model.decode(src, 12, dataclasses.replace(o, seed=seed), k)[0])
            return result

        sampling = dict(sampling_topk=0, sampling_temperature=1.5)
        unconstrained = outputs(tt.DecodeOptions()) + outputs(tt.DecodeOptions(**sampling))
        vacuous = (not any(unk in out for out in unconstrained)
                   or not any(has_repeated_ngram(out, 2) for out in unconstrained)
                   or not any(len(out) < 5 for out in unconstrained))
        bad = 0
        for extra in ({}, sampling):
            for out in outputs(tt.DecodeOptions(disable_unk=True, **extra)):
                bad += unk in out
            for n in (1, 2, 3):
                for out in outputs(tt.DecodeOptions(no_repeat_ngram=n, **extra)):
                    bad += has_repeated_ngram(out, n)
            for out in outputs(tt.DecodeOptions(min_len=5, end_token=end_token, **extra)):
                bad += len(out) < 5
        report(failures, "constraints, config %d: disable-unk, no-repeat 1-3, min-len 5 broken"
               % index, float(bad) if not vacuous else math.inf, 0.0)

        cut, bad = 0, 0
        for k, (src, out) in enumerate(zip(sources, plain)):
            hypothesis, _ = model.decode_hypothesis(src, 12, tt.DecodeOptions(end_token=end_token), k)
            if end_token in out:
                stop = out.index(end_token)
                want = sum(model.score(src, out[: stop + 1])[:-1])
                bad += (hypothesis.tokens, hypothesis.ending) != (out[:stop], end_token)
                bad += abs(hypothesis.score - want) > 1e-9
                cut += 1
            else:
                bad += hypothesis.tokens != out
        ends = 0
        for src in sources:
            hypotheses, _ = model.beam_search(src, 3, 12, 0.6, 3,
                                              tt.DecodeOptions(end_token=end_token))
            bad += any(end_token in h.tokens for h in hypotheses)
            ends += sum(h.ending == end_token for h in hypotheses)
        report(failures, "end token %d, config %d: greedy is plain cut at it (%d cut), beam "
               "never emits it (%d end by it)" % (end_token, index, cut, ends),
               float(bad) if cut and ends else math.inf, 0.0)
        refused = 0
        for o, beam in ((tt.DecodeOptions(sampling_topk=5), 2),
                        (tt.DecodeOptions(sampling_topp=0.5), 1),
                        (tt.DecodeOptions(sampling_temperature=0.5), 1),
                        (tt.DecodeOptions(min_len=13), 1),
                        (tt.DecodeOptions(end_token=cfg["tgt_vocab_size"]), 1)):
            try:
                o.check(cfg, beam, 12)
            except ValueError:
                refused += 1
        report(failures, "options, config %d: refused combinations (of 5)" % index,
               float(5 - refused), 0.0)


# ---- alignments (`tessera translate --alignments`) ---------------------------

ALIGN_NEAR_TIE = 1e-4   # make-golden's: the alignment margin every fixture hypothesis keeps
ALIGN_BUGS = {   # planted bugs: np_alignments arguments, each a wrong definition
    "first decoder layer, not the last": dict(layer=0),
    "max over heads, not the mean": dict(reduce="max"),
    "target position off by one": dict(shift=1),
    "no 1/sqrt(d_head)": dict(scaled=False),
}


def check_alignments(failures):
    """alignments() against np_alignments on random models, sources and targets;
    each planted bug (ALIGN_BUGS) must differ from alignments() somewhere."""
    rng = np.random.default_rng(78)
    caught = {bug: [0, 0] for bug in ALIGN_BUGS}   # sentences where positions / anything differ
    sentences = 0
    for index in range(len(CONFIGS)):
        model = build(index, 130 + index)
        cfg = model.config
        W = {k: v.numpy() for k, v in model.state_dict().items()}
        compared, wrong, margin_worst, varied, single = 0, 0, 0.0, 0, 0
        for trial in range(8):
            src_len = 1 if trial < 2 else int(rng.integers(2, 16))
            src = [int(t) for t in rng.integers(0, cfg["src_vocab_size"], size=src_len)]
            tokens = random_ids(rng, cfg["tgt_vocab_size"], 0 if trial == 2 else 1, 12)
            positions, margin = model.alignments(src, tokens)
            want, margins = np_alignments(W, cfg, src, tokens)
            wrong += len(positions) != len(tokens)
            for got, expect, gap in zip(positions, want, margins):
                if gap > 1e-9:
                    compared += 1
                    wrong += got != expect
            want_margin = min(margins, default=math.inf)
            if math.isinf(want_margin) or math.isinf(margin):
                margin_worst = max(margin_worst, 0.0 if margin == want_margin else math.inf)
            else:
                margin_worst = max(margin_worst, abs(margin - want_margin))
            varied += len(set(positions)) >= 2
            single += src_len == 1 and positions == [0] * len(tokens) and margin == math.inf
            if not tokens:
                wrong += (positions, margin) != ([], math.inf)
                continue
            sentences += 1
            for bug, planted in ALIGN_BUGS.items():
                bad, bad_margins = np_alignments(W, cfg, src, tokens, **planted)
                bad_margin = min(bad_margins)
                moved = any(b != g for b, g, m in zip(bad, positions, bad_margins) if m > 1e-9)
                caught[bug][0] += moved
                caught[bug][1] += moved or not abs(bad_margin - margin) <= 1e-6
        report(failures, "alignments vs numpy, config %d (%d tokens compared, %d sentences with "
               "2+ positions; positions differing)" % (index, compared, varied),
               float(wrong) if compared >= 20 and varied >= 2 and single == 2 else math.inf, 0.0)
        report(failures, "alignments vs numpy, config %d (margins)" % index, margin_worst, 1e-10)
    for bug, (moved, differ) in caught.items():
        report(failures, "alignments: planted bug %s: caught in %d (positions), %d (or margin) "
               "of %d" % (bug, moved, differ, sentences),
               0.0 if moved else 1.0, 0.0)


def check_format_alignments(failures):
    """format_nbest with alignments: IDS<TAB>SCORE<TAB>ALIGN per hypothesis; unchanged without."""
    h = tt.Hypothesis
    both = [h([5, 9, 9], -1.25, 3, -1.25, False), h([], -1.5, 1, -1.5, True)]
    cases = [
        (tt.format_nbest(both[:1], [[0, 2, 2]]), "5 9 9\t-1.25\t0-0 2-1 2-2"),
        (tt.format_nbest(both, [[0, 2, 2], []]), "5 9 9\t-1.25\t0-0 2-1 2-2\t\t-1.5\t"),
        (tt.format_nbest(both), "5 9 9\t-1.25\t\t-1.5"),
        (tt.format_nbest([h([7], -0.5, 2, -0.5, True)], [[13]]), "7\t-0.5\t13-0"),
    ]
    bad = sum(got != want for got, want in cases)
    for wrong in ([[0, 2, 2]], [[0, 2], []]):   # an alignment missing, a token without one
        try:
            tt.format_nbest(both, wrong)
            bad += 1
        except ValueError:
            pass
    report(failures, "format_nbest with alignments (lines differing from the format)",
           float(bad), 0.0)


def parse_flag_line(line):
    """DecodeOptions and the run settings of a `tessera translate` flag line."""
    words = line.split()
    o, run = {}, dict(beam=1, n_best=1, length_penalty=0.0, prefix=False, alignments=False)
    numbers = {"--sampling-topk": int, "--sampling-topp": float, "--sampling-temperature": float,
               "--seed": int, "--min-len": int, "--no-repeat-ngram": int,
               "--repetition-penalty": float, "--end-token": int}
    while words:
        flag = words.pop(0)
        if flag == "--disable-unk":
            o["disable_unk"] = True
        elif flag == "--prefix":
            run["prefix"] = True
        elif flag == "--alignments":
            run["alignments"] = True
        elif flag in numbers:
            o[flag[2:].replace("-", "_")] = numbers[flag](words.pop(0))
        else:
            run[flag[2:].replace("-", "_")] = (float if flag == "--length-penalty" else int)(words.pop(0))
    return tt.DecodeOptions(**o), run


def fixture_option_errors(directory, W, cfg):
    """(lines wrong or near a tie, worst relative score error, cases) over options/*."""
    wrong, worst, cases = 0, 0.0, 0
    option_dir = os.path.join(directory, "options")
    for name in sorted(os.listdir(option_dir)):
        if not name.endswith(".flags"):
            continue
        cases += 1
        case = os.path.join(option_dir, name[: -len(".flags")])
        flag_lines = read_lines(case + ".flags")
        o, run = parse_flag_line(flag_lines[0])
        inputs, expected = read_lines(case + ".in"), read_lines(case + ".expected")
        wrong += len(flag_lines) != 1 or len(inputs) != len(expected) or len(inputs) != 12
        for index, (line, want) in enumerate(zip(inputs, expected)):
            src_text, _, prefix_text = line.partition("\t")
            if run["prefix"] != ("\t" in line):
                wrong += 1
                continue
            src, prefix = [int(t) for t in src_text.split()], [int(t) for t in prefix_text.split()]
            if run["beam"] == 1:
                ids, score, _, margin = np_decode(W, cfg, src, run["max_len"], o, index, prefix,
                                                  run["length_penalty"])
                got = [(ids, score)]
                wrong += margin < 1e-3
            else:
                got = [(ids, r) for ids, r, _ in np_beam(W, cfg, src, run["beam"], run["max_len"],
                                                         run["length_penalty"], run["n_best"], o,
                                                         prefix)]
            fields = want.split("\t")
            width = 3 if run["alignments"] else 2   # IDS SCORE [ALIGN] per hypothesis
            if len(fields) % width:
                wrong += 1
                continue
            want_pairs = [([int(t) for t in fields[j].split()], float(fields[j + 1]))
                          for j in range(0, len(fields), width)]
            if [ids for ids, _ in got] != [ids for ids, _ in want_pairs]:
                wrong += 1
                continue
            worst = max([worst] + [abs(a - b) / max(1.0, abs(b))
                                   for (_, a), (_, b) in zip(got, want_pairs)])
            if run["alignments"]:
                for (ids, _), text in zip(want_pairs, fields[2::3]):
                    positions, margins = np_alignments(W, cfg, src, ids)
                    pairs = [pair.split("-") for pair in text.split()]
                    wrong += (pairs != [[str(i), str(j)] for j, i in enumerate(positions)]
                              or min(margins, default=math.inf) < ALIGN_NEAR_TIE)
    return wrong, worst, cases


def report(failures, what, value, limit):
    ok = value <= limit
    print("%-72s %.3g %s" % (what, value, "PASS" if ok else "FAIL"))
    if not ok:
        failures.append(what)


def main():
    failures = []
    check_against_numpy(failures)
    check_against_padded_batch(failures)
    check_greedy_consistency(failures)
    check_safetensors_round_trip(failures)
    check_converter(failures)
    check_random_stream(failures)
    check_processors_random_rows(failures)
    check_sampling_random_rows(failures)
    check_sampling_frequencies(failures)
    check_sampling_support(failures)
    check_decode_defaults(failures)
    check_decode_vs_numpy(failures)
    check_prefix(failures)
    check_constraints(failures)
    check_alignments(failures)
    check_format_alignments(failures)
    golden = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "golden")
    if os.path.isdir(golden):
        check_golden_fixtures(failures, golden)
    if failures:
        print("%d check(s) failed" % len(failures))
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
