"""Shared fixtures: the shipped model, the built command, and helpers that
run it on the same input as the module, so that each test compares the two."""
import os
import subprocess

import pytest
import tessera

SRCDIR = os.environ.get("TESSERA_TEST_SRCDIR", os.path.join(os.path.dirname(__file__), "..", ".."))
BUILDDIR = os.environ.get("TESSERA_TEST_BUILDDIR", SRCDIR)
MODEL = os.path.join(SRCDIR, "models", "numbers-en-de")
# The command as installed, without libtool's wrapper script (Makefile.am).
TESSERA = os.path.join(BUILDDIR, "tests", "command", "tessera")

# Sentences from the model's held-out set: enough to cover lengths 1..9
# tokens, few enough for the suite to stay fast.
N_SENTENCES = 40


def run(subcommand, args, lines):
    """The command's output lines for input lines (its stdout, checked)."""
    cmd = [TESSERA, subcommand, "-m", MODEL] + args
    if subcommand != "tokenize":
        cmd += ["--compute-type", "f32", "--threads", "1"]
    out = subprocess.run(cmd, input="".join(line + "\n" for line in lines).encode(),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)
    assert out.returncode == 0, out.stderr.decode()
    return out.stdout


def run_lines(subcommand, args, lines):
    return run(subcommand, args, lines).decode().split("\n")[:-1]


@pytest.fixture(scope="session")
def texts():
    with open(os.path.join(MODEL, "test.src.txt"), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f][:N_SENTENCES]


@pytest.fixture(scope="session")
def references():
    with open(os.path.join(MODEL, "test.ref.txt"), encoding="utf-8") as f:
        return [line.rstrip("\n") for line in f][:N_SENTENCES]


@pytest.fixture(scope="session")
def pieces(texts):
    """The sources as the tokenizer's pieces (tessera tokenize)."""
    return [line.split() for line in run_lines("tokenize", [], texts)]


@pytest.fixture(scope="session")
def ids(texts):
    return [[int(x) for x in line.split()] for line in run_lines("tokenize", ["--ids"], texts)]


@pytest.fixture(scope="session")
def translator():
    return tessera.Translator(MODEL, threads=1)


@pytest.fixture(scope="session")
def encoder():
    return tessera.Encoder(MODEL, threads=1)
