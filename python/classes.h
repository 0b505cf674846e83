/* The module's classes, subclasses of tessera.Model (python/engine.h), and
 * their docstrings (python/tessera.pyi types them). */
#ifndef TSR_PY_CLASSES_H
#define TSR_PY_CLASSES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "python/engine.h"

extern PyTypeObject tsr_py_translator_type;
extern PyTypeObject tsr_py_encoder_type;

#define TSR_PY_DOC_MODEL_ARGS                                                                    \
    "model: a model directory (config.json, model.safetensors).\n"                               \
    "compute_type: 'f32' (default), 'bf16', 'int8', or 'default' (TESSERA_COMPUTE_TYPE).\n"      \
    "workers: runtimes sharing the one loaded model, each with threads of its own\n"            \
    "  (CTranslate2's inter_threads): that many calls compute at once; more wait.\n"             \
    "threads: threads of each worker (intra_threads); 0: TESSERA_NUM_THREADS, else\n"           \
    "  the cores shared among the workers.\n"                                                    \
    "max_memory: bytes of working memory each worker may plan at once (None: half\n"            \
    "  the memory available, shared among the workers).\n"                                       \
    "\n"                                                                                         \
    "Raises FileNotFoundError or OSError when the model cannot be read,\n"                      \
    "ValueError for a bad argument, MemoryError when memory runs out. Calls release\n"          \
    "the GIL; the object is safe from any number of threads, and frees the model\n"              \
    "when its last reference goes.\n"

#define TSR_PY_DOC_TRANSLATOR                                                                    \
    "Translator(model, compute_type='f32', workers=1, threads=0, max_memory=None,\n"           \
    "    vmap=None, shortlist=None, shortlist_first=None, shortlist_best=None,\n"              \
    "    shortlist_threshold=0.0)\n"                                                             \
    "\n"                                                                                         \
    "An encoder-decoder model, loaded once, for translate_batch and score_batch.\n"            \
    "\n" TSR_PY_DOC_MODEL_ARGS                                                                   \
    "vmap: a CTranslate2 vocabulary map, or shortlist: a Marian lexical shortlist (text,\n"    \
    "  with shortlist_first/_best/_threshold as --shortlist-first/-best/-threshold; or\n"      \
    "  binary), that every translate_batch call then decodes over (README \"Vocabulary\n"     \
    "  shortlists\"). The model directory's vmap.txt, when it has one, is read too,\n"        \
    "  for translate_batch(use_vmap=True) (CTranslate2's); one that cannot be read is\n"       \
    "  that call's ValueError, not the constructor's.\n"

#define TSR_PY_DOC_ENCODER                                                                       \
    "Encoder(model, compute_type='f32', workers=1, threads=0, max_memory=None)\n"              \
    "\n"                                                                                         \
    "A model's encoder, for encode_batch (an encoder-only model, or the encoder of a\n"         \
    "translation model).\n"                                                                      \
    "\n" TSR_PY_DOC_MODEL_ARGS

#define TSR_PY_DOC_SENTENCES                                                                     \
    "Sentences are lists of token ids, lists of pieces (str, lines of vocab.src.txt /\n"        \
    "vocab.tgt.txt; an unknown piece is unk_id) or str (text, through the model's\n"            \
    "SentencePiece tokenizer); one form a call.\n"

#define TSR_PY_DOC_BATCHING                                                                      \
    "max_batch_size: sentences decoded together (batch_type 'examples'), or source\n"           \
    "  tokens a batch holds at most (batch_type 'tokens'); 0: the whole call. The\n"            \
    "  results do not depend on it.\n"

#define TSR_PY_DOC_LANGUAGES                                                                     \
    "source_lang, target_lang: a multilingual model's languages by name ('eng_Latn',\n"        \
    "  'en_XX'), as --source-lang and --target-lang take them; required by a model\n"          \
    "  that takes them, refused by one that does not.\n"

#define TSR_PY_DOC_TRANSLATE_BATCH                                                               \
    "translate_batch(source, target_prefix=None, *, max_batch_size=0,\n"                        \
    "    batch_type='examples', beam_size=1, max_decoding_length=256,\n"                        \
    "    num_hypotheses=1, length_penalty=0, return_scores=False,\n"                            \
    "    return_alignments=False, sampling_topk=1, sampling_topp=1.0,\n"                        \
    "    sampling_temperature=1.0, seed=0, min_decoding_length=0,\n"                            \
    "    no_repeat_ngram_size=0, repetition_penalty=1.0, disable_unk=False,\n"                  \
    "    end_token=None, source_lang=None, target_lang=None, use_vmap=False,\n"                 \
    "    callback=None)\n"                                                                       \
    "    -> list[TranslationResult]\n"                                                           \
    "\n"                                                                                         \
    "Translates the source sentences, as `tessera translate` does with the same\n"             \
    "options (README \"Decoding options\"): the same bits. " TSR_PY_DOC_SENTENCES               \
    "Hypotheses come in the source's form (ids, pieces, text).\n"                               \
    "target_prefix: None, or one target sentence per source (any form), forced first.\n"        \
    "    On a model that forces a target language, prefixes that start with its token\n"         \
    "    (CTranslate2's [['fra_Latn']], pieces or ids) name target_lang, once per call.\n"       \
    "seed: sentence i of the call samples from stream (seed, i).\n"                             \
    "end_token: None, or a target id (or piece) that also ends a hypothesis.\n"                 \
    "use_vmap: decode over the model directory's vmap.txt, as CTranslate2's use_vmap\n"        \
    "  (a Translator made with vmap= or shortlist= always decodes over its own).\n"            \
    "callback: None, or fn(step) called with each token as it is decoded, a\n"                 \
    "  GenerationStepResult (CTranslate2's fields: batch_id, step, token_id, token,\n"          \
    "  log_prob, hypothesis_id); a true return ends that sentence (beam search: its\n"        \
    "  best hypothesis, once final). An exception in fn ends the call, raised from it.\n"    \
    TSR_PY_DOC_LANGUAGES                                                                         \
    TSR_PY_DOC_BATCHING                                                                          \
    "Raises ValueError for a bad sentence or option (its message names it), TypeError\n"        \
    "for a wrong type, MemoryError when a sentence needs more than the memory budget.\n"

#define TSR_PY_DOC_SCORE_BATCH                                                                   \
    "score_batch(source, target, *, max_batch_size=0, batch_type='examples',\n"                \
    "    source_lang=None, target_lang=None) -> list[ScoringResult]\n"                           \
    "\n"                                                                                         \
    "Teacher-forced scores, as `tessera score`: for each pair, log_probs holds the\n"           \
    "natural-log probability of each target token and then of the end of sentence.\n"           \
    TSR_PY_DOC_SENTENCES TSR_PY_DOC_BATCHING TSR_PY_DOC_LANGUAGES

#define TSR_PY_DOC_ENCODE_BATCH                                                                  \
    "encode_batch(source, *, pooling='none', max_batch_size=0, batch_type='examples',\n"        \
    "    source_lang=None)\n"                                                                    \
    "    -> list[FloatArray]\n"                                                                  \
    "\n"                                                                                         \
    "The encoder's output, as `tessera encode`: per sentence a float32 array of shape\n"        \
    "(tokens, d_model) (the ids the model appends to a source included), or with\n"             \
    "pooling 'mean' or 'first' one vector of shape (d_model,). numpy.asarray() reads\n"         \
    "it without a copy. " TSR_PY_DOC_SENTENCES TSR_PY_DOC_BATCHING                              \
    "source_lang: a multilingual model's source language, as translate_batch's.\n"

#endif
