"""tessera's converters: one package for every family tessera-convert reads.

registry   the families, their detection order, what each reads and needs
errors     ConvertError (the one error: one line naming the culprit) and notes
files      the one writer: config.json, model.safetensors, vocabularies, the
           SentencePiece models with config.json's `tokenizer`
pickles    the one pickle guard for torch.save'd checkpoints
hf_marian, hf_m2m100, fairseq, marian, opennmt, torch_transformer: the families

Adding a family: tools/README.md, "Adding a converter family".
"""
