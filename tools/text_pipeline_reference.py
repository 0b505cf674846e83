"""The reference of a Marian (OPUS-MT) model on text: what `tessera translate -m
DIR` prints for DIR converted from it (config.json's `tokenizer`,
docs/model-format.md section 3), computed without tessera and without the
converter, from tools/spm_reference.py (section 3's rules with
python3-sentencepiece) and tools/marian_reference.py (Marian's transformer):

    text -> ids      spm_reference.tokenize with the source SentencePiece model
                     and Marian's source vocabulary (the *.yml decoder.yml
                     names, in Marian's id order: never the model's ids); a
                     leading >>tag<< that the vocabulary holds is one token; a
                     piece it lacks is <unk>
    ids -> ids       marian_reference.MarianModel (numpy float64, </s> appended
                     to the source) and its port of tessera's greedy or beam
                     search (<unk> banned after the log-softmax unless
                     allow-unk), with the margin of each decision
    ids -> text      spm_reference.detokenize with Marian's target vocabulary
                     and the target SentencePiece model, </s> dropped

Lines are read as spm_reference.py reads them (a trailing CR dropped; not
UTF-8 or a NUL: an error naming the line, exit status 1, after the earlier
lines' output). A line whose text gives no piece (an empty one) gives an empty
line, not decoded (README "Text").

Detokenize drops Marian's </s> only: Marian has no bos or pad, and tessera's
converted config's bos_id (the id of <unk>) is a placeholder that section 3
does not drop, as the decoder starts from a zero vector.

    /usr/bin/python3 tools/text_pipeline_reference.py MARIAN_DIR [--beam N]
        [--max-len N] [--source-spm FILE] [--target-spm FILE] [--margins FILE]
        < text > translations

The SentencePiece models default to MARIAN_DIR/source.spm and target.spm.
--margins writes each line's smallest decision margin (marian_reference's: the
greedy top-2 gap, or the beam search's nearest flip; inf for an empty line),
one per line, so that a comparison can leave out near-ties as
tests/golden/families does. Needs numpy, yaml and python3-sentencepiece.
"""

import argparse
import math
import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import marian_reference  # noqa: E402
import spm_reference  # noqa: E402

PROG = "text_pipeline_reference.py"
MAX_LEN = 256  # tessera translate's default --max-len


def marian_vocab(path):
    """spm_reference's (lines, piece -> id) of a Marian *.yml vocabulary."""
    ids = marian_reference.read_vocab(path)
    lines = [piece for piece, _ in sorted(ids.items(), key=lambda item: item[1])]
    return lines, {piece: i for i, piece in enumerate(lines)}


class TextPipeline:
    """A Marian model directory with its SentencePiece models, on text."""

    def __init__(self, marian_dir, source_spm=None, target_spm=None):
        self.model = marian_reference.MarianModel(marian_dir)
        vocab_files = [os.path.join(marian_dir, v) for v in self.model.decoder_options["vocabs"]]
        self.source_vocab = marian_vocab(vocab_files[0])
        self.target_vocab = marian_vocab(vocab_files[-1])
        self.source_spm = spm_reference.load_spm(source_spm or os.path.join(marian_dir, "source.spm"))
        self.target_spm = spm_reference.load_spm(target_spm or os.path.join(marian_dir, "target.spm"))

    def tokenize(self, text):
        """(source pieces, ids): no </s>, which the model appends."""
        return spm_reference.tokenize(self.source_spm, self.source_vocab, text, self.model.unk)

    def target_pieces(self, ids):
        return [self.target_vocab[0][i] for i in ids]

    def detokenize(self, ids):
        return spm_reference.detokenize(self.target_spm, self.target_vocab, ids, {self.model.eos})

    def search(self, ids, beam=1, max_len=MAX_LEN):
        """(target ids, the smallest margin of the search's decisions)."""
        if beam == 1:
            return self.model.greedy_with_margin(ids, max_len)
        best, margin = self.model.beam_search(ids, beam, max_len)
        return best[0].tokens, margin

    def translate(self, text, beam=1, max_len=MAX_LEN):
        """(the translation, its margin); an empty source gives ("", inf)."""
        _, ids = self.tokenize(text)
        if not ids:
            return "", math.inf
        target, margin = self.search(ids, beam, max_len)
        return self.detokenize(target), margin


def main(argv):
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    parser.add_argument("marian_dir", help="the Marian model directory (npz, decoder.yml, *.yml)")
    parser.add_argument("--source-spm", metavar="FILE", help="default: MARIAN_DIR/source.spm")
    parser.add_argument("--target-spm", metavar="FILE", help="default: MARIAN_DIR/target.spm")
    parser.add_argument("--beam", type=int, default=1, metavar="N", help="1 (default): greedy")
    parser.add_argument("--max-len", type=int, default=MAX_LEN, metavar="N")
    parser.add_argument("--margins", metavar="FILE", help="write each line's margin to FILE")
    args = parser.parse_args(argv)
    margins = open(args.margins, "w", encoding="utf-8") if args.margins else None
    try:
        pipeline = TextPipeline(args.marian_dir, args.source_spm, args.target_spm)
        for number, line in spm_reference.read_lines(sys.stdin.buffer):
            text, margin = pipeline.translate(spm_reference.text_of(number, line),
                                              args.beam, args.max_len)
            sys.stdout.buffer.write(text.encode("utf-8") + b"\n")
            sys.stdout.buffer.flush()
            if margins:
                margins.write("%.9g\n" % margin)
    except spm_reference.InputError as e:
        print("%s: %s" % (PROG, e), file=sys.stderr)
        return 1
    finally:
        if margins:
            margins.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
