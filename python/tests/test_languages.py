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
