"""What the family fixture generators share (make-family-golden for marian and
opennmt-py, make_family_golden_{fairseq,hf_marian,hf_m2m100}.py): the shape of a
family's fixture set and the way its sentences are picked. Each generator keeps
what is its family's own: the checkpoint writer, the reference, the ids a
sentence may hold, the README.

The fixtures: N_SENTENCES greedy sentences of up to MAX_LEN tokens, BEAM_SENTENCES
beam searches (BEAM, as tessera's BEAM_FLAGS), one score pair per SCORE_LENGTHS
entry; every decision of the reference at least NEAR_TIE from a tie, so that a
runtime within 1e-4 of it makes the same choices.
"""

import importlib.machinery
import importlib.util
import os

HERE = os.path.dirname(os.path.abspath(__file__))

MAX_LEN = 20
N_SENTENCES = 12
N_CANDIDATES = 60
NEAR_TIE = 1e-3
BEAM = dict(beam=4, n_best=3, length_penalty=0.6, max_len=15)
BEAM_FLAGS = "--beam 4 --n-best 3 --length-penalty 0.6 --max-len 15"
BEAM_SENTENCES = 8
# (source length, target length): one empty target, a one-token source
SCORE_LENGTHS = [(1, 4), (3, 0), (5, 1), (8, 7), (12, 12), (2, 3), (6, 9), (10, 2), (4, 11), (7, 6)]


def load_script(name):
    """A tools/ script without a .py suffix (write-*-checkpoint), as a module."""
    loader = importlib.machinery.SourceFileLoader(name.replace("-", "_"), os.path.join(HERE, name))
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


def distinct_first(pairs, key, count):
    """count pairs, those of an unseen key first, kept in their order; None if too few."""
    seen, fresh, again = set(), [], []
    for pair in pairs:
        (again if key(pair) in seen else fresh).append(pair)
        seen.add(key(pair))
    chosen = (fresh + again)[:count]
    return [p for p in pairs if p in chosen] if len(chosen) == count else None


def endings(hypotheses):
    """A beam's n-best as E (ended by </s>) and L (by the length limit)."""
    return "".join("E" if h.by_eos else "L" for h in hypotheses)


def ids_text(ids):
    return " ".join(str(t) for t in ids)


def write_lines(path, lines):
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for line in lines:
            f.write(line + "\n")


def size_kb(directory):
    return sum(os.path.getsize(os.path.join(d, n))
               for d, _, names in os.walk(directory) for n in names) / 1000.0
