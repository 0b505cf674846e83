"""Builds the Hugging Face NLLB-200, M2M100 and mBART fixtures, tests/golden/families/hf-nllb-*,
hf-m2m100-* and hf-mbart*.

make(root): for each variant of tools/write-hf-m2m100-checkpoint, writes the
original in transformers' layout into ROOT/hf-<variant>/hf/, converts it with
tools/converters/hf_m2m100.py into ROOT/hf-<variant>/, and writes what `tessera`
must print for it with the variant's languages (languages.flags: the
--source-lang and --target-lang every run of the fixture takes), computed by
tools/hf_m2m100_reference.py (numpy float64 from the original's own names and
transformers' semantics, never from the converter's output):

  score.in / score.expected                SRC<TAB>TGT, log-probs (%.9g)
  translate.in / translate.expected        greedy, --max-len 20
  translate.beam.in / translate.beam.expected
      --beam 4 --n-best 3 --length-penalty 0.6 --max-len 15

Sources and targets are the tokenizer's pieces' ids, written without the
language token and </s> (tessera adds them as the model's config says). Sentences
whose greedy top-2 gap, or any beam decision, comes within NEAR_TIE of flipping
are left out. </s> is made likelier in steps of 0.5 (mBART: its final_logits_bias;
M2M100 and NLLB, which have none: the decoder's final norm moved along </s>'s row)
until 3 to 9 of the 12 greedy sentences stop at </s>. Deterministic. Touches only
ROOT/hf-nllb-*, ROOT/hf-m2m100-*, ROOT/hf-mbart* and ROOT/README-hf-m2m100.md.

    /usr/bin/python3 tools/make_family_golden_hf_m2m100.py [ROOT]   (default tests/golden/families)
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

from converters import hf_m2m100 as convert_hf_m2m100  # noqa: E402
import hf_m2m100_reference as ref  # noqa: E402
from family_golden import (  # noqa: E402
    BEAM, BEAM_SENTENCES, MAX_LEN, N_CANDIDATES, N_SENTENCES, NEAR_TIE, SCORE_LENGTHS,
    distinct_first, endings, ids_text, load_script, write_lines)

writer = load_script("write-hf-m2m100-checkpoint")

# variant: (source language, target language) the fixture is made and run with
LANGUAGES = {"nllb-f16": ("eng_Latn", "fra_Latn"), "nllb-legacy-f32": ("spa_Latn", "eng_Latn"),
             "m2m100-f32": ("de", "en"), "mbart50-f32": ("en_XX", "ro_RO"),
             "mbart-cc25-f16": ("ro_RO", "en_XX")}
EOS_SHIFTS = [0.5 * k for k in range(40)]
TEXT_SENTENCES = 6
BEAM_CANDIDATES = 40
FIRST_PIECE = 4                                 # after <s> <pad> </s> <unk>
PIECES = writer.SPM_PIECES - 3                  # the tokenizer's pieces (no specials)
UNK = 3


def sentence(rng, length, with_unk):
    ids = [int(t) for t in rng.integers(FIRST_PIECE, FIRST_PIECE + PIECES, size=length)]
    if with_unk and ids:
        ids[int(rng.integers(0, length))] = UNK
    return ids


def candidates(rng, count):
    return [sentence(rng, int(rng.integers(1, 13)), i % 4 == 3) for i in range(count)]


def tune_eos(variant, work):
    """(shift, chosen greedy pairs): the smallest </s> shift giving 3..9 stops."""
    spec = writer.VARIANTS[variant]
    sources = candidates(np.random.default_rng([spec["seed"], 1]), N_CANDIDATES)
    for shift in EOS_SHIFTS:
        directory = os.path.join(work, "%s-%g" % (variant, shift))
        writer.write_checkpoint(directory, variant, eos_bias=shift)
        model = ref.M2M100Reference(directory, *LANGUAGES[variant])
        usable = []
        for src in sources:
            out, margin = model.greedy_with_margin(src, MAX_LEN)
            if margin >= NEAR_TIE:
                usable.append((src, out))
        chosen = distinct_first(usable, lambda p: tuple(p[1]), N_SENTENCES)
        if chosen and 3 <= sum(len(o) < MAX_LEN for _, o in chosen) <= N_SENTENCES - 3:
            return shift, chosen
    raise RuntimeError("%s: no </s> shift gives a mix of stops" % variant)


def pick_beam(model, rng, variant):
    usable = []
    for src in candidates(rng, BEAM_CANDIDATES):
        hypotheses, margin = model.beam_search(src, **BEAM)
        if margin > NEAR_TIE:
            usable.append((src, hypotheses))
    chosen = distinct_first(usable, lambda p: endings(p[1]), BEAM_SENTENCES)
    if chosen is None:
        raise RuntimeError("%s: too few beam sentences without a near-tie" % variant)
    return chosen


def text_cases(model, hf_dir, rng):
    """(text, its greedy translation's text) for sentences of made-up words whose
    translation holds only the tokenizer's pieces and no near-tie."""
    encode, decode = model.text_pipeline(hf_dir)
    cases = []
    for _ in range(60):
        words = writer.WORDS
        text = " ".join(words[i] for i in rng.integers(0, len(words), int(rng.integers(1, 6))))
        out, margin = model.greedy_with_margin(encode(text), MAX_LEN)
        translated = decode(out)
        if margin >= NEAR_TIE and translated is not None and (text, translated) not in cases:
            cases.append((text, translated))
        if len(cases) == TEXT_SENTENCES:
            return cases
    raise RuntimeError("too few text sentences")


def make_variant(root, variant, work):
    spec = writer.VARIANTS[variant]
    shift, chosen = tune_eos(variant, work)
    out_dir = os.path.join(root, "hf-" + variant)
    if os.path.isdir(out_dir):
        shutil.rmtree(out_dir)
    hf_dir = os.path.join(out_dir, "hf")
    writer.write_checkpoint(hf_dir, variant, eos_bias=shift)
    config = convert_hf_m2m100.convert(hf_dir, out_dir, note=lambda _: None, dtype=spec["dtype"])
    source, target = LANGUAGES[variant]
    model = ref.M2M100Reference(hf_dir, source, target)
    write_lines(os.path.join(out_dir, "languages.flags"),
                ["--source-lang %s --target-lang %s" % (source, target)])
    rng = np.random.default_rng([spec["seed"], 2])
    pairs = [(sentence(rng, s, i % 3 == 1), sentence(rng, t, i % 3 == 0))
             for i, (s, t) in enumerate(SCORE_LENGTHS)]
    write_lines(os.path.join(out_dir, "score.in"),
                [ids_text(s) + "\t" + ids_text(t) for s, t in pairs])
    write_lines(os.path.join(out_dir, "score.expected"),
                [ref.format_logprobs(model.score(s, t)) for s, t in pairs])
    write_lines(os.path.join(out_dir, "translate.in"), [ids_text(s) for s, _ in chosen])
    write_lines(os.path.join(out_dir, "translate.expected"), [ids_text(o) for _, o in chosen])
    beam = pick_beam(model, np.random.default_rng([spec["seed"], 3]), variant)
    write_lines(os.path.join(out_dir, "translate.beam.in"), [ids_text(s) for s, _ in beam])
    write_lines(os.path.join(out_dir, "translate.beam.expected"),
                [ref.format_nbest(h) for _, h in beam])
    text = text_cases(model, hf_dir, np.random.default_rng([spec["seed"], 4]))
    write_lines(os.path.join(out_dir, "translate.text.in"), [t for t, _ in text])
    write_lines(os.path.join(out_dir, "translate.text.expected"), [o for _, o in text])
    return dict(variant=variant, spec=spec, config=config, shift=shift, languages=(source, target),
                ended=sum(len(o) < MAX_LEN for _, o in chosen),
                distinct=len({tuple(o) for _, o in chosen}),
                beam=" ".join(endings(h) for _, h in beam))


README = """# Hugging Face NLLB-200, M2M100 and mBART fixtures: `hf-nllb-*`, `hf-m2m100-*`, `hf-mbart*`

Made by `/usr/bin/python3 tools/make_family_golden_hf_m2m100.py` (deterministic:
numpy with fixed seeds and SentencePiece trained on one thread; needs numpy and
python3-sentencepiece, not torch). The files and formats are those of
`tests/golden/` (`tests/golden/README.md`). For each variant of
`tools/write-hf-m2m100-checkpoint`:

- `hf/`: the original in transformers' layout and names, as
  facebook/nllb-200-distilled-600M, facebook/m2m100_418M,
  facebook/mbart-large-50-many-to-many-mmt and facebook/mbart-large-cc25 are on
  the Hub: `config.json` (`model_type` "m2m_100" or "mbart"),
  `generation_config.json`, `model.safetensors` with `model.shared.weight` alone
  for the three tied tables (mBART: its learned `embed_positions`, its
  `layernorm_embedding`s and `final_logits_bias` too), `sentencepiece.bpe.model`,
  `tokenizer_config.json` (the language codes, NLLB's `legacy_behaviour`),
  M2M100's `vocab.json` (its pieces in an order of its own). Random seeded weights.
- `config.json`, `model.safetensors`, `vocab.src.txt`, `vocab.tgt.txt`,
  `shared.spm`: its conversion by `tools/converters/hf_m2m100.py` (family `hf-nllb`,
  `hf-m2m100`, `hf-mbart50` or `hf-mbart-cc25`: pre-norm with final norms,
  positions `sinusoid_halves_t2t` from row 2 (mBART: its tables, from row 2, and
  the embedding norms), `bos_id` 2 (`</s>`, decoder_start_token_id),
  `source_suffix` [2], `source_language` "prefix" (NLLB's legacy mode and
  mBART-cc25: "suffix"), `target_language` "forced" (mBART-cc25: "start", the
  decoder fed the language instead of `</s>`), the languages with their ids; F16
  variants stay F16).
- `languages.flags`: the `--source-lang` and `--target-lang` every run of the
  fixture takes (test_golden adds them).
- `score.in` / `score.expected`: `SRC<TAB>TGT` (ids of the tokenizer's pieces, no
  language token, no `</s>`) and the log-probability of each TGT token then of
  `</s>` (`%.9g`), the decoder fed `</s>`, the target language, TGT (mBART-cc25:
  the language, TGT); one target
  is empty; some hold `<unk>` (3).
- `translate.in` / `translate.expected`: {n} sources and
  `tessera translate -m DIR --max-len {max_len}` with the languages: the tokens
  after the forced language token.
- `translate.text.in` / `translate.text.expected`: {text_n} lines of text and
  `tessera translate -m DIR --max-len {max_len}` of them, text in and out:
  the family's tokenizer (SentencePiece, then NLLB's and mBART's id offset or
  M2M100's `vocab.json`), the reference's greedy ids, and their pieces decoded
  without the special tokens (`tests/text-multilingual.sh`; lines whose
  translation holds a language code, `<unk>` or another special token are left
  out: transformers' `skip_special_tokens` drops them, tessera writes `<unk>` as
  SentencePiece's unknown sign).
- `translate.beam.in` / `translate.beam.expected`: sources and
  `tessera translate -m DIR --beam 4 --n-best 3 --length-penalty 0.6 --max-len 15`:
  3 hypotheses per line, best first, `IDS<TAB>SCORE` (the log-probs summed, `</s>`
  included, over length^0.6, the length counting `</s>` and not the language
  token, whose log-probability is 0: ForcedBOSLogitsProcessor leaves it the only
  finite score). The search is tessera's (`marian_reference.TesseraSearch`).

The expectations come from `tools/hf_m2m100_reference.py`: M2M100ForConditionalGeneration
and MBartForConditionalGeneration in numpy float64 with the tokenizers' special
tokens (NllbTokenizer, its legacy mode, M2M100Tokenizer, MBart50Tokenizer,
MBartTokenizer), reading the original by transformers' names (see its docstring). Sentences whose greedy top-2 gap, or any beam decision, came within
{near_tie} of flipping were left out; `</s>` was made likelier in steps of 0.5
(mBART: its `final_logits_bias`; M2M100 and NLLB, which have none: the decoder's
final norm moved along `</s>`'s row) until 3 to 9 of the {n} greedy sentences stop
at `</s>`.

| fixture | original | languages | `</s>` shift | greedy stopped by `</s>` | beam endings (E: `</s>`, L: limit) |
|---|---|---|---|---|---|
{rows}
"""


KINDS = {"nllb": "NLLB", "m2m100": "M2M100", "mbart50": "mBART-50", "mbart-cc25": "mBART-cc25"}


def write_readme(root, rows):
    lines = []
    for r in rows:
        s = r["spec"]
        lines.append("| hf-%s | %s%s, %s; d %d, %d heads, ffn %d, %d+%d layers, vocab %d, "
                     "languages %s | `--source-lang %s --target-lang %s` | %+.1f | %d of %d "
                     "(%d distinct) | %s |"
                     % (r["variant"], KINDS[s["kind"]],
                        " legacy" if s["legacy"] else "", s["dtype"].upper(), s["d"], s["heads"],
                        s["ffn"], s["enc_layers"], s["dec_layers"], r["config"]["src_vocab_size"],
                        ", ".join(s["langs"]), r["languages"][0], r["languages"][1], r["shift"],
                        r["ended"], N_SENTENCES, r["distinct"], r["beam"]))
    with open(os.path.join(root, "README-hf-m2m100.md"), "w", encoding="utf-8") as f:
        f.write(README.format(n=N_SENTENCES, max_len=MAX_LEN, near_tie=NEAR_TIE,
                              text_n=TEXT_SENTENCES,
                              rows="\n".join(lines)))


def make(root, variants=None):
    os.makedirs(root, exist_ok=True)
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for variant in variants or sorted(LANGUAGES):
            rows.append(make_variant(root, variant, work))
    write_readme(root, rows)
    return rows


def main(argv):
    root = argv[0] if argv else os.path.join(HERE, "..", "tests", "golden", "families")
    for r in make(root):
        print("hf-%s: shift %+.1f, %d/%d greedy by </s>, %d distinct, beam %s"
              % (r["variant"], r["shift"], r["ended"], N_SENTENCES, r["distinct"], r["beam"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
