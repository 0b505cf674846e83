"""Builds the Hugging Face MarianMT fixtures, tests/golden/families/hf-marian-*.

make(root): for each variant of tools/write-hf-marian-checkpoint, writes the
original in transformers' layout into ROOT/hf-marian-<variant>/hf-marian/,
converts it with tools/converters/hf_marian.py into ROOT/hf-marian-<variant>/,
and writes what `tessera` must print for it, computed by
tools/hf_marian_reference.py (numpy float64 from the original's own names and
transformers' semantics, never from the converter's output):

  score.in / score.expected                SRC<TAB>TGT, log-probs (%.9g)
  translate.in / translate.expected        greedy, --max-len 20
  translate.beam.in / translate.beam.expected
      --beam 4 --n-best 3 --length-penalty 0.6 --max-len 15

Sources are written without </s> (tessera appends it: source_suffix).
Sentences whose greedy top-2 gap, or any beam decision, comes within NEAR_TIE
of flipping are left out. The </s> entry of final_logits_bias is raised in
steps of 0.5 until 3 to 9 of the 12 greedy sentences stop at </s>.
Deterministic. Touches only ROOT/hf-marian-* and ROOT/README-hf-marian.md.

    /usr/bin/python3 tools/make_family_golden_hf_marian.py [ROOT]   (default tests/golden/families)
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

from converters import hf_marian as convert_hf_marian  # noqa: E402
import hf_marian_reference as ref  # noqa: E402
from family_golden import (  # noqa: E402
    BEAM, BEAM_FLAGS, BEAM_SENTENCES, MAX_LEN, N_CANDIDATES, N_SENTENCES, NEAR_TIE, SCORE_LENGTHS,
    distinct_first, endings, ids_text, load_script, size_kb, write_lines)


writer = load_script("write-hf-marian-checkpoint")

VARIANTS = ["tied-f16", "separate-f32", "tied-gelu-f16", "untied-f16"]
EOS_SHIFTS = [0.5 * k for k in range(25)]
BEAM_CANDIDATES = 40


def source_ids(rng, vocab_size, length, with_unk):
    """Ids 2..V-2 (no </s> 0, no <pad> V-1), maybe one <unk> (1)."""
    ids = [int(t) for t in rng.integers(2, vocab_size - 1, size=length)]
    if with_unk:
        ids[int(rng.integers(0, length))] = 1
    return ids


def candidates(rng, vocab_size, count):
    return [source_ids(rng, vocab_size, int(rng.integers(1, 13)), i % 4 == 3)
            for i in range(count)]


def pick_greedy(model, sources):
    """N_SENTENCES (source, output) without a near-tie, distinct outputs first, in
    candidate order; None when too few."""
    usable = []
    for src in sources:
        out, margin = model.greedy_with_margin(src, MAX_LEN)
        if margin >= NEAR_TIE:
            usable.append((src, out))
    return distinct_first(usable, lambda pair: tuple(pair[1]), N_SENTENCES)


def tune_eos(variant, work):
    """(shift, chosen greedy pairs): the smallest </s> bias shift giving 3..9 stops."""
    spec = writer.VARIANTS[variant]
    sources = candidates(np.random.default_rng([spec["seed"], 1]), spec["src_vocab"],
                         N_CANDIDATES)
    for shift in EOS_SHIFTS:
        directory = os.path.join(work, "%s-%g" % (variant, shift))
        writer.write_checkpoint(directory, variant, eos_bias=spec["eos_bias"] + shift)
        chosen = pick_greedy(ref.HFMarianReference(directory), sources)
        if chosen is None:
            continue
        ended = sum(len(out) < MAX_LEN for _, out in chosen)
        if 3 <= ended <= N_SENTENCES - 3:
            return shift, chosen
    raise RuntimeError("%s: no </s> bias shift gives a mix of stops" % variant)


def pick_beam(model, rng, vocab_size, variant):
    usable = []
    for src in candidates(rng, vocab_size, BEAM_CANDIDATES):
        hypotheses, margin = model.beam_search(src, **BEAM)
        if margin > NEAR_TIE:
            usable.append((src, hypotheses))
    chosen = distinct_first(usable, lambda pair: endings(pair[1]), BEAM_SENTENCES)
    if chosen is None:
        raise RuntimeError("%s: too few beam sentences without a near-tie" % variant)
    return chosen


def score_pairs(rng, src_vocab, tgt_vocab):
    """Targets hold no <pad> (banned: -inf in mode logits); some hold <unk>."""
    pairs = []
    for i, (src_len, tgt_len) in enumerate(SCORE_LENGTHS):
        src = source_ids(rng, src_vocab, src_len, i % 3 == 1)
        tgt = [int(t) for t in rng.integers(1, tgt_vocab - 1, size=tgt_len)]
        if tgt and i % 3 == 0:
            tgt[int(rng.integers(0, tgt_len))] = 1
        pairs.append((src, tgt))
    return pairs


def make_variant(root, variant, work):
    """Writes ROOT/hf-marian-<variant>/; returns a row of facts for the README."""
    spec = writer.VARIANTS[variant]
    shift, chosen = tune_eos(variant, work)
    out_dir = os.path.join(root, "hf-marian-" + variant)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    hf_dir = os.path.join(out_dir, "hf-marian")
    writer.write_checkpoint(hf_dir, variant, eos_bias=spec["eos_bias"] + shift)
    notes = []
    config = convert_hf_marian.convert(hf_dir, out_dir, note=notes.append, dtype=spec["dtype"])
    model = ref.HFMarianReference(hf_dir)

    pairs = score_pairs(np.random.default_rng([spec["seed"], 2]), spec["src_vocab"],
                        spec["tgt_vocab"])
    write_lines(os.path.join(out_dir, "score.in"),
                [ids_text(s) + "\t" + ids_text(t) for s, t in pairs])
    write_lines(os.path.join(out_dir, "score.expected"),
                [ref.format_logprobs(model.score(s, t)) for s, t in pairs])
    write_lines(os.path.join(out_dir, "translate.in"), [ids_text(s) for s, _ in chosen])
    write_lines(os.path.join(out_dir, "translate.expected"), [ids_text(o) for _, o in chosen])
    beam = pick_beam(model, np.random.default_rng([spec["seed"], 3]), spec["src_vocab"], variant)
    write_lines(os.path.join(out_dir, "translate.beam.in"), [ids_text(s) for s, _ in beam])
    write_lines(os.path.join(out_dir, "translate.beam.expected"),
                [ref.format_nbest(h) for _, h in beam])
    return dict(variant=variant, spec=spec, config=config, shift=shift,
                ended=sum(len(o) < MAX_LEN for _, o in chosen),
                distinct=len({tuple(o) for _, o in chosen}),
                beam=" ".join(endings(h) for _, h in beam), size=size_kb(out_dir))


README = """# Hugging Face MarianMT fixtures: `hf-marian-*`

