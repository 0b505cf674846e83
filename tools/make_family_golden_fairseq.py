"""Builds the fairseq fixtures, tests/golden/families/fairseq-*.

make(root): for each variant of tools/write-fairseq-checkpoint, writes the
original in fairseq's layout into ROOT/fairseq-<variant>/fairseq/
(checkpoint_best.pt, dict.SRC.txt, dict.TGT.txt), converts it with
tools/converters/fairseq.py into ROOT/fairseq-<variant>/, and writes what
`tessera` must print for it, computed by tools/fairseq_reference.py (numpy
float64 from the checkpoint's own names and fairseq's semantics, never from
the converter's output):

  score.in / score.expected                SRC<TAB>TGT, log-probs (%.9g)
  translate.in / translate.expected        greedy, --max-len 20
  translate.beam.in / translate.beam.expected
      --beam 4 --n-best 3 --length-penalty 0.6 --max-len 15

Sources are written without </s> (tessera appends it: source_suffix).
Sentences whose greedy top-2 gap, or any beam decision, comes within NEAR_TIE
of flipping are left out. fairseq's min_len 1 (</s> banned at the first
step) is the converted model's min_target_length 1, so sentences it decides
are kept. The </s>
logit is raised in steps of 0.5 (write-fairseq-checkpoint's eos_bias) until 3
to 9 of the 12 greedy sentences stop at </s>.

Deterministic. Touches only ROOT/fairseq-* and ROOT/README-fairseq.md.
Needs numpy and torch (to write and read the .pt).

    /usr/bin/python3 tools/make_family_golden_fairseq.py [ROOT] [--check-search]
"""

import os
import shutil
import sys
import tempfile

sys.dont_write_bytecode = True
HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import numpy as np  # noqa: E402

from converters import fairseq as convert_fairseq  # noqa: E402
import fairseq_reference as ref  # noqa: E402
from family_golden import (  # noqa: E402
    BEAM, BEAM_FLAGS, BEAM_SENTENCES, MAX_LEN, N_CANDIDATES, N_SENTENCES, NEAR_TIE, SCORE_LENGTHS,
    distinct_first, endings, ids_text, load_script, size_kb, write_lines)


writer = load_script("write-fairseq-checkpoint")

VARIANTS = ["sinusoidal-postnorm", "learned-prenorm"]
EOS_SHIFTS = [0.5 * k for k in range(25)]
BEAM_CANDIDATES = 40
UNK = 3


def source_ids(rng, vocab_size, length, with_unk):
    """Ids 4..V-1 (no <s>, <pad>, </s>), maybe one <unk> (3)."""
    ids = [int(t) for t in rng.integers(4, vocab_size, size=length)]
    if with_unk:
        ids[int(rng.integers(0, length))] = UNK
    return ids


def candidates(rng, vocab_size, count):
    """`count` sources, each once."""
    out = []
    for i in range(count):
        src = source_ids(rng, vocab_size, int(rng.integers(1, 13)), i % 4 == 3)
        if src not in out:
            out.append(src)
    return out


def models(directory):
    """(fairseq's model, min_len 1; the same): the pair the selection compares.

    The second was the model without the min_len ban while tessera had no
    min_target_length, to keep only sentences it did not decide."""
    fairseq = ref.FairseqReference(directory)
    return fairseq, ref.FairseqReference(directory)


def greedy_agreeing(pair, src):
    fairseq, plain = pair
    out, margin = fairseq.greedy_with_margin(src, MAX_LEN)
    out0, margin0 = plain.greedy_with_margin(src, MAX_LEN)
    if out != out0:
        return out, -1.0
    return out, min(margin, margin0)


def pick_greedy(pair, sources):
    usable = []
    for src in sources:
        out, margin = greedy_agreeing(pair, src)
        if margin >= NEAR_TIE:
            usable.append((src, out))
    return distinct_first(usable, lambda p: tuple(p[1]), N_SENTENCES)


