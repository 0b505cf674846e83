"""A multilingual model's languages through the module against the command
on the same sentences: source_lang and target_lang of translate_batch,
score_batch and encode_batch are --source-lang and --target-lang, and a
missing language is a ValueError naming the keyword. The shipped model,
given a language table (two of its own tokens) in a copy of its directory."""
import json
import os
import shutil
import subprocess

import pytest
import tessera

from conftest import MODEL, TESSERA


@pytest.fixture(scope="module")
def multilingual(tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("multilingual"))
    for name in os.listdir(MODEL):
        shutil.copy(os.path.join(MODEL, name), directory)
    path = os.path.join(directory, "config.json")
    with open(path, encoding="utf-8") as f:
        config = json.load(f)
    config.update(source_language="prefix", target_language="forced",
                  languages={"aa_Latn": 20, "bb_Latn": 21})
    with open(path, "w", encoding="utf-8") as f:
        json.dump(config, f)
    # the target vocabulary spells the language tokens as a converted model's does
    vocab = os.path.join(directory, "vocab.tgt.txt")
    with open(vocab, encoding="utf-8") as f:
        lines = f.read().split("\n")
    lines[20:22] = ["aa_Latn", "bb_Latn"]
    with open(vocab, "w", encoding="utf-8") as f:
        f.write("\n".join(lines))
    return directory


def command(directory, subcommand, flags, lines):
    out = subprocess.run([TESSERA, subcommand, "-m", directory, "--threads", "1"] + flags,
                         input="".join(line + "\n" for line in lines).encode(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout.decode().split("\n")[:-1]


def test_translate_and_score_equal_command(multilingual, texts):
    translator = tessera.Translator(multilingual, threads=1)
    flags = ["--source-lang", "aa_Latn", "--target-lang", "bb_Latn"]
    got = translator.translate_batch(texts, beam_size=2, source_lang="aa_Latn",
                                     target_lang="bb_Latn")
    assert [r.hypotheses[0] for r in got] == command(multilingual, "translate",
                                                     flags + ["--beam", "2"], texts)
    targets = [r.hypotheses[0] for r in got]
    scores = translator.score_batch(texts, targets, source_lang="aa_Latn", target_lang="bb_Latn")
    want = command(multilingual, "score", flags,
                   [s + "\t" + t for s, t in zip(texts, targets)])
    assert [" ".join("%.9g" % x for x in r.log_probs) for r in scores] == want


def test_encode_equals_command(multilingual, texts):
    encoder = tessera.Encoder(multilingual, threads=1)
    got = encoder.encode_batch(texts[:5], pooling="mean", source_lang="bb_Latn")
    want = command(multilingual, "encode", ["--pool", "mean", "--source-lang", "bb_Latn"],
                   texts[:5])
    assert [" ".join("%.9g" % v for v in memoryview(a).cast("B").cast("f")) for a in got] == want


def test_missing_or_unknown_language_names_the_keyword(multilingual, texts):
    translator = tessera.Translator(multilingual, threads=1)
    with pytest.raises(ValueError, match="^target_lang: the model needs a target language"):
        translator.translate_batch(texts[:1], source_lang="aa_Latn")
    with pytest.raises(ValueError, match="^source_lang 'aa' is not one of the model's 2"):
        translator.score_batch(texts[:1], texts[:1], source_lang="aa", target_lang="bb_Latn")


def test_target_prefix_names_the_language_as_ctranslate2(multilingual, texts):
    """target_prefix=[["bb_Latn"], ...] (CTranslate2's form, pieces or ids) is
    target_lang="bb_Latn"; a longer prefix keeps its other tokens; prefixes that
    disagree, or a language in only some of them, are refused."""
    translator = tessera.Translator(multilingual, threads=1)
    named = translator.translate_batch(texts, beam_size=2, source_lang="aa_Latn",
                                       target_lang="bb_Latn", return_scores=True)
    for prefix in ([["bb_Latn"]] * len(texts), [[21]] * len(texts)):
        got = translator.translate_batch(texts, prefix, beam_size=2, source_lang="aa_Latn",
                                         return_scores=True)
        assert [(r.hypotheses, r.scores) for r in got] == \
            [(r.hypotheses, r.scores) for r in named]
    first = [r.hypotheses[0].split(" ")[0] for r in named[:3]]
    longer = translator.translate_batch(texts[:3], [["bb_Latn", w] for w in first],
                                        source_lang="aa_Latn")
    want = translator.translate_batch(texts[:3], [[w] for w in first], source_lang="aa_Latn",
                                      target_lang="bb_Latn")
    assert [r.hypotheses for r in longer] == [r.hypotheses for r in want]
    with pytest.raises(ValueError, match="^target_prefix: sentence 1 starts with aa_Latn, an "
                                         "earlier one with bb_Latn"):
        translator.translate_batch(texts[:2], [["bb_Latn"], ["aa_Latn"]], source_lang="aa_Latn")
    with pytest.raises(ValueError, match="^target_prefix: 1 of 2 prefixes start with"):
        translator.translate_batch(texts[:2], [["bb_Latn"], []], source_lang="aa_Latn")
    with pytest.raises(ValueError, match="^target_prefix starts with bb_Latn but target_lang"):
        translator.translate_batch(texts[:1], [["bb_Latn"]], source_lang="aa_Latn",
                                   target_lang="aa_Latn")
