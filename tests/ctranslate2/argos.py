"""An Argos Translate package for tests/argos-package.sh.

    argos.py WORK

trains a small SentencePiece model, writes a synthetic int8 CTranslate2
model (binary version 6, one shared vocabulary: <blank> <s> </s> <unk> then
the SentencePiece model's pieces, the embeddings shared and tied by aliases,
as OpenNMT-py models converted for Argos are) with synthetic.py's writer, and
lays them out as Argos Translate does: WORK/package/ (metadata.json,
sentencepiece.model, model/) and WORK/package.argosmodel, the same folder
zipped under one top folder. Then what tessera must print, from the
reference pipeline: SentencePiece's pieces of each sentence (tokenize.expected)
and its greedy translation (text.expected: SentencePiece -> ids through the
vocabulary -> tools/ctranslate2_reference.py's float64 greedy search on the
dequantized weights -> pieces, bos / eos / pad dropped -> SentencePiece's
decode), for the sentences whose every decision is clear by 1e-3 (text.in).
Also the packages tessera must refuse: WORK/refuse/NAME(.argosmodel) with
NAME.expected, words of the message.
"""

import io
import json
import os
import random
import shutil
import sys
import zipfile

import numpy as np
import sentencepiece as spm

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, "..", "..", "tools"))

import ctranslate2_files as files  # noqa: E402
import synthetic  # noqa: E402
from ctranslate2_reference import Ctranslate2Reference  # noqa: E402

SENTENCES = ["bela miro tase", "kato lune vira sami", "Miro, tase bela!", "nuvo kato",
             "sami sami lune", "tase vira kato miro bela", "zu 42 bela"]


def corpus(n):
    rng = random.Random(3)
    words = ["bela", "miro", "tase", "kato", "lune", "vira", "sami", "nuvo", "zu", "42",
             "Miro", "Kato", "tase,", "bela!"]
    return [" ".join(rng.choice(words) for _ in range(rng.randint(2, 8))) for _ in range(n)]


def train(path):
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(sentence_iterator=iter(corpus(2000)), model_writer=model,
                                   vocab_size=40, model_type="unigram", character_coverage=1.0,
                                   num_threads=1, hard_vocab_limit=False, minloglevel=2)
    with open(path, "wb") as f:
        f.write(model.getvalue())
    return spm.SentencePieceProcessor(model_file=path)


def write_package(folder, processor_file, vocab):
    os.makedirs(os.path.join(folder, "model"))
    shutil.copyfile(processor_file, os.path.join(folder, "sentencepiece.model"))
    n = len(vocab)
    m = synthetic.Model(11, dtype="int8", vocab_sizes=(n, n))
    m.matrix("decoder/embeddings/weight", n, synthetic.D, 0.5)
    m.vars["decoder/embeddings/weight"] *= 4  # the tied output layer: sharp
    m.vars["decoder/projection/bias"] = m.rng.uniform(-0.1, 0.1, n).astype(np.float32)
    # Tied to the embeddings, the output would repeat its input token: the
    # specials but </s> are pushed down, </s> a little.
    m.vars["decoder/projection/bias"][[0, 1, 3]] -= 6
    m.vars["decoder/projection/bias"][2] -= 1
    m.vars.pop("encoder/embeddings_0/weight")
    m.vars.pop("decoder/projection/weight")
    m.aliases = [("decoder/projection/weight", "decoder/embeddings/weight"),
                 ("encoder/embeddings_0/weight", "decoder/embeddings/weight")]
    model = os.path.join(folder, "model")
    files.write(os.path.join(model, "model.bin"), sorted(m.cast().items()), m.aliases)
    with open(os.path.join(model, "config.json"), "w") as f:
        json.dump(synthetic.v6_config(), f)
    files.write_vocabulary(model, "shared_vocabulary", vocab, False)
    metadata = {"package_version": "1.0", "argos_version": "1.9.0", "from_code": "xa",
                "from_name": "Xa", "to_code": "xb", "to_name": "Xb", "target_prefix": ""}
    with open(os.path.join(folder, "metadata.json"), "w") as f:
        json.dump(metadata, f)


def zip_folder(folder, path, top="translate-xa_xb-1_0", extra=()):
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        for root, _, names in os.walk(folder):
            for name in sorted(names):
                full = os.path.join(root, name)
                z.write(full, os.path.join(top, os.path.relpath(full, folder)))
        for name, data in extra:
            z.writestr(name, data)


