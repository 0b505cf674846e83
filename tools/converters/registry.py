"""The families tessera-convert reads: each one module of this package and one
entry here, in the order INPUT is tried against them when --from is not given
(the first whose detect(INPUT) is true; torch, last, takes anything).

A family's module provides convert(INPUT, OUT_DIR, note, **options) (options:
its flags, source_spm and target_spm, trust_pickle when pickled), the detect
function its entry names, and optionally add_options(parser) for its own flags.
Nothing here imports a module until a family is needed, so that --help runs
with no dependency installed.
"""

import collections
import importlib

Family = collections.namedtuple(
    "Family", "name module detect reads chosen example needs pickled")

FAMILIES = (
    Family("hf-marian", "hf_marian", "detect",
           "a Hugging Face MarianMT directory (OPUS-MT as transformers ships it)",
           "a directory whose config.json says model_type marian", "opus-mt-en-de/",
           "numpy (torch for pytorch_model.bin)", False),
    Family("hf-m2m100", "hf_m2m100", "detect_m2m100",
           "a Hugging Face M2M100 or NLLB-200 directory, with its languages",
           "a directory whose config.json says model_type m2m_100",
           "nllb-200-distilled-600M/", "numpy, sentencepiece", False),
    Family("hf-mbart", "hf_m2m100", "detect_mbart",
           "a Hugging Face mBART-50 or mBART-cc25 directory, with its languages",
           "a directory whose config.json says model_type mbart",
           "mbart-large-50-many-to-many-mmt/", "numpy, sentencepiece", False),
    Family("fairseq", "fairseq", "detect",
           "a fairseq transformer checkpoint with its dict.*.txt",
           "a directory holding one *.pt and dict.*.txt, or a .pt with them beside it",
           "wmt16.en-de/", "numpy, torch", True),
    Family("marian", "marian", "detect",
           "a Marian (C++) transformer as OPUS-MT ships it (.npz, decoder.yml, vocabularies)",
           "any other directory, or an .npz file", "opus-mt-en-de/", "numpy, yaml", False),
    Family("opennmt-py", "opennmt", "detect",
           "an OpenNMT-py 3.x Transformer checkpoint",
           "a .pt whose pickle, read without running it, holds argparse.Namespace and the "
           "keys generator, vocab and opt", "model_step_10000.pt", "numpy, torch", True),
    Family("torch", "torch_transformer", "detect",
           "a torch.save'd checkpoint of the nn.Transformer translation model "
           "(tools/tessera_torch.py's names)",
           "anything else", "model.pt", "numpy, torch", True),
)

NAMES = tuple(family.name for family in FAMILIES)


def by_name(name):
    return FAMILIES[NAMES.index(name)]


def module_of(family):
    """The family's module (ImportError when a dependency it needs is missing)."""
    return importlib.import_module("%s.%s" % (__package__, family.module))


def detect(path):
    """The first family whose detect(path) is true."""
    for family in FAMILIES:
        if getattr(module_of(family), family.detect)(path):
            return family
    return FAMILIES[-1]
