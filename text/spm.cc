// The SentencePiece shim (text/spm.h): C in, C out, no exception escapes.
#include <sentencepiece_processor.h>

#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <string_view>
#include <vector>

extern "C" {
#include "base/errors.h"
#include "base/memory.h"
#include "text/spm.h"
}

struct tsr_spm {
    sentencepiece::SentencePieceProcessor processor;
};

// The message of whatever was thrown, as a status: memory is its own kind.
static int caught(const char *what, char *err, size_t err_len, const char *name)
{
    try {
        throw;
    } catch (const std::bad_alloc &) {
        return tsr_fail_oom(err, err_len, "%s: out of memory in SentencePiece", name);
    } catch (const std::exception &e) {
        return tsr_fail_internal(err, err_len, "%s: SentencePiece failed %s: %s", name, what,
                                 e.what());
    } catch (...) {
        return tsr_fail_internal(err, err_len, "%s: SentencePiece failed %s", name, what);
    }
}

extern "C" int tsr_spm_available(void) { return 1; }

extern "C" int tsr_spm_load(const char *name, const void *bytes, size_t len, tsr_spm **out,
                            char *err, size_t err_len)
{
    *out = nullptr;
    tsr_spm *spm = nullptr;
    try {
        spm = new tsr_spm;
        auto status = spm->processor.LoadFromSerializedProto(
            std::string_view(static_cast<const char *>(bytes), len));
        if (!status.ok()) {
            std::string why = status.ToString();
            delete spm;
            return tsr_fail(err, err_len, "%s: not a SentencePiece model (%s)", name, why.c_str());
        }
        // A model that loads but has no pieces cannot encode anything.
        if (spm->processor.GetPieceSize() <= 0) {
            delete spm;
            return tsr_fail(err, err_len, "%s: a SentencePiece model without pieces", name);
        }
    } catch (...) {
        delete spm;
        return caught("to load", err, err_len, name);
    }
    *out = spm;
    return 0;
}

extern "C" void tsr_spm_free(tsr_spm *spm) { delete spm; }

extern "C" int tsr_spm_encode(const tsr_spm *spm, const char *text, size_t len,
                              tsr_spm_piece_fn piece, void *arg, char *err, size_t err_len)
{
    std::vector<std::string> pieces;
    try {
        auto status = spm->processor.Encode(std::string_view(text, len), &pieces);
        if (!status.ok())
            return tsr_fail(err, err_len, "SentencePiece cannot encode it: %s",
                            status.ToString().c_str());
    } catch (...) {
        return caught("to encode", err, err_len, "the text");
    }
    for (const std::string &p : pieces) {
        int rc = piece(arg, p.data(), p.size());
        if (rc != 0)
            return rc;
    }
    return 0;
}

extern "C" int tsr_spm_decode(const tsr_spm *spm, const char *const *pieces, size_t n,
                              char **text, size_t *len, char *err, size_t err_len)
{
    *text = nullptr;
    std::string out;
    try {
        // Views of the caller's pieces: no copy of each into a std::string.
        std::vector<absl::string_view> list(pieces, pieces + n);
        auto status = spm->processor.Decode(list, &out);
        if (!status.ok())
            return tsr_fail(err, err_len, "SentencePiece cannot decode it: %s",
                            status.ToString().c_str());
    } catch (...) {
        return caught("to decode", err, err_len, "the pieces");
    }
    char *copy = static_cast<char *>(tsr_malloc(out.size() + 1));
    if (!copy)
        return tsr_fail_oom(err, err_len, "out of memory decoding %zu pieces", n);
    std::memcpy(copy, out.data(), out.size());
    copy[out.size()] = '\0';
    *text = copy;
    *len = out.size();
    return 0;
}