Made by `/usr/bin/python3 tools/make_family_golden_hf_marian.py` (its
`make(root)`; deterministic: numpy with fixed seeds; needs numpy, and torch for
the search borrowed from `tools/tessera_torch.py`). The files and formats are
those of `tests/golden/` (`tests/golden/README.md`). For each variant of
`tools/write-hf-marian-checkpoint`:

- `hf-marian/`: the original in transformers' layout and names, as an OPUS-MT
  model on the Hub: `config.json` (`model_type` "marian" and the keys a real
  OPUS-MT config has), `generation_config.json` (`bad_words_ids` [[pad]],
  `decoder_start_token_id` = pad, ...), `model.safetensors` (written with
  numpy), `vocab.json` (piece -> id: `</s>` 0, `<unk>` 1, `<pad>` last; some
  pieces need JSON escapes or are not ASCII), `target_vocab.json` for separate
  vocabularies, `tokenizer_config.json`. No `.spm` files (tessera never reads
  them). Random seeded weights: norms with random signs (a tied output layer
  would otherwise repeat the input token), a larger cross-attention.
- `config.json`, `model.safetensors`, `vocab.src.txt`, `vocab.tgt.txt`: its
  conversion by `tools/converters/hf_marian.py` (family `hf-marian`: positions
  `sinusoid_halves`, LayerNorm eps 1e-5, `bos_id` = `decoder_start_token_id`
  (the pad id) with `decoder_start` "bos", `source_suffix` [0],
  `banned_target_ids` [pad], a tied or shared table stored once, an untied
  `lm_head.weight` (`tie_word_embeddings` false) written as
  `generator.weight`; F16 variants are converted to F16, which keeps every
  value).
- `score.in` / `score.expected`: `SRC<TAB>TGT` and the log-probability of each
  TGT token then of `</s>` (`%.9g`). Sources without `</s>` (tessera appends
  it); one target is empty; some hold `<unk>` (1); none holds the pad id.
- `translate.in` / `translate.expected`: {n} sources (1 to 12 ids, no `</s>`,
  no pad, some `<unk>`) and `tessera translate -m DIR --max-len {max_len}`.