def tune_eos(variant, work):
    spec = writer.VARIANTS[variant]
    vocab = len(writer.SPECIALS) + spec["src_words"]
    sources = candidates(np.random.default_rng([spec["seed"], 1]), vocab, N_CANDIDATES)
    for shift in EOS_SHIFTS:
        directory = os.path.join(work, "%s-%g" % (variant, shift))
        writer.write_checkpoint(directory, variant, eos_bias=spec["eos_bias"] + shift)
        chosen = pick_greedy(models(directory), sources)
        if chosen is None:
            continue
        ended = sum(len(out) < MAX_LEN for _, out in chosen)
        if 3 <= ended <= N_SENTENCES - 3:
            return shift, chosen
    raise RuntimeError("%s: no </s> bias shift gives a mix of stops" % variant)


def pick_beam(pair, rng, vocab_size, variant):
    fairseq, plain = pair
    usable = []
    for src in candidates(rng, vocab_size, BEAM_CANDIDATES):
        hypotheses, margin = fairseq.beam_search(src, **BEAM)
        hypotheses0, margin0 = plain.beam_search(src, **BEAM)
        if hypotheses != hypotheses0:
            continue
        if min(margin, margin0) > NEAR_TIE:
            usable.append((src, hypotheses))
    chosen = distinct_first(usable, lambda p: endings(p[1]), BEAM_SENTENCES)
    if chosen is None:
        raise RuntimeError("%s: too few beam sentences without a near-tie" % variant)
    return chosen


def score_pairs(rng, src_vocab, tgt_vocab):
    """Targets 3..V-1: no <s>, <pad> (fairseq's scorer skips pad targets) or </s>."""
    pairs = []
    for i, (src_len, tgt_len) in enumerate(SCORE_LENGTHS):
        src = source_ids(rng, src_vocab, src_len, i % 3 == 1)
        tgt = [int(t) for t in rng.integers(4, tgt_vocab, size=tgt_len)]
        if tgt and i % 3 == 0:
            tgt[int(rng.integers(0, tgt_len))] = UNK
        pairs.append((src, tgt))
    return pairs


def make_variant(root, variant, work, check_search=False):
    spec = writer.VARIANTS[variant]
    shift, chosen = tune_eos(variant, work)
    out_dir = os.path.join(root, "fairseq-" + variant)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    original = os.path.join(out_dir, "fairseq")
    writer.write_checkpoint(original, variant, eos_bias=spec["eos_bias"] + shift)
    notes = []
    config = convert_fairseq.convert(original, out_dir, note=notes.append)
    pair = models(original)
    model = pair[0]
    src_vocab, tgt_vocab = config["src_vocab_size"], config["tgt_vocab_size"]

    pairs = score_pairs(np.random.default_rng([spec["seed"], 2]), src_vocab, tgt_vocab)
    write_lines(os.path.join(out_dir, "score.in"), [ids_text(s) + "\t" + ids_text(t) for s, t in pairs])
    write_lines(os.path.join(out_dir, "score.expected"),
                [ref.format_logprobs(model.score(s, t)) for s, t in pairs])
    write_lines(os.path.join(out_dir, "translate.in"), [ids_text(s) for s, _ in chosen])
    write_lines(os.path.join(out_dir, "translate.expected"), [ids_text(o) for _, o in chosen])
    beam = pick_beam(pair, np.random.default_rng([spec["seed"], 3]), src_vocab, variant)
    write_lines(os.path.join(out_dir, "translate.beam.in"), [ids_text(s) for s, _ in beam])
    write_lines(os.path.join(out_dir, "translate.beam.expected"), [ref.format_nbest(h) for _, h in beam])
    if check_search and not ref.check_search(model, [s for s, _ in beam], BEAM["beam"], BEAM["max_len"],
                                             BEAM["length_penalty"], BEAM["n_best"]):
        raise RuntimeError("--check-search needs torch and tools/tessera_torch.py")

    # how much the pad ban matters: outputs without it
    unbanned = ref.FairseqReference(original)

    def no_pad_ban(memory, tokens):
        row = unbanned.log_softmax(unbanned.decode_logits(memory, tokens)[-1])
        if len(tokens) < unbanned.min_len:
            row[unbanned.eos] = -np.inf
        return row
    unbanned.next_logprobs = no_pad_ban
    greedy_changed = sum(unbanned.greedy(s, MAX_LEN) != o for s, o in chosen)
    beam_changed = sum([h.tokens for h in unbanned.beam_search(s, **BEAM)[0]] != [h.tokens for h in hs]
                       for s, hs in beam)
    return dict(variant=variant, spec=spec, config=config, shift=shift,
                ended=sum(len(o) < MAX_LEN for _, o in chosen),
                distinct=len({tuple(o) for _, o in chosen}),
                beam=" ".join(endings(h) for _, h in beam),
                pad_changed="%d of %d, %d of %d" % (greedy_changed, len(chosen), beam_changed, len(beam)),
                size=size_kb(out_dir))


