#!/bin/sh
# make check: where CTranslate2's Python module can be imported, CTranslate2's
# own converters, run on the originals of tests/golden/families/*, give a model
# whose greedy translation of the fixture's translate.in is tessera's (the
# committed conversion under `tessera translate -m DIR --max-len 20`): the
# same ids on every line, one PASS or FAIL line per compared fixture. Else one
# line `SKIP: ...` (exit 77): CTranslate2 is not packaged by Debian (pip's
# `ctranslate2`), so on most machines this test is skipped.
#
# Each family is converted by the CTranslate2 converter of its toolkit, and
# decoded with translate_batch(beam_size=1, max_decoding_length=20) plus what
# the family's decoder does around the model, as CTranslate2's own options
# express it (the sources are token strings: ids -> pieces by the fixture's
# vocab.src.txt; the outputs are pieces -> ids by vocab.tgt.txt):
#
# - hf-marian: ctranslate2.converters.TransformersConverter on hf-marian/
#   (converters/transformers.py: MarianMTLoader). It needs transformers, torch
#   and safetensors (else that family is a SKIP by name). MarianTokenizer needs
#   source.spm / target.spm and sentencepiece, which the fixtures do not ship;
#   the converter reads from the tokenizer only get_vocab(), eos_token and
#   unk_token (ModelLoader.get_vocabulary, MarianMTLoader.set_config), so
#   transformers.AutoTokenizer.from_pretrained is replaced, for the conversion
#   only, by a stand-in built from vocab.json (and tokenizer_config.json).
#   CTranslate2 does not append </s> to the source for this converter (its
#   config has no add_source_eos; docs/guides/transformers.md passes
#   tokenizer.encode()'s tokens, </s> included), so the caller appends it, as
#   MarianTokenizer does. The converter removes <pad> from the vocabulary and
#   the output layer (MarianMTLoader.get_vocabulary, _remove_pad_weights), so
#   the pad can never be output: greedy's ids are those of transformers'
#   bad_words_ids [[pad]] ban. Two knowing differences are skipped by name:
#   the decoder starts from a zero vector (MarianMTLoader.set_decoder:
#   start_from_zero_embedding; src/layers/transformer.cc zeroes step 0's
#   embedding), not from decoder_start_token_id's row, so a fixture whose pad
#   row is not zero is skipped; and one vocabulary is registered for both sides
#   (BartLoader.set_vocabulary), so separate vocabularies are skipped.
# - fairseq: ctranslate2.converters.FairseqConverter(checkpoint, data_dir)
#   (converters/fairseq.py); it builds the model with fairseq itself
#   (fairseq.tasks.setup_task, fairseq.models.build_model), so it needs fairseq
#   and torch. Its config says add_source_eos and decoder_start_token </s>, as
#   fairseq does; it renames <pad> to <blank> (_get_vocab). fairseq's
#   SequenceGenerator sets pad to -inf and bans </s> before min_len (1):
#   suppress_sequences [["<blank>"]] (CTranslate2 >= 3.2) and
#   min_decoding_length 1.
# - opennmt-py: ctranslate2.converters.OpenNMTPyConverter(model.pt)
#   (converters/opennmt_py.py); it loads the checkpoint with torch alone
#   (OpenNMT-py itself is needed only for 2.x checkpoints, whose vocabularies
#   are torchtext objects; these are 3.x: lists). It reads the position table
#   from the buffers *.embeddings.make_embedding.pe.pe, which the fixtures leave
#   out, so they are added back as tests/convert-torch-families.sh does (the
#   table of tools/write-opennmt-checkpoint). No bos/eos around the source,
#   decoder_start_token from the options (<s>), no ban, min_decoding_length 0.
#   Known and compared anyway: the seq2seq spec leaves layer_norm_epsilon
#   unset, so CTranslate2 uses 1e-5 (src/layers/common.cc) where OpenNMT-py
#   uses norm_eps 1e-6; tessera with eps 1e-5 gives the same greedy ids on
#   both fixtures (checked when this test was written), a difference far
#   inside the fixtures' 1e-3 decision margins.
# - marian: skipped by name. ctranslate2.converters.OpusMTConverter /
#   MarianConverter (converters/marian.py) computes the position table
#   (_make_sinusoidal_position_encodings) with the frequencies
#   10000^(-2i/d), where Marian (src/graph/node_initializers.cpp
#   sinusoidalPositionEmbeddings) and tessera's sinusoid_halves_t2t use
#   exp(-i ln(10000) / (d/2 - 1)): at the fixtures' d 16 every position but 0
#   differs. (Also: CTranslate2 before 3.15 read Marian's gelu as the erf form.)
#
# CTranslate2 3.x and 4.x: the converters' constructor arguments are read
# with inspect (unsafe_deserialization=True where it exists, from 4.8.1, for
# these committed checkpoints, which hold argparse.Namespace; before it,
# TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD=1 for torch >= 2.6); the tokenizer
# stand-in replaces transformers.AutoTokenizer.from_pretrained, which 3.0 to
# 3.9 call directly and later versions through load_tokenizer;
# suppress_sequences only from 3.2 (said in the PASS line before it); the
# converted vocabularies are *_vocabulary.txt before 3.17, .json from it;
# Converter.convert(output_dir, force=True); Translator(path, device="cpu",
# compute_type="float") ("float32" is 3.7's name; "float" is still
# accepted); results[i].hypotheses[0].
set -u
srcdir=${TESSERA_TEST_SRCDIR:-$(dirname "$0")/..}
build=${TESSERA_TEST_BUILDDIR:-.}
python=${TESSERA_TEST_PYTHON:-/usr/bin/python3}
families=$srcdir/tests/golden/families
tessera=$build/tests/tessera-test