- `translate.beam.in` / `translate.beam.expected`: sources and
  `tessera translate -m DIR {beam_flags}`: 3 hypotheses per line, best first,
  `IDS<TAB>SCORE` pairs joined by TABs (SCORE: the log-probs summed, `</s>`
  included, over length^0.6, the length counting `</s>`; `%.9g`). The search is
  `beam_search` of `tools/tessera_torch.py`, run on the reference's rows.

The expectations come from `tools/hf_marian_reference.py`: MarianMTModel in
numpy float64, reading the original's safetensors by transformers' names with
transformers' semantics (see its docstring), not the converter's output. The
pad id is banned in the search's free choices: after the log-softmax
(`banned_target_ids_mode` "log_probs", transformers >= 4.32 with
NoBadWordsLogitsProcessor) for the variants whose `generation_config.json`
has no `renormalize_logits`; before it ("logits": the log-softmax over the
other ids; `score` is the forward pass, unbanned, in both modes) for `hf-marian-tied-gelu-f16`, whose
`generation_config.json` sets `renormalize_logits` true (transformers then
renormalises after the ban, as transformers before 4.32 did for every Marian
model). Greedy takes the argmax of what is not banned either way. Sentences
whose greedy top-2 gap, or any beam decision (the beam boundary, a `</s>`
candidate, two ranks, the early stop), came within {near_tie} of flipping were
left out. The `</s>` entry of `final_logits_bias` was raised in steps of 0.5
until 3 to 9 of the {n} greedy sentences stop at `</s>`.

| fixture | original | converted | `</s>` bias shift | greedy stopped by `</s>` | beam endings (E: `</s>`, L: limit) | size |
|---|---|---|---|---|---|---|
{rows}
"""

DESCRIPTIONS = {
    "tied-f16": "F16, one `model.shared.weight` (no tied copies, no position tables), swish, "
                "pad row zero",
    "separate-f32": "F32, `share_encoder_decoder_embeddings` false (encoder/decoder tables), "
                    "`lm_head.weight` equal to the decoder's, `embed_positions.weight` tables "
                    "stored, relu, target pad 45 (source `<pad>` 57)",
    "tied-gelu-f16": "F16, names without `model.`, `model.shared` as `shared.weight`, gelu, "
                     "`renormalize_logits` true",
    "untied-f16": "F16, `tie_word_embeddings` false: one `model.shared.weight` (one "
                  "vocabulary) and an independent `lm_head.weight`, swish, pad row zero",
}

# (share_embeddings, tie_output_projection) of the conversion
TABLES = {(True, True): "shared + tied", (False, True): "tied",
          (True, False): "shared, untied (`generator.weight`)", (False, False): "untied"}


def write_readme(root, rows):
    lines = []
    for r in rows:
        spec, config = r["spec"], r["config"]
        lines.append("| hf-marian-%s | %s; d %d, %d heads, ffn %d, %d+%d layers, vocab %d/%d | "
                     "%s, %s, `banned_target_ids` %s %s, %s | %+.1f | %d of %d (%d distinct) | "
                     "%s | %.0f KB |"
                     % (r["variant"], DESCRIPTIONS[r["variant"]], spec["d"], spec["heads"],
                        spec["ffn"], spec["enc_layers"], spec["dec_layers"], spec["src_vocab"],
                        spec["tgt_vocab"], spec["dtype"].upper(),
                        TABLES[config["share_embeddings"], config["tie_output_projection"]],
                        config["banned_target_ids"], config["banned_target_ids_mode"],
                        config["activation"], r["shift"], r["ended"], N_SENTENCES, r["distinct"],
                        r["beam"], r["size"]))
    text = README.format(n=N_SENTENCES, max_len=MAX_LEN, beam_flags=BEAM_FLAGS,
                         near_tie=NEAR_TIE, rows="\n".join(lines))
    with open(os.path.join(root, "README-hf-marian.md"), "w", encoding="utf-8") as f:
        f.write(text)


def make(root, variants=None):
    """Writes ROOT/hf-marian-<variant>/ for each variant and ROOT/README-hf-marian.md."""
    os.makedirs(root, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for variant in variants or VARIANTS:
            rows.append(make_variant(root, variant, work))
    write_readme(root, rows)
    return rows


def main(argv):
    root = argv[0] if argv else os.path.join(HERE, "..", "tests", "golden", "families")
    for r in make(root):
        print("hf-marian-%s: shift %+.1f, %d/%d greedy by </s>, %d distinct, beam %s, %.0f KB"
              % (r["variant"], r["shift"], r["ended"], N_SENTENCES, r["distinct"], r["beam"],
                 r["size"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
