"""score_batch against `tessera score`, encode_batch against `tessera encode`
(its text and binary formats, bit for bit), on the same input."""
import struct
import subprocess
import sys

import pytest

from conftest import run, run_lines


@pytest.mark.parametrize("form", ["text", "ids", "pieces"])
def test_score_equals_command(translator, texts, references, form):
    if form == "text":
        source, target, src_lines, tgt_lines, flags = texts, references, texts, references, []
    else:
        opt = ["--ids"] if form == "ids" else []
        src_lines = run_lines("tokenize", opt, texts)
        tgt_lines = run_lines("tokenize", opt + ["--side", "target"], references)
        conv = int if form == "ids" else str
        source = [[conv(x) for x in line.split()] for line in src_lines]
        target = [[conv(x) for x in line.split()] for line in tgt_lines]
        flags = ["--" + form]
    results = translator.score_batch(source, target, max_batch_size=7)
    want = run_lines("score", flags, [s + "\t" + t for s, t in zip(src_lines, tgt_lines)])
    assert [" ".join("%.9g" % x for x in r.log_probs) for r in results] == want
    assert len(results[0].log_probs) == len(tgt_lines[0].split()) + 1 or form == "text"


def test_score_empty_target(translator):
    r = translator.score_batch([[18, 14, 10]], [[]])
    assert len(r[0].log_probs) == 1
    assert run_lines("score", ["--ids"], ["18 14 10\t"]) == ["%.9g" % r[0].log_probs[0]]


def f32_bits(values):
    return struct.pack("<%df" % len(values), *values)


@pytest.mark.parametrize("pooling", ["none", "mean", "first"])
def test_encode_text_format_equals_command(encoder, texts, pooling):
    arrays = encoder.encode_batch(texts, pooling=pooling, max_batch_size=5)
    lines = run_lines("encode", ["--pool", pooling], texts)
    assert len(lines) == len(arrays)
    for a, line in zip(arrays, lines):
        fields = line.split(" ")
        # The format: %.9g floats, one line a sentence, d_model per vector.
        assert len(fields) % encoder.d_model == 0
        values = memoryview(a).cast("B").cast("f")
        assert ["%.9g" % v for v in values] == fields
        # %.9g round-trips a float32: the same bits.
        assert f32_bits([float(x) for x in fields]) == bytes(memoryview(a))
        rows = len(fields) // encoder.d_model
        assert a.shape == ((rows, encoder.d_model) if pooling == "none" else (encoder.d_model,))


def test_encode_binary_format_equals_command(encoder, ids):
    arrays = encoder.encode_batch(ids)
    out = run("encode", ["--format", "binary", "--ids"], [" ".join(map(str, s)) for s in ids])
    assert out[:8] == b"TSRENC1\n"
    (d,) = struct.unpack("<I", out[8:12])
    assert d == encoder.d_model
    at = 12
    for s, a in zip(ids, arrays):
        (count,) = struct.unpack("<I", out[at:at + 4])
        assert count == len(s) == a.shape[0]
        at += 4
        assert out[at:at + 4 * count * d] == bytes(memoryview(a))
        at += 4 * count * d
    assert at == len(out)


def test_buffer_protocol(encoder):
    a = encoder.encode_batch([[18, 14, 10]])[0]
    m = memoryview(a)
    assert m.format == "f" and m.itemsize == 4 and m.shape == (3, encoder.d_model)
    assert m.readonly and m.c_contiguous
    assert a.tolist()[1] == m.tolist()[1] and len(a) == 3
    np = pytest.importorskip("numpy")
    x = np.asarray(a)
    assert x.dtype == np.float32 and x.shape == (3, encoder.d_model)
    assert not x.flags.writeable
    # numpy reads the array's own memory through the buffer: no copy.
    assert not x.flags.owndata and isinstance(x.base, memoryview) and x.base.obj is a
    assert np.frombuffer(a, dtype=np.float32).reshape(3, -1)[2, 5] == x[2, 5]


def test_vectors_outlive_encoder():
    import tessera
    from conftest import MODEL
    e = tessera.Encoder(MODEL, threads=1)
    arrays = e.encode_batch([[18, 14, 10], [18]])
    keep = arrays[1]
    want = bytes(memoryview(keep))
    del e, arrays
    assert bytes(memoryview(keep)) == want


def test_numpy_not_required():
    code = "import sys, tessera; assert 'numpy' not in sys.modules; print(tessera.__version__)"
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, check=True)
    from conftest import TESSERA
    info = subprocess.run([TESSERA, "info"], stdout=subprocess.PIPE, check=True).stdout
    assert b"tessera " + out.stdout.strip() == info.split(b"\n")[0]


def test_stubs_name_what_the_module_has():
    """python/tessera.pyi: every class, method and keyword it declares exists."""
    import ast
    import inspect
    import os
    import tessera
    from conftest import SRCDIR
    with open(os.path.join(SRCDIR, "python", "tessera.pyi"), encoding="utf-8") as f:
        tree = ast.parse(f.read())
    for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
        assert hasattr(tessera, cls.name), cls.name
        for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
            if fn.name.startswith("__"):
                continue
            assert hasattr(getattr(tessera, cls.name), fn.name), (cls.name, fn.name)
            doc = inspect.getdoc(getattr(getattr(tessera, cls.name), fn.name)) or ""
            for arg in fn.args.args[1:] + fn.args.kwonlyargs:
                if cls.name in ("Translator", "Encoder"):
                    assert arg.arg + "=" in doc or arg.arg + "," in doc or arg.arg + ")" in doc, \
                        (cls.name, fn.name, arg.arg)
    assert issubclass(tessera.Translator, tessera.Model)
    assert issubclass(tessera.Encoder, tessera.Model)