if ! [ -x "$python" ]; then
    echo "SKIP: $python not found (CTranslate2's Python module would run with it)"
    exit 77
fi
if ! why=$("$python" -c 'import ctranslate2' 2>&1); then
    echo "SKIP: $python cannot import ctranslate2 (not packaged by Debian; pip install ctranslate2): $(printf '%s\n' "$why" | tail -n 1)"
    exit 77
fi
if ! [ -x "$tessera" ]; then
    echo "ERROR: $tessera not built"
    exit 99
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/ctranslate2-agrees.XXXXXX") || exit 99
trap 'rm -rf "$work"' EXIT INT TERM

"$python" - "$srcdir" "$families" "$work" "$tessera" "${TESSERA_TEST_RUNNER:-}" <<'EOF'
import contextlib
import glob
import importlib
import importlib.machinery
import importlib.util
import inspect
import json
import os
import struct
import subprocess
import sys

srcdir, families, work, tessera, runner = sys.argv[1:]
sys.dont_write_bytecode = True
MAX_LEN = 20

import ctranslate2  # noqa: E402

VERSION = getattr(ctranslate2, "__version__", "?")
try:
    VERSION_TUPLE = tuple(int(x) for x in VERSION.split(".")[:2])
except ValueError:
    VERSION_TUPLE = (0, 0)
CT2 = "CTranslate2 %s" % VERSION
counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}


def report(kind, name, message):
    counts[kind] += 1
    print("%s: %s: %s" % (kind, name, message))
    sys.stdout.flush()


class Skip(Exception):
    """A fixture not compared, with the reason."""


def one_line(e):
    text = " / ".join(line.strip() for line in str(e).strip().splitlines() if line.strip())
    if len(text) > 400:
        text = text[:400] + " ..."
    return "%s: %s" % (type(e).__name__, text)


def missing_modules(names):
    missing = []
    for name in names:
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - any failure to import is "cannot import"
            missing.append(name)
    return missing


def read_lines(path):
    with open(path, encoding="utf-8") as f:
        return f.read().split("\n")[:-1]


