"""translate_batch against `tessera translate` on the same input: every
decoding option, each sentence form, the same bits (scores as the command
prints them, %.9g)."""
import pytest

from conftest import run_lines


def cli_line(result, form, with_scores, with_alignments):
    """A result as the command writes its line."""
    parts = []
    for k, hyp in enumerate(result.hypotheses):
        s = hyp if form == "text" else " ".join(str(x) for x in hyp)
        if with_scores:
            s += "\t%.9g" % result.scores[k]
        if with_alignments:
            s += "\t" + " ".join("%d-%d" % (a, j) for j, a in enumerate(result.alignments[k]))
        parts.append(s)
    return "\t".join(parts)


# (translate_batch keywords, the command's flags)
CASES = [
    ({}, []),
    ({"beam_size": 4}, ["--beam", "4"]),
    ({"beam_size": 4, "num_hypotheses": 3, "length_penalty": 0.6, "return_scores": True},
     ["--beam", "4", "--n-best", "3", "--length-penalty", "0.6"]),
    ({"sampling_topk": 5, "sampling_topp": 0.9, "sampling_temperature": 1.7, "seed": 7,
      "return_scores": True},
     ["--sampling-topk", "5", "--sampling-topp", "0.9", "--sampling-temperature", "1.7",
      "--seed", "7", "--n-best", "1"]),
    ({"sampling_topk": 0, "seed": 2**64 - 1}, ["--sampling-topk", "0", "--seed", str(2**64 - 1)]),
    ({"min_decoding_length": 6, "max_decoding_length": 9, "return_scores": True},
     ["--min-len", "6", "--max-len", "9", "--n-best", "1"]),
    ({"max_decoding_length": 2}, ["--max-len", "2"]),
    ({"no_repeat_ngram_size": 1, "beam_size": 2}, ["--no-repeat-ngram", "1", "--beam", "2"]),
    ({"repetition_penalty": 3.0, "return_scores": True},
     ["--repetition-penalty", "3", "--n-best", "1"]),
    ({"disable_unk": True, "end_token": 10, "return_scores": True},
     ["--disable-unk", "--end-token", "10", "--n-best", "1"]),
    ({"return_alignments": True, "beam_size": 2, "num_hypotheses": 2, "return_scores": True},
     ["--alignments", "--beam", "2", "--n-best", "2"]),
    ({"max_batch_size": 3}, ["--batch", "3"]),
    ({"max_batch_size": 20, "batch_type": "tokens", "beam_size": 3},
     ["--batch-tokens", "20", "--beam", "3"]),
]


@pytest.mark.parametrize("kwargs,flags", CASES)
def test_text_equals_command(translator, texts, kwargs, flags):
    results = translator.translate_batch(texts, **kwargs)
    want = run_lines("translate", flags, texts)
    got = [cli_line(r, "text", "--n-best" in flags, "--alignments" in flags) for r in results]
    assert got == want


@pytest.mark.parametrize("form", ["ids", "pieces"])
@pytest.mark.parametrize("kwargs,flags", [CASES[0], CASES[2], CASES[3], CASES[10]])
def test_tokens_equal_command(translator, ids, pieces, form, kwargs, flags):
    source = ids if form == "ids" else pieces
    results = translator.translate_batch(source, **kwargs)
    want = run_lines("translate", flags + ["--" + form],
                     [" ".join(str(x) for x in s) for s in source])
    got = [cli_line(r, form, "--n-best" in flags, "--alignments" in flags) for r in results]
    assert got == want
    hyp = results[0].hypotheses[0]
    assert all(isinstance(x, int if form == "ids" else str) for x in hyp)


def test_end_token_as_piece(translator, texts):
    by_id = translator.translate_batch(texts[:8], end_token=10)
    piece = translator.translate_batch([["▁one"]], target_prefix=[[10]])[0].hypotheses[0][0]
    by_piece = translator.translate_batch(texts[:8], end_token=piece)
    assert by_piece == by_id