README = """# fairseq fixtures: `fairseq-*`

Made by `/usr/bin/python3 tools/make_family_golden_fairseq.py` (its
`make(root)`; deterministic: numpy with fixed seeds; needs numpy, and torch to
write and read the `.pt`). The files and formats are those of `tests/golden/`
(`tests/golden/README.md`). For each variant of `tools/write-fairseq-checkpoint`:

- `fairseq/`: the original in fairseq's layout and names, as `fairseq-train
  --task translation` leaves it: `checkpoint_best.pt` (`torch.save` of a dict
  with `model`, the state dict by fairseq's names, e.g.
  `encoder.layers.0.self_attn.q_proj.weight`, `encoder.embed_positions.*`,
  `decoder.version`; and `args`, an `argparse.Namespace`, or `cfg`, an
  omegaconf `DictConfig` pickled under omegaconf's own class names, with
  `cfg.model` the legacy `argparse.Namespace` as fairseq stored it from
  October 2020 to March 2021; plus `optimizer_history`, `extra_state`), and
  the dictionaries `dict.SRC.txt` / `dict.TGT.txt` (`token count` lines, ids
  4.. after `<s>` 0, `<pad>` 1, `</s>` 2, `<unk>` 3; `madeupwordNNNN` padding
  to a multiple of 8; one `#fairseq:overwrite` line in
  `fairseq-learned-prenorm`'s target dictionary, which adds a second id for
  a token). Random seeded weights: the padding rows zero, norms with random
  signs, scaled attention and FFN outputs (so that outputs vary).
- `config.json`, `model.safetensors`, `vocab.src.txt`, `vocab.tgt.txt`: its
  conversion by `tools/converters/fairseq.py` (family `fairseq`: `bos_id` =
  `eos_id` = 2 with `decoder_start` "bos" (the decoder starts from `</s>`),
  `source_suffix` [2], `banned_target_ids` [1] (pad) in mode `log_probs`,
  `position_offset` 2 (pad + 1), positions `sinusoid_halves_t2t` or the
  learned tables `pos_embedding` / `decoder_pos_embedding`, LayerNorm eps
  1e-5, a tied or shared table stored once; F32).
- `score.in` / `score.expected`: `SRC<TAB>TGT` and the log-probability of each
  TGT token then of `</s>` (`%.9g`; fairseq's scorer bans nothing). Sources
  without `</s>` (tessera appends it) and without `<s>`, `<pad>`; one target
  is empty; some hold `<unk>` (3).
- `translate.in` / `translate.expected`: {n} sources (1 to 12 ids, no `</s>`,
  no pad, some `<unk>`) and `tessera translate -m DIR --max-len {max_len}`.
- `translate.beam.in` / `translate.beam.expected`: sources and
  `tessera translate -m DIR {beam_flags}`: 3 hypotheses per line, best first,
  `IDS<TAB>SCORE` pairs joined by TABs (SCORE: the log-probs summed, `</s>`
  included, over length^0.6, the length counting `</s>`; `%.9g`). The search is
  tessera's (`beam_search` of `tools/tessera_torch.py`, as ported in
  `tools/marian_reference.py`), run on the reference's rows.

The expectations come from `tools/fairseq_reference.py`: fairseq's
TransformerModel in numpy float64, reading the checkpoint by fairseq's names
with fairseq's semantics (see its docstring), not the converter's output.
The pad id is set to -inf after the log-softmax at every step of the search,
as fairseq's SequenceGenerator does; it also sets `</s>` to -inf at steps
below `min_len` (1 by default: no empty translation), the converted model's
`min_target_length` 1. Sentences whose greedy top-2 gap, or any beam decision (the beam
boundary, a `</s>` candidate, two ranks, the early stop), came within
{near_tie} of flipping were left out. fairseq's output layer has no bias:
the `</s>` row of the output table was moved along the last LayerNorm's bias
in steps (0.5 logits each) until 3 to 9 of the {n} greedy sentences stop at
`</s>`. The pad ban is exercised but rarely decides: the padding row of a
tied table stays zero (fairseq's `Embedding` zeroes it and training never
updates it), so pad's logit is always 0; `fairseq-learned-prenorm` lowers the
other logits (write-fairseq-checkpoint's `pad_lift`) so that pad sometimes
ranks first without the ban, but in no kept line (last-but-one column).

| fixture | original | converted | `</s>` shift | greedy stopped by `</s>` | beam endings (E: `</s>`, L: limit) | lines the pad ban changes (greedy, beam) | size |
|---|---|---|---|---|---|---|---|
{rows}
"""

