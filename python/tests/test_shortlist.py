"""Vocabulary shortlists from Python: the command's bits (its own output held to
PyTorch by test_golden's shortlist cases), the model directory's vmap.txt for
use_vmap=True as CTranslate2 takes it, and the refusals."""
import os
import shutil
import subprocess

import pytest
import tessera

from conftest import SRCDIR, TESSERA

GOLDEN = os.path.join(SRCDIR, "tests", "golden", "postnorm-silu-bf16")
CASES = os.path.join(GOLDEN, "shortlist")
VMAP = os.path.join(CASES, "vmap.txt")
LEX = os.path.join(CASES, "lex.s2t")


def sources():
    with open(os.path.join(CASES, "vmap-beam.in"), encoding="utf-8") as f:
        return [[int(t) for t in line.split()] for line in f]


def command(flags, lines):
    """`tessera translate` on the golden model: hypotheses as (ids, score text)."""
    out = subprocess.run([TESSERA, "translate", "-m", GOLDEN, "--ids", "--threads", "1"] + flags,
                         input="".join(" ".join(map(str, s)) + "\n" for s in lines).encode(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout.decode().split("\n")[:-1]


def as_lines(results):
    """The module's results as the command prints them with --n-best."""
    return ["\t".join("%s\t%.9g" % (" ".join(map(str, h)), s)
                      for h, s in zip(r.hypotheses, r.scores)) for r in results]


@pytest.mark.parametrize("kind", ["vmap", "lexical"])
def test_the_commands_bits(kind):
    src = sources()
    if kind == "vmap":
        translator = tessera.Translator(GOLDEN, threads=1, vmap=VMAP)
        flags = ["--vmap", VMAP]
    else:
        translator = tessera.Translator(GOLDEN, threads=1, shortlist=LEX, shortlist_first=6,
                                        shortlist_best=2, shortlist_threshold=0.05)
        flags = ["--shortlist", LEX, "--shortlist-first", "6", "--shortlist-best", "2",
                 "--shortlist-threshold", "0.05"]
    search = ["--beam", "4", "--n-best", "2", "--max-len", "15"]
    got = translator.translate_batch(src, beam_size=4, num_hypotheses=2, max_decoding_length=15,
                                     return_scores=True, max_batch_size=5)
    assert as_lines(got) == command(flags + search, src)
    plain = tessera.Translator(GOLDEN, threads=1).translate_batch(
        src, beam_size=4, num_hypotheses=2, max_decoding_length=15, return_scores=True)
    assert as_lines(plain) != as_lines(got), "the shortlist changed nothing"


def test_use_vmap_reads_the_directorys(tmp_path):
    model = tmp_path / "model"
    shutil.copytree(GOLDEN, model, ignore=shutil.ignore_patterns("shortlist", "options"))
    src = sources()
    translator = tessera.Translator(str(model), threads=1)
    with pytest.raises(ValueError, match="no vmap.txt"):
        translator.translate_batch(src, use_vmap=True)
    shutil.copy(VMAP, model / "vmap.txt")
    translator = tessera.Translator(str(model), threads=1)
    got = translator.translate_batch(src, use_vmap=True, max_decoding_length=20,
                                     return_scores=True)
    assert as_lines(got) == command(["--vmap", VMAP, "--max-len", "20", "--n-best", "1"], src)
    plain = translator.translate_batch(src, max_decoding_length=20, return_scores=True)
    assert as_lines(plain) != as_lines(got)
    # A vmap.txt that cannot be read: the translator still loads, and says why at use_vmap.
    (model / "vmap.txt").write_text("no tab on this line\n")
    translator = tessera.Translator(str(model), threads=1)
    assert translator.translate_batch(src[:1], max_decoding_length=3)
    with pytest.raises(ValueError, match="vmap.txt: line 1 has no tab"):
        translator.translate_batch(src, use_vmap=True)


def test_refusals():
    with pytest.raises(ValueError, match="give one of them"):
        tessera.Translator(GOLDEN, vmap=VMAP, shortlist=LEX)
    with pytest.raises(ValueError, match="need shortlist=PATH"):
        tessera.Translator(GOLDEN, shortlist_best=3)
    with pytest.raises(ValueError, match="shortlist_threshold"):
        tessera.Translator(GOLDEN, shortlist=LEX, shortlist_threshold=2.0)
    with pytest.raises(ValueError, match="nowhere.txt"):
        tessera.Translator(GOLDEN, vmap="/nowhere.txt")
    translator = tessera.Translator(GOLDEN, vmap=VMAP)
    with pytest.raises(ValueError, match="its own shortlist"):
        translator.translate_batch(sources(), use_vmap=True)