@pytest.mark.parametrize("form", ["text", "ids", "pieces"])
def test_target_prefix_equals_command(translator, texts, references, form):
    # The first word of each reference, forced: text, or its target tokens.
    words = [ref.split()[0] for ref in references]
    prefix_tokens = run_lines("tokenize", ["--side", "target"] + (["--ids"] if form == "ids" else []),
                              words)
    if form == "text":
        prefix, source, flags = words, texts, []
    else:
        prefix = [[int(x) if form == "ids" else x for x in line.split()] for line in prefix_tokens]
        src_lines = run_lines("tokenize", ["--ids"] if form == "ids" else [], texts)
        source = [[int(x) if form == "ids" else x for x in line.split()] for line in src_lines]
        flags = ["--" + form]
    results = translator.translate_batch(source, prefix, return_scores=True, beam_size=2)
    lines = [s + "\t" + p for s, p in zip(texts if form == "text" else src_lines,
                                          words if form == "text" else prefix_tokens)]
    want = run_lines("translate", flags + ["--prefix", "--n-best", "1", "--beam", "2"], lines)
    assert [cli_line(r, form, True, False) for r in results] == want


def test_empty_text_is_an_empty_translation(translator):
    r = translator.translate_batch(["", "twenty one"], return_scores=True)
    assert r[0].hypotheses == [""] and r[0].scores == [0.0]
    assert r[1].hypotheses == ["ein und zwanzig"]
    assert run_lines("translate", [], ["", "twenty one"]) == ["", "ein und zwanzig"]


def test_result_fields(translator):
    r = translator.translate_batch([[18, 14, 10]])[0]
    assert r.scores == [] and r.alignments == []
    assert r == (r.hypotheses, r.scores, r.alignments)
    assert translator.translate_batch([]) == []


def test_model_without_tokenizers(tmp_path, texts, pieces):
    """Pieces through the directory's vocabulary files; text refused by name."""
    import json
    import os
    import subprocess
    import tessera
    from conftest import MODEL, TESSERA
    with open(os.path.join(MODEL, "config.json")) as f:
        config = json.load(f)
    del config["tokenizer"]
    (tmp_path / "config.json").write_text(json.dumps(config))
    for name in ("model.safetensors", "vocab.src.txt", "vocab.tgt.txt"):
        os.symlink(os.path.join(os.path.abspath(MODEL), name), tmp_path / name)
    t = tessera.Translator(str(tmp_path), threads=1)
    got = [" ".join(r.hypotheses[0]) for r in t.translate_batch(pieces)]
    out = subprocess.run([TESSERA, "translate", "-m", str(tmp_path), "--pieces", "--threads", "1",
                          "--compute-type", "f32"],
                         input="".join(" ".join(p) + "\n" for p in pieces).encode(),
                         stdout=subprocess.PIPE, check=True)
    assert got == out.stdout.decode().split("\n")[:-1]
    with pytest.raises(ValueError, match="tokenizer"):
        t.translate_batch(texts[:1])


def test_callback_streams_what_translate_batch_returns(translator, ids):
    """callback= (CTranslate2's shape: one object a token) gets exactly the returned
    hypotheses' tokens (beam search: the best), in step order."""
    for kwargs in ({}, {"sampling_topk": 0, "seed": 3}, {"beam_size": 3, "num_hypotheses": 2}):
        plain = translator.translate_batch(ids, return_scores=True, **kwargs)
        seen = {}

        def keep(step):
            seen.setdefault(step.batch_id, []).append(step)

        streamed = translator.translate_batch(ids, return_scores=True, callback=keep, **kwargs)
        assert [r.hypotheses for r in streamed] == [r.hypotheses for r in plain]
        for i, r in enumerate(plain):
            steps = seen.get(i, [])
            assert [s.token_id for s in steps] == r.hypotheses[0]
            assert [s.step for s in steps] == list(range(len(steps)))
            assert all(s.hypothesis_id == 0 and isinstance(s.token, str) for s in steps)


def test_callback_true_ends_that_sentence_only(translator, ids):
    plain = translator.translate_batch(ids, max_batch_size=8)
    long_one = next(i for i, r in enumerate(plain) if len(r.hypotheses[0]) > 3)
    got = translator.translate_batch(
        ids, max_batch_size=8, callback=lambda s: s.batch_id == long_one and s.step == 2)
    for i, r in enumerate(got):
        want = plain[i].hypotheses[0][:3] if i == long_one else plain[i].hypotheses[0]
        assert r.hypotheses[0] == want


def test_callback_errors(translator, ids):
    def boom(step):
        raise KeyError("from the callback")

    with pytest.raises(KeyError, match="from the callback"):
        translator.translate_batch(ids, callback=boom)
    with pytest.raises(TypeError, match="callback"):
        translator.translate_batch(ids, callback=3)