DESCRIPTIONS = {
    "sinusoidal-postnorm": "`args` Namespace, arch `transformer`, sinusoidal positions "
                           "(`embed_positions._float_tensor`), post-norm, relu, "
                           "`share_all_embeddings` (joined dictionary, one table)",
    "learned-prenorm": "`cfg` DictConfig, arch `transformer_iwslt_de_en`, learned positions "
                       "(66 rows per side), pre-norm with final `layer_norm`, "
                       "`layernorm_embedding`, gelu, separate dictionaries, "
                       "`share_decoder_input_output_embed` (`decoder.output_projection.weight` "
                       "the same tensor)",
}


def write_readme(root, rows):
    lines = []
    for r in rows:
        spec, config = r["spec"], r["config"]
        lines.append("| fairseq-%s | %s; d %d, %d heads, ffn %d, %d+%d layers, vocab %d/%d | "
                     "%s%s, %s, %s | %+.1f | %d of %d (%d distinct) | %s | %s | %.0f KB |"
                     % (r["variant"], DESCRIPTIONS[r["variant"]], spec["dim"], spec["heads"],
                        spec["ffn"], spec["layers"], spec["layers"], config["src_vocab_size"],
                        config["tgt_vocab_size"],
                        "shared + tied" if config["share_embeddings"] else "tied",
                        ", position tables" if "learned" in r["variant"] else
                        ", `sinusoid_halves_t2t`",
                        "pre-norm" if config["norm_first"] else "post-norm", config["activation"],
                        r["shift"], r["ended"], N_SENTENCES, r["distinct"], r["beam"],
                        r["pad_changed"], r["size"]))
    text = README.format(n=N_SENTENCES, max_len=MAX_LEN, beam_flags=BEAM_FLAGS,
                         near_tie=NEAR_TIE, rows="\n".join(lines))
    with open(os.path.join(root, "README-fairseq.md"), "w", encoding="utf-8") as f:
        f.write(text)


def make(root, variants=None, check_search=False):
    """Writes ROOT/fairseq-<variant>/ for each variant and ROOT/README-fairseq.md."""
    os.makedirs(root, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for variant in variants or VARIANTS:
            rows.append(make_variant(root, variant, work, check_search))
    write_readme(root, rows)
    return rows


def main(argv):
    check = "--check-search" in argv
    argv = [a for a in argv if a != "--check-search"]
    root = argv[0] if argv else os.path.join(HERE, "..", "tests", "golden", "families")
    for r in make(root, check_search=check):
        print("fairseq-%s: shift %+.1f, %d/%d greedy by </s>, %d distinct, beam %s, pad ban %s, %.0f KB"
              % (r["variant"], r["shift"], r["ended"], N_SENTENCES, r["distinct"], r["beam"],
                 r["pad_changed"], r["size"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