def read_tensor(path, name):
    """One tensor of a safetensors file as a float64 numpy array (F32, F16, BF16)."""
    import numpy as np
    with open(path, "rb") as f:
        blob = f.read()
    (n,) = struct.unpack("<Q", blob[:8])
    entry = json.loads(blob[8:8 + n].decode("utf-8"))[name]
    start, end = entry["data_offsets"]
    kind = {"F32": "<f4", "F16": "<f2", "BF16": "<u2"}[entry["dtype"]]
    raw = np.frombuffer(blob[8 + n + start:8 + n + end], dtype=kind)
    if entry["dtype"] == "BF16":
        raw = (raw.astype(np.uint32) << 16).view(np.float32)
    return raw.astype(np.float64).reshape(entry["shape"])


def ct2_vocabulary(directory, side):
    """The converted model's vocabulary of one side ("source"/"target"), as a list."""
    for stem in ("%s_vocabulary" % side, "shared_vocabulary"):
        path = os.path.join(directory, stem + ".json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                return json.load(f)
        path = os.path.join(directory, stem + ".txt")
        if os.path.isfile(path):
            return read_lines(path)
    raise RuntimeError("no %s vocabulary in %s" % (side, directory))


def run_tessera(fixture, sources):
    command = runner.split() + [tessera, "translate", "-m", fixture, "--max-len", str(MAX_LEN)]
    done = subprocess.run(command, input="".join(s + "\n" for s in sources).encode("utf-8"),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if done.returncode != 0:
        raise RuntimeError("tessera exited %d: %s" % (
            done.returncode, done.stderr.decode("utf-8", "replace").strip()[-300:]))
    lines = done.stdout.decode("utf-8").split("\n")[:-1]
    if len(lines) != len(sources):
        raise RuntimeError("tessera wrote %d lines for %d sources" % (len(lines), len(sources)))
    return [[int(t) for t in line.split()] for line in lines]


def construct(cls, *args, **wanted):
    """cls(*args, **the wanted keywords its constructor takes): 3.x lacks some."""
    params = inspect.signature(cls.__init__).parameters
    return cls(*args, **{k: v for k, v in wanted.items() if k in params})


def safe_load_note(cls):
    """For a converter without unsafe_deserialization, torch >= 2.6 would load
    with weights_only=True and refuse argparse.Namespace: load as torch < 2.6."""
    if "unsafe_deserialization" not in inspect.signature(cls.__init__).parameters:
        os.environ["TORCH_FORCE_NO_WEIGHTS_ONLY_LOAD"] = "1"


# ---- per family: convert with CTranslate2's converter, say how to decode -------

class StandInTokenizer:
    """What CTranslate2's MarianMTLoader reads of a MarianTokenizer (see the header)."""

    def __init__(self, directory):
        with open(os.path.join(directory, "vocab.json"), encoding="utf-8") as f:
            self.vocab = json.load(f)
        options = {}
        path = os.path.join(directory, "tokenizer_config.json")
        if os.path.isfile(path):
            with open(path, encoding="utf-8") as f:
                options = json.load(f)

        def token(key, default):
            value = options.get(key, default)
            return value.get("content", default) if isinstance(value, dict) else value

        self.eos_token = token("eos_token", "</s>")
        self.unk_token = token("unk_token", "<unk>")
        self.pad_token = token("pad_token", "<pad>")
        self.bos_token = None
        self.eos_token_id = self.vocab.get(self.eos_token)
        self.unk_token_id = self.vocab.get(self.unk_token)
        self.pad_token_id = self.vocab.get(self.pad_token)
        self._pieces = {i: p for p, i in self.vocab.items()}

    def get_vocab(self):
        return dict(self.vocab)

    def convert_ids_to_tokens(self, ids):
        if isinstance(ids, int):
            return self._pieces[ids]
        return [self._pieces[i] for i in ids]


@contextlib.contextmanager
def stand_in_tokenizer(directory):
    import transformers
    auto = transformers.AutoTokenizer
    saved = auto.__dict__.get("from_pretrained")

    def from_pretrained(*args, **kwargs):
        return StandInTokenizer(directory)

    auto.from_pretrained = from_pretrained
    try:
        yield
    finally:
        if saved is None:
            del auto.from_pretrained
        else:
            auto.from_pretrained = saved


def hf_marian(name, fixture, config, out):
    original = os.path.join(fixture, "hf-marian")
    with open(os.path.join(original, "config.json"), encoding="utf-8") as f:
        hf = json.load(f)
    if (hf.get("share_encoder_decoder_embeddings", True) is False
            or os.path.isfile(os.path.join(original, "target_vocab.json"))):
        raise Skip("separate source and target vocabularies: CTranslate2's transformers.py "
                   "(BartLoader.set_vocabulary) registers the tokenizer's one vocabulary for both")
    if config.get("decoder_start", "bos") == "bos":
        row = read_tensor(os.path.join(fixture, "model.safetensors"),
                          "tgt_tok_emb.embedding.weight")[config["bos_id"]]
        if (row != 0).any():
            raise Skip("the decoder_start_token_id row (%d) is not zero: CTranslate2's "
                       "transformers.py (MarianMTLoader.set_decoder, start_from_zero_embedding) "
                       "starts the decoder from a zero vector" % config["bos_id"])
    missing = missing_modules(["torch", "transformers", "safetensors"])
    if missing:
        raise Skip("CTranslate2's TransformersConverter needs %s, which %s cannot import"
                   % (", ".join(missing), sys.executable))
    cls = ctranslate2.converters.TransformersConverter
    with stand_in_tokenizer(original):
        construct(cls, original).convert(out, force=True)
    return "TransformersConverter", {}


def fairseq(name, fixture, config, out):
    missing = missing_modules(["torch", "fairseq"])
    if missing:
        raise Skip("CTranslate2's FairseqConverter builds the model with fairseq: needs %s, "
                   "which %s cannot import" % (", ".join(missing), sys.executable))
    data_dir = os.path.join(fixture, "fairseq")
    checkpoints = sorted(glob.glob(os.path.join(data_dir, "*.pt")))
    if len(checkpoints) != 1:
        raise RuntimeError("%s: %d .pt files, expected one" % (data_dir, len(checkpoints)))
    cls = ctranslate2.converters.FairseqConverter
    safe_load_note(cls)
    construct(cls, checkpoints[0], data_dir, unsafe_deserialization=True).convert(out, force=True)
    # fairseq.py _get_vocab: fairseq's <pad> is CTranslate2's <blank>.
    return "FairseqConverter", {"<blank>": "<pad>"}


def load_tool(file_name, module_name):
    loader = importlib.machinery.SourceFileLoader(
        module_name, os.path.join(srcdir, "tools", file_name))
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader(module_name, loader))
    loader.exec_module(module)
    return module


def opennmt_py(name, fixture, config, out):
    missing = missing_modules(["torch"])
    if missing:
        raise Skip("CTranslate2's OpenNMTPyConverter loads the checkpoint with torch, which %s "
                   "cannot import" % sys.executable)
    import torch
    checkpoints = sorted(glob.glob(os.path.join(fixture, "opennmt-py", "*.pt")))
    if len(checkpoints) != 1:
        raise RuntimeError("%s/opennmt-py: %d .pt files, expected one" % (fixture, len(checkpoints)))
    try:  # this repository's own checkpoint: argparse.Namespace and plain values
        checkpoint = torch.load(checkpoints[0], map_location="cpu", weights_only=False)
    except TypeError:  # a torch before 1.13
        checkpoint = torch.load(checkpoints[0], map_location="cpu")
    model = checkpoint["model"]
    d = model["encoder.embeddings.make_embedding.emb_luts.0.weight"].shape[1]
    writer = load_tool("write-opennmt-checkpoint", "write_opennmt_checkpoint")
    kind = getattr(checkpoint["opt"], "position_encoding_type", "SinusoidalInterleaved")
    for stack in ("encoder", "decoder"):
        key = "%s.embeddings.make_embedding.pe.pe" % stack
        if key not in model:
            model[key] = torch.from_numpy(writer.positional_table(d, kind))
    path = os.path.join(work, name + "-pe.pt")
    torch.save(checkpoint, path)
    cls = ctranslate2.converters.OpenNMTPyConverter
    safe_load_note(cls)
    construct(cls, path, unsafe_deserialization=True).convert(out, force=True)
    return "OpenNMTPyConverter", {}


def marian(name, fixture, config, out):
    raise Skip("CTranslate2's marian.py (_make_sinusoidal_position_encodings) computes the "
               "positions with 10000^(-2i/d), Marian (node_initializers.cpp "
               "sinusoidalPositionEmbeddings) with exp(-i ln(10000)/(d/2-1)): they differ at d %d"
               % config["d_model"])


FAMILIES = {"hf-marian": hf_marian, "fairseq": fairseq, "opennmt-py": opennmt_py,
            "marian": marian}


# ---- one fixture ------------------------------------------------------------------

def ids_of(pieces):
    """piece -> list of ids holding it."""
    out = {}
    for i, p in enumerate(pieces):
        out.setdefault(p, []).append(i)
    return out


def compare(name, fixture):
    with open(os.path.join(fixture, "config.json"), encoding="utf-8") as f:
        config = json.load(f)
    family = config.get("family")
    if family not in FAMILIES:
        raise Skip("family %r: no CTranslate2 converter is tried for it" % (family,))
    src_pieces = read_lines(os.path.join(fixture, "vocab.src.txt"))
    tgt_pieces = read_lines(os.path.join(fixture, "vocab.tgt.txt"))
    sources = read_lines(os.path.join(fixture, "translate.in"))
    out = os.path.join(work, name + "-ct2")
    try:
        converter, aliases = FAMILIES[family](name, fixture, config, out)
    except (Skip, RuntimeError):
        raise
    except ImportError as e:
        raise Skip("the conversion needs a module %s cannot import: %s"
                   % (sys.executable, one_line(e)))
    except Exception as e:  # noqa: BLE001 - CTranslate2's refusal is the finding
        raise RuntimeError("CTranslate2's converter failed: %s" % one_line(e))

    with open(os.path.join(out, "config.json"), encoding="utf-8") as f:
        ct2 = json.load(f)
    ct2_src = set(ct2_vocabulary(out, "source"))
    ct2_tgt = ct2_vocabulary(out, "target")
    to_ct2 = {v: k for k, v in aliases.items()}

    # The source: what the family's decoder appends, unless CTranslate2 does.
    suffix = [src_pieces[i] for i in config.get("source_suffix") or []]
    if ct2.get("add_source_bos"):
        raise Skip("CTranslate2's config adds bos to the source; the family does not")
    if ct2.get("add_source_eos"):
        if suffix != [ct2.get("eos_token", "</s>")]:
            raise Skip("CTranslate2's config appends %r to the source, the family %r"
                       % (ct2.get("eos_token"), suffix))
        suffix = []
    # The decoder's start: the family's bos_id piece (hf-marian: checked above).
    if family != "hf-marian" and config.get("decoder_start", "bos") == "bos":
        want = tgt_pieces[config["bos_id"]]
        got = ct2.get("decoder_start_token", "<s>")
        if aliases.get(got, got) != want:
            raise Skip("CTranslate2 starts the decoder from %r, the family from %r" % (got, want))

    # What the family never outputs.
    options = dict(beam_size=1, num_hypotheses=1, max_decoding_length=MAX_LEN,
                   min_decoding_length=int(config.get("min_target_length", 0)),
                   return_scores=False)
    suppress, notes = [], []
    for token in config.get("banned_target_ids") or []:
        piece = to_ct2.get(tgt_pieces[token], tgt_pieces[token])
        if piece == ct2.get("unk_token", "<unk>"):
            options["disable_unk"] = True
        elif piece in ct2_tgt:
            suppress.append([piece])
        # else: not in CTranslate2's target vocabulary, never output
    if suppress:
        if VERSION_TUPLE >= (3, 2):
            options["suppress_sequences"] = suppress
        else:
            notes.append("the ban of %s not applied (suppress_sequences is CTranslate2 3.2's)"
                         % suppress)

    # Token strings for CTranslate2; a piece naming two ids cannot be passed.
    src_ids = ids_of(src_pieces)
    batch, kept, left = [], [], 0
    for k, line in enumerate(sources):
        ids = [int(t) for t in line.split()]
        pieces = [to_ct2.get(src_pieces[i], src_pieces[i]) for i in ids]
        if any(src_ids[src_pieces[i]][0] != i for i in ids):
            left += 1
            continue
        for p in pieces:
            if p not in ct2_src:
                raise RuntimeError("source piece %r (line %d) is not in CTranslate2's source "
                                   "vocabulary" % (p, k + 1))
        batch.append(pieces + suffix)
        kept.append(k)
    if left:
        notes.append("%d line(s) left out: a source piece names two ids" % left)
    if not batch:
        raise Skip("no line can be passed as token strings")

    ours = run_tessera(fixture, sources)
    translator = ctranslate2.Translator(out, device="cpu", compute_type="float",
                                        inter_threads=1, intra_threads=1)
    results = translator.translate_batch(batch, **options)

    tgt_ids = ids_of(tgt_pieces)
    ambiguous = 0
    for k, result in zip(kept, results):
        hypotheses = result.hypotheses if hasattr(result, "hypotheses") else [result[0]["tokens"]]
        theirs = [aliases.get(p, p) for p in hypotheses[0]]
        want = ours[k]
        same = len(theirs) == len(want)
        for p, i in zip(theirs, want):
            candidates = tgt_ids.get(p, [])
            if i not in candidates:
                same = False
                break
            ambiguous += len(candidates) > 1
        if not same:
            mapped = [tgt_ids[p][0] if p in tgt_ids else p for p in theirs]
            raise AssertionError(
                "line %d (source %s): tessera %s, %s %s %s"
                % (k + 1, sources[k], " ".join(map(str, want)) or "(empty)", CT2, converter,
                   " ".join(map(str, mapped)) or "(empty)"))
    if ambiguous:
        notes.append("%d output piece(s) name two ids, compared as pieces" % ambiguous)
    return "%s's %s greedy equals tessera's on %d sentences (%s)%s" % (
        CT2, converter, len(kept), ", ".join(
            "%s=%r" % (k, v) for k, v in sorted(options.items())
            if k not in ("num_hypotheses", "return_scores")),
        "; " + "; ".join(notes) if notes else "")


fixtures = sorted(d for d in glob.glob(os.path.join(families, "*"))
                  if os.path.isfile(os.path.join(d, "config.json"))
                  and os.path.isfile(os.path.join(d, "translate.in")))
for fixture in fixtures:
    name = os.path.basename(fixture)
    try:
        report("PASS", name, compare(name, fixture))
    except Skip as e:
        report("SKIP", name, str(e))
    except (AssertionError, RuntimeError) as e:
        report("FAIL", name, str(e))
    except Exception as e:  # noqa: BLE001 - one line per fixture, then go on
        report("FAIL", name, one_line(e))

print("%d compared and equal, %d failed, %d skipped (%s)"
      % (counts["PASS"], counts["FAIL"], counts["SKIP"], CT2))
if counts["FAIL"]:
    sys.exit(1)
if not counts["PASS"]:
    print("SKIP: no fixture could be compared with %s" % CT2)
    sys.exit(77)
sys.exit(0)
EOF
exit $?