def expectations(work, processor):
    package = os.path.join(work, "package")
    ref = Ctranslate2Reference(os.path.join(package, "model"))
    dropped = {ref.start, ref.eos, ref.tgt_index["<blank>"]}
    clear = []
    for text in SENTENCES:
        pieces = processor.encode(text, out_type=str)
        tokens, margin = ref.greedy_with_margin(ref.source_ids(pieces), 20)
        out = [ref.tgt_vocab[t] for t in tokens if t not in dropped]
        if margin > 1e-3:
            clear.append((text, processor.decode_pieces(out)))
    with open(os.path.join(work, "text.in"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t, _ in clear))
    with open(os.path.join(work, "text.expected"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for _, t in clear))
    with open(os.path.join(work, "score.in"), "w", encoding="utf-8") as f:
        for text, out in clear[:3]:
            f.write("%s\t%s\n" % (" ".join(processor.encode(text, out_type=str)),
                                  " ".join(processor.encode(out, out_type=str))))
    with open(os.path.join(work, "score.expected"), "w") as f:
        for text, out in clear[:3]:
            values = ref.score(ref.source_ids(processor.encode(text, out_type=str)),
                               ref.target_ids(processor.encode(out, out_type=str)))
            f.write(" ".join("%.9g" % v for v in values) + "\n")
    with open(os.path.join(work, "tokenize.in"), "w", encoding="utf-8") as f:
        f.write("".join(t + "\n" for t in SENTENCES))
    with open(os.path.join(work, "tokenize.expected"), "w", encoding="utf-8") as f:
        f.write("".join(" ".join(processor.encode(t, out_type=str)) + "\n" for t in SENTENCES))


def refusals(work):
    out = os.path.join(work, "refuse")
    os.makedirs(out)
    package = os.path.join(work, "package")

    def variant(name, words, change, zipped=False):
        folder = os.path.join(out, name)
        shutil.copytree(package, folder)
        change(folder)
        target = folder
        if zipped:
            target = folder + ".argosmodel"
            zip_folder(folder, target)
            shutil.rmtree(folder)
        with open(os.path.join(out, name + ".expected"), "w") as f:
            f.write(words + "\n")

    def bpe(folder):
        os.rename(os.path.join(folder, "sentencepiece.model"), os.path.join(folder, "bpe.model"))

    def prefix(folder):
        path = os.path.join(folder, "metadata.json")
        metadata = json.load(open(path))
        metadata["target_prefix"] = "__xb__"
        json.dump(metadata, open(path, "w"))

    def no_tokenizer(folder):
        os.remove(os.path.join(folder, "sentencepiece.model"))

    variant("bpe", "bpe.model: a BPE tokenizer", bpe)
    variant("bpe-zipped", "bpe.model: a BPE tokenizer", bpe, zipped=True)
    variant("target-prefix", "target_prefix '__xb__'", prefix)
    variant("no-tokenizer", "sentencepiece.model: missing", no_tokenizer)
    # A zip without a package, and one whose model is broken: the message
    # names the zip's part, never the directory it was unpacked into.
    with zipfile.ZipFile(os.path.join(out, "not-a-package.argosmodel"), "w") as z:
        z.writestr("readme.txt", "hello")
    with open(os.path.join(out, "not-a-package.expected"), "w") as f:
        f.write("no metadata.json\n")
    variant("broken-model", "model: model.bin:", lambda f: open(
        os.path.join(f, "model", "model.bin"), "wb").write(b"\x07\0\0\0"), zipped=True)


def main():
    work = sys.argv[1]
    processor = train(os.path.join(work, "sentencepiece.model"))
    pieces = [processor.id_to_piece(i) for i in range(processor.get_piece_size())
              if not (processor.is_control(i) or processor.is_unknown(i))]
    vocab = ["<blank>", "<s>", "</s>", "<unk>"] + pieces
    package = os.path.join(work, "package")
    write_package(package, os.path.join(work, "sentencepiece.model"), vocab)
    # An entry that would leave the directory it is unpacked in: never written.
    zip_folder(package, os.path.join(work, "package.argosmodel"),
               extra=[("translate-xa_xb-1_0/model/../../escaped.txt", "x"),
                      ("../escaped.txt", "x")])
    expectations(work, processor)
    refusals(work)


if __name__ == "__main__":
    main()
