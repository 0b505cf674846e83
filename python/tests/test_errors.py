"""Bad arguments raise the documented exceptions, with tessera's one-line
message, and leave the object usable."""
import os
import subprocess

import pytest
import tessera

from conftest import MODEL, TESSERA

GOOD = ["twenty one"]
GOOD_OUT = ["ein und zwanzig"]

BAD_TRANSLATE = [
    (TypeError, ("twenty one",), {}),                       # a str, not a list of sentences
    (TypeError, ([5],), {}),                                # a sentence that is an int
    (TypeError, ([[18, "▁one"]],), {}),                    # ids and pieces mixed
    (TypeError, ([[18.0]],), {}),
    (TypeError, (GOOD,), {"beam_size": "4"}),
    (TypeError, (GOOD,), {"no_such_option": 1}),
    (ValueError, ([[18], "one"],), {}),                     # two forms in one call
    (ValueError, ([[18, 999]],), {}),                       # id out of the vocabulary
    (ValueError, ([[2**40]],), {}),
    (ValueError, ([[]],), {}),                              # an empty source of ids
    (ValueError, (["one\0two"],), {}),
    (ValueError, (GOOD,), {"beam_size": 0}),
    (ValueError, (GOOD,), {"beam_size": 2, "num_hypotheses": 3}),
    (ValueError, (GOOD,), {"beam_size": 2, "sampling_topk": 5}),
    (ValueError, (GOOD,), {"sampling_topk": 5, "sampling_topp": 1.5}),
    (ValueError, (GOOD,), {"sampling_temperature": 0.5}),  # topk 1: no sampling to shape
    (ValueError, (GOOD,), {"repetition_penalty": 0}),
    (ValueError, (GOOD,), {"max_decoding_length": -1}),
    (ValueError, (GOOD,), {"min_decoding_length": 300}),
    (ValueError, (GOOD,), {"no_repeat_ngram_size": -2}),
    (ValueError, (GOOD,), {"seed": -1}),
    (ValueError, (GOOD,), {"end_token": 36}),
    (ValueError, (GOOD,), {"end_token": "not a piece"}),
    (ValueError, (GOOD,), {"batch_type": "sentences"}),
    (ValueError, (GOOD,), {"max_batch_size": -1}),
    (ValueError, (GOOD, ["ein", "zwei"]), {}),              # a prefix per sentence
    (ValueError, (GOOD, [[3]]), {}),                        # a prefix holding eos
    (ValueError, (["one " * 600],), {}),                    # longer than max_positions
]


@pytest.mark.parametrize("error,args,kwargs", BAD_TRANSLATE)
def test_bad_translate_raises_and_leaves_translator_usable(translator, error, args, kwargs):
    with pytest.raises(error) as caught:
        translator.translate_batch(*args, **kwargs)
    message = str(caught.value)
    assert message and "\n" not in message
    assert [r.hypotheses[0] for r in translator.translate_batch(GOOD)] == GOOD_OUT


def test_message_is_the_library_s(translator):
    with pytest.raises(ValueError, match=r"^sentence 2: token id 999 out of range \[0, 34\)$"):
        translator.translate_batch([[18], [18, 999]])
    # The library's check, in translate_batch's keywords.
    with pytest.raises(ValueError, match=r"^beam_size: 0 is out of range \[1, 1024\]$"):
        translator.translate_batch(GOOD, beam_size=0)
    with pytest.raises(ValueError,
                       match=r"^num_hypotheses: 3 is out of range \[1, beam_size \(2\)\]$"):
        translator.translate_batch(GOOD, beam_size=2, num_hypotheses=3)


@pytest.mark.parametrize("args", [
    (GOOD, GOOD * 2),
    ([[18]], [[999]]),
    ("one", ["eins"]),
])
def test_bad_score_raises(translator, args):
    with pytest.raises((ValueError, TypeError)):
        translator.score_batch(*args)
    assert len(translator.score_batch(GOOD, GOOD_OUT)[0].log_probs) == 4


def test_bad_encode_raises(encoder):
    for bad in ({"pooling": "max"}, {"batch_type": "x"}):
        with pytest.raises(ValueError):
            encoder.encode_batch(GOOD, **bad)
    with pytest.raises(ValueError):
        encoder.encode_batch([[]])
    assert encoder.encode_batch(GOOD)[0].shape == (2, encoder.d_model)


def test_memory_budget_is_memory_error():
    t = tessera.Translator(MODEL, threads=1, max_memory=1 << 20)
    with pytest.raises(MemoryError, match=r"^sentence 1 \(2 tokens\) needs .* memory budget"):
        t.translate_batch(GOOD)
    e = tessera.Encoder(MODEL, threads=1, max_memory=1)
    with pytest.raises(MemoryError):
        e.encode_batch(GOOD)


def test_model_errors(tmp_path):
    with pytest.raises(FileNotFoundError, match="config.json"):
        tessera.Translator(str(tmp_path / "missing"))
    (tmp_path / "config.json").write_text('{"d_model": "wide"}')
    with pytest.raises(OSError) as caught:
        tessera.Translator(tmp_path)
    assert "config.json" in str(caught.value) and "\n" not in str(caught.value)
    with pytest.raises(ValueError, match="f64"):
        tessera.Translator(MODEL, compute_type="f64")
    with pytest.raises(ValueError):
        tessera.Translator(MODEL, workers=0)
    with pytest.raises(ValueError):
        tessera.Encoder(MODEL, max_memory=-1)
    with pytest.raises(TypeError):
        tessera.Translator(MODEL, "f32")  # the options are keywords


def test_compute_types_equal_command(texts):
    for compute_type in ("bf16", "int8"):
        t = tessera.Translator(MODEL, compute_type=compute_type, threads=1)
        assert t.compute_type == compute_type
        got = [r.hypotheses[0] for r in t.translate_batch(texts[:10], beam_size=2)]
        out = subprocess.run([TESSERA, "translate", "-m", MODEL, "--compute-type", compute_type,
                              "--beam", "2", "--threads", "1"],
                             input="".join(s + "\n" for s in texts[:10]).encode(),
                             stdout=subprocess.PIPE, check=True)
        assert got == out.stdout.decode().split("\n")[:-1]
