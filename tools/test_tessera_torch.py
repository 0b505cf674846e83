#!/usr/bin/python3
"""Self-test of the reference model in tessera_torch.py.

The golden fixtures and check-against-torch are only as good as the
reference, so it is checked three independent ways:
  1. against a plain numpy forward pass written from INTERFACE.md's words
     (post/pre-norm order, final norms, q/k/v stacking, sinusoid formula);
  2. against nn.Transformer called directly on a padded batch with key
     padding masks (a different code path through torch than score());
  3. greedy output against one teacher-forced pass over its own output
     (each emitted token must be the argmax at its position).
Also a safetensors round trip, tools/tessera-convert (round trip and its
error messages), and the fixtures under tests/golden/ re-derived
from their files with the numpy forward pass (so a fault in writing, rounding
or formatting them shows up). Run: /usr/bin/python3 tools/test_tessera_torch.py
"""

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


# ---- numpy forward pass from INTERFACE.md ---------------------------------

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
    heads, act = cfg["n_heads"], cfg["activation"]
    memory = np_encode(W, cfg, src)
    x = np_embed(W, cfg, "tgt_tok_emb.embedding.weight", tgt_in)
    for i in range(cfg["n_decoder_layers"]):
        p = "transformer.decoder.layers.%d." % i
        x = np_sublayer(W, p + "norm1", x,
                        lambda y: np_attention(W, p + "self_attn.", y, y, heads, True), cfg)
        x = np_sublayer(W, p + "norm2", x,
                        lambda y: np_attention(W, p + "multihead_attn.", y, memory, heads, False), cfg)
        x = np_sublayer(W, p + "norm3", x, lambda y: np_ffn(W, p, y, act), cfg)
    x = np_final_norm(W, "transformer.decoder.norm", x, cfg)
    logits = x @ W["generator.weight"].T + W["generator.bias"]
    logits -= logits.max(-1, keepdims=True)
    return logits - np.log(np.exp(logits).sum(-1, keepdims=True))


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
        if not os.path.isdir(directory):
            continue
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
