/* The format layer on its own: core/model/safetensors.c and core/model/config.c. Every
 * malformed input must give -1 and a message naming the culprit; valid ones
 * must come back with exactly the values written. Last, what the model
 * builder makes of I8 weights for compute type int8. */
#define _GNU_SOURCE
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/quote.h"
#include "core/model/config.h"
#include "core/model/model.h"
#include "core/model/safetensors.h"
#include "simd/dispatch.h"
#include "tests/kernel_reference.h"
#include "tests/model_writer.h"
#include "tests/testutil.h"

static char *dir;
static char *weights; /* dir/model.safetensors */
static char err[1024];

static void make_dir(void)
{
    dir = test_make_temp_dir();
    weights = mw_path(dir, "model.safetensors");
    memset(err, 0, sizeof err);
}

static void remove_dir(void)
{
    test_remove_dir(dir);
    free(dir);
    free(weights);
}

TestSuite(safetensors, .init = make_dir, .fini = remove_dir);
TestSuite(config, .init = make_dir, .fini = remove_dir);

/* ---- safetensors helpers ------------------------------------------------ */

static void expect_contains(const char *message, const char *needle)
{
    cr_expect(strstr(message, needle) != NULL, "message \"%s\" should contain \"%s\"", message,
              needle);
}

/* Opening `weights` fails, leaves the struct empty and names every needle. */
static void expect_open_fails(const char *needle, const char *needle2)
{
    tsr_safetensors st;
    memset(&st, 0x5a, sizeof st);
    cr_assert_eq(tsr_safetensors_open(weights, &st, err, sizeof err), -1,
                 "opening should fail (wanted a message with \"%s\")", needle);
    cr_expect_null(st.bytes);
    cr_expect_null(st.tensors);
    cr_expect_eq(st.n_tensors, 0);
    cr_expect_eq(strchr(err, '\n'), NULL, "one-line message: \"%s\"", err);
    expect_contains(err, needle);
    if (needle2)
        expect_contains(err, needle2);
    tsr_safetensors_close(&st);
}

static void header_fails(const char *header, size_t data_bytes, const char *needle,
                         const char *needle2)
{
    mw_write_header_text(weights, header, data_bytes);
    expect_open_fails(needle, needle2);
}

static void open_ok(tsr_safetensors *st)
{
    int rc = tsr_safetensors_open(weights, st, err, sizeof err);
    cr_assert_eq(rc, 0, "open failed: %s", err);
}

/* ---- valid files ----------------------------------------------------------- */

Test(safetensors, tiny_model_round_trips)
{
    mw_model *m = mw_model_tiny(7);
    mw_add_optional_tensors(m);
    mw_write_safetensors(m, weights);
    tsr_safetensors st;
    open_ok(&st);
    cr_assert_eq(st.n_tensors, m->n_tensors, "__metadata__ is not a tensor");

    size_t header_len = 0;
    for (int i = 7; i >= 0; i--)
        header_len = (header_len << 8) | ((const unsigned char *)st.bytes)[i];
    const unsigned char *data_start = (const unsigned char *)st.bytes + 8 + header_len;

    for (size_t i = 0; i < m->n_tensors; i++) {
        const mw_tensor *w = &m->tensors[i];
        const tsr_tensor_info *t = tsr_safetensors_find(&st, w->name);
        cr_assert_not_null(t, "tensor '%s' not found", w->name);
        cr_expect_str_eq(t->name, w->name);
        cr_expect_eq(t->dtype, TSR_DTYPE_F32);
        cr_expect_str_eq(t->dtype_name, "F32");
        cr_assert_eq(t->ndim, w->ndim, "%s", w->name);
        for (size_t k = 0; k < w->ndim; k++)
            cr_expect_eq(t->shape[k], w->shape[k], "%s dim %zu", w->name, k);
        cr_expect_eq(t->count, w->count);
        cr_expect_eq(t->bytes, w->count * 4);
        cr_expect_eq((const unsigned char *)t->data, data_start + w->begin, "%s", w->name);
        cr_expect_eq(memcmp(t->data, w->values, t->bytes), 0, "%s data", w->name);
    }
    cr_expect_null(tsr_safetensors_find(&st, "generator.weights"));
    cr_expect_null(tsr_safetensors_find(&st, ""));
    cr_expect_null(tsr_safetensors_find(&st, "__metadata__"));
    tsr_safetensors_close(&st);
    cr_expect_null(st.bytes);
    tsr_safetensors_close(&st);
    mw_model_free(m);
}

Test(safetensors, half_precision_bits)
{
    mw_model *m = mw_model_tiny(1);
    mw_set_dtype(m, "generator.bias", "F16");
    mw_set_dtype(m, "generator.weight", "BF16");
    mw_tensor *bias = mw_find(m, "generator.bias");
    mw_tensor *weight = mw_find(m, "generator.weight");
    bias->values[0] = 0.5f;
    bias->values[1] = -0.25f;
    weight->values[0] = 0.5f;
    weight->values[1] = -0.25f;
    mw_write_safetensors(m, weights);

    tsr_safetensors st;
    open_ok(&st);
    const tsr_tensor_info *b = tsr_safetensors_find(&st, "generator.bias");
    const tsr_tensor_info *w = tsr_safetensors_find(&st, "generator.weight");
    cr_assert(b && w);
    cr_expect_eq(b->dtype, TSR_DTYPE_F16);
    cr_expect_str_eq(b->dtype_name, "F16");
    cr_expect_eq(b->bytes, 13 * 2);
    cr_expect_eq(w->dtype, TSR_DTYPE_BF16);
    cr_expect_str_eq(w->dtype_name, "BF16");
    cr_expect_eq(w->bytes, 13 * 8 * 2);
    /* IEEE binary16: 0.5 = 0x3800, -0.25 = 0xB400; bfloat16: 0x3F00, 0xBE80. */
    const unsigned char *hb = b->data, *wb = w->data;
    cr_expect_eq(hb[0] | hb[1] << 8, 0x3800);
    cr_expect_eq(hb[2] | hb[3] << 8, 0xB400);
    cr_expect_eq(wb[0] | wb[1] << 8, 0x3F00);
    cr_expect_eq(wb[2] | wb[3] << 8, 0xBE80);
    tsr_safetensors_close(&st);
    mw_model_free(m);
}

Test(safetensors, every_safetensors_dtype_is_accepted)
{
    static const char *const names[] = {"F64", "I64", "I32", "I16", "I8",  "U8",      "U16",
                                        "U32", "U64", "BOOL", "F8_E5M2", "F8_E4M3"};
    static const size_t sizes[] = {8, 8, 4, 2, 1, 1, 2, 4, 8, 1, 1, 1};
    mw_model *m = mw_model_tiny(2);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        mw_set_dtype(m, m->tensors[i].name, names[i]);
    mw_write_safetensors(m, weights);
    tsr_safetensors st;
    open_ok(&st);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const tsr_tensor_info *t = tsr_safetensors_find(&st, m->tensors[i].name);
        cr_assert_not_null(t);
        /* I8 is read (linear weights with a scale); the rest only parsed. */
        cr_expect_eq(t->dtype, strcmp(names[i], "I8") == 0 ? TSR_DTYPE_I8 : TSR_DTYPE_OTHER, "%s",
                     names[i]);
        cr_expect_str_eq(t->dtype_name, names[i]);
        cr_expect_eq(t->bytes, t->count * sizes[i], "%s", names[i]);
    }
    tsr_safetensors_close(&st);
    mw_model_free(m);
}

Test(safetensors, scalars_empty_tensors_and_extra_fields)
{
    mw_write_header_text(weights,
                         "{\"__metadata__\": {}, "
                         "\"scalar\": {\"dtype\": \"F32\", \"shape\": [], \"data_offsets\": [0, 4]},"
                         "\"empty\": {\"dtype\": \"F32\", \"shape\": [3, 0], \"data_offsets\": [4, 4]},"
                         "\"empty2\": {\"dtype\": \"F16\", \"shape\": [0], \"data_offsets\": [2, 2]},"
                         "\"eight\": {\"dtype\": \"U8\", \"shape\": [1,1,1,1,1,1,1,2],"
                         " \"data_offsets\": [4, 6], \"comment\": [1, {\"x\": null}]}}",
                         8);
    tsr_safetensors st;
    open_ok(&st);
    cr_assert_eq(st.n_tensors, 4);
    const tsr_tensor_info *s = tsr_safetensors_find(&st, "scalar");
    cr_assert_not_null(s);
    cr_expect_eq(s->ndim, 0);
    cr_expect_eq(s->count, 1);
    cr_expect_eq(s->bytes, 4);
    const tsr_tensor_info *e = tsr_safetensors_find(&st, "empty");
    cr_assert_not_null(e);
    cr_expect_eq(e->ndim, 2);
    cr_expect_eq(e->count, 0);
    cr_expect_eq(e->bytes, 0);
    const tsr_tensor_info *eight = tsr_safetensors_find(&st, "eight");
    cr_assert_not_null(eight);
    cr_expect_eq(eight->ndim, TSR_MAX_DIMS);
    cr_expect_eq(eight->count, 2);
    tsr_safetensors_close(&st);
}

Test(safetensors, header_without_tensors)
{
    mw_write_header_text(weights, "{}", 0);
    tsr_safetensors st;
    open_ok(&st);
    cr_expect_eq(st.n_tensors, 0);
    cr_expect_null(tsr_safetensors_find(&st, "x"));
    tsr_safetensors_close(&st);
}

Test(safetensors, close_is_safe_on_a_zeroed_struct)
{
    tsr_safetensors st = {0};
    tsr_safetensors_close(&st);
    cr_expect_null(tsr_safetensors_find(&st, "x"));
}

/* ---- the file itself ------------------------------------------------------------- */

Test(safetensors, missing_file)
{
    expect_open_fails("No such file", NULL);
}

Test(safetensors, empty_file)
{
    test_write_file(weights, "", 0);
    expect_open_fails("empty", NULL);
}

Test(safetensors, seven_byte_file)
{
    test_write_file(weights, "\x10\0\0\0\0\0\0", 7);
    expect_open_fails("too short", "7 bytes");
}

Test(safetensors, directory)
{
    cr_assert_eq(mkdir(weights, 0700), 0);
    expect_open_fails("directory", NULL);
}

/* A FIFO named like the weights (or a device, a socket) is refused at once:
 * opening a FIFO for reading would otherwise wait for a writer forever. */
Test(safetensors, fifo_is_refused_without_blocking, .timeout = 20)
{
    cr_assert_eq(mkfifo(weights, 0600), 0);
    expect_open_fails("not a regular file", NULL);
}

/* ---- a file that shrinks while it is loaded ------------------------------- */

typedef struct shrinker {
    const char *path;
    off_t full, cut;
    atomic_int stop;
    long cycles;
} shrinker;

/* Cuts the file short and grows it back (zeros) until told to stop. */
static void *shrink_and_restore(void *arg)
{
    shrinker *s = arg;
    int fd = open(s->path, O_WRONLY);
    cr_assert_geq(fd, 0);
    while (!atomic_load(&s->stop)) {
        cr_assert_eq(ftruncate(fd, s->cut), 0);
        cr_assert_eq(ftruncate(fd, s->full), 0);
        /* Whole for a while, so that some opens read it whole and others
         * see it cut in the middle of their read. */
        nanosleep(&(struct timespec){.tv_nsec = 1000 * 1000}, NULL);
        s->cycles++;
    }
    close(fd);
    return NULL;
}

/* While another thread cuts the weights file short and restores it, every
 * open either succeeds with bytes the process can read, or fails with one
 * line; nothing raises SIGBUS (which a loader that maps the file and reads
 * the mapping after the file shrank gets, and dies of). */
Test(safetensors, a_file_shrinking_during_the_load_is_an_error_not_a_crash, .timeout = 60)
{
    const size_t floats = (size_t)2 << 20; /* 8 MiB of data */
    char header[128];
    snprintf(header, sizeof header,
             "{\"w\": {\"dtype\": \"F32\", \"shape\": [%zu], \"data_offsets\": [0, %zu]}}",
             floats, floats * 4);
    mw_write_header_text(weights, header, floats * 4);
    struct stat sb;
    cr_assert_eq(stat(weights, &sb), 0);
    shrinker s = {.path = weights, .full = sb.st_size, .cut = (off_t)(strlen(header) + 8 + 4096)};
    pthread_t thread;
    cr_assert_eq(pthread_create(&thread, NULL, shrink_and_restore, &s), 0);
    int loaded = 0, failed = 0, shrank = 0;
    struct timespec start, now;
    clock_gettime(CLOCK_MONOTONIC, &start);
    do {
        tsr_safetensors st;
        if (tsr_safetensors_open(weights, &st, err, sizeof err) == 0) {
            /* Every byte of the tensor, as a load converting it would read. */
            const tsr_tensor_info *w = tsr_safetensors_find(&st, "w");
            cr_assert_not_null(w);
            volatile unsigned char sum = 0;
            for (size_t i = 0; i < w->bytes; i += 64)
                sum += ((const unsigned char *)w->data)[i];
            (void)sum;
            loaded++;
        } else {
            cr_assert_eq(strchr(err, '\n'), NULL, "one-line message: \"%s\"", err);
            failed++;
            shrank += strstr(err, "shrank while being read") != NULL;
        }
        tsr_safetensors_close(&st);
        clock_gettime(CLOCK_MONOTONIC, &now);
    } while (loaded + failed < 400 && now.tv_sec - start.tv_sec < 3);
    atomic_store(&s.stop, 1);
    pthread_join(thread, NULL);
    cr_log_info("%d opens read the whole file, %d failed cleanly (%d cut while being read), "
                "%ld cut-and-restore cycles", loaded, failed, shrank, s.cycles);
}

/* The model load reads the header first and each tensor when it packs it.
 * A file cut between the two (here by the test itself, so every run is the
 * same) makes the tensor's read a one-line error naming the tensor: never
 * SIGBUS, never a partial tensor taken for a whole one. */
Test(safetensors, a_file_cut_after_its_header_was_read_is_an_error)
{
    mw_model *m = mw_model_tiny(3);
    mw_write(m, dir);
    tsr_safetensors st;
    cr_assert_eq(tsr_safetensors_open_table(weights, &st, err, sizeof err), 0, "%s", err);
    cr_assert_null(st.bytes, "opened for its table, the file is not read whole");
    const tsr_tensor_info *t = tsr_safetensors_find(&st, "generator.weight");
    cr_assert_not_null(t);
    float *values = malloc(t->bytes);
    cr_assert_not_null(values);
    cr_assert_eq(tsr_safetensors_read(&st, t, 0, t->bytes, values, err, sizeof err), 0, "%s",
                 err);
    const mw_tensor *written = mw_find(m, "generator.weight");
    cr_expect(memcmp(values, written->values, t->bytes) == 0, "the read gives the values written");

    size_t cut = st.data_start + t->offset + t->bytes / 2;
    cr_assert_eq(truncate(weights, (off_t)cut), 0);
    cr_expect_neq(tsr_safetensors_read(&st, t, 0, t->bytes, values, err, sizeof err), 0);
    cr_expect(strstr(err, "tensor 'generator.weight'") != NULL, "names the tensor: %s", err);
    cr_expect(strstr(err, "shrank while being read") != NULL, "says why: %s", err);
    /* Its sizes, then and now (not where the read stopped, which once
     * passed for its length). */
    char sizes[128];
    snprintf(sizes, sizeof sizes, "%zu bytes when opened, %zu now", st.len, cut);
    cr_expect(strstr(err, sizes) != NULL, "says '%s': %s", sizes, err);
    cr_expect_eq(strchr(err, '\n'), NULL, "one line: %s", err);
    tsr_safetensors_close(&st);
    free(values);
    mw_model_free(m);
}

Test(safetensors, header_length_beyond_the_file)
{
    const char *header = "{}";
    mw_write_raw_safetensors(weights, 3, header, 0);
    expect_open_fails("header length 3", "2 bytes");
    mw_write_raw_safetensors(weights, UINT64_MAX, header, 0);
    expect_open_fails("header length 18446744073709551615", NULL);
}

Test(safetensors, header_length_too_small)
{
    mw_write_raw_safetensors(weights, 1, "{}", 0);
    expect_open_fails("header length 1", NULL);
    mw_write_raw_safetensors(weights, 0, "{}", 0);
    expect_open_fails("header length 0", NULL);
}

Test(safetensors, header_not_json)
{
    header_fails("{\"w\": {\"dtype\": \"F32\",\n \"shape\": [1] oops}}", 4, "not valid JSON",
                 "line 2");
}

Test(safetensors, header_is_not_an_object)
{
    header_fails("[1, 2]", 0, "expected a JSON object", "an array");
    header_fails("\"w\"", 0, "expected a JSON object", NULL);
}

Test(safetensors, duplicate_tensor_names)
{
    header_fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]},"
                 " \"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [4, 8]}}",
                 8, "duplicate", "w");
}

Test(safetensors, entry_not_an_object)
{
    header_fails("{\"generator.weight\": [0, 4]}", 4, "tensor 'generator.weight'",
                 "expected an object");
}

Test(safetensors, metadata_must_be_an_object_of_strings)
{
    header_fails("{\"__metadata__\": [1]}", 0, "__metadata__", "expected an object");
    header_fails("{\"__metadata__\": {\"format\": \"pt\", \"step\": 12}}", 0, "__metadata__",
                 "'step'");
}

Test(safetensors, dtype_missing_or_wrong)
{
    header_fails("{\"w.a\": {\"shape\": [1], \"data_offsets\": [0, 4]}}", 4, "tensor 'w.a'",
                 "dtype");
    header_fails("{\"w.b\": {\"dtype\": 4, \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                 "tensor 'w.b'", "dtype");
    header_fails("{\"w.c\": {\"dtype\": \"Q4_0\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                 "tensor 'w.c'", "unknown dtype 'Q4_0'");
    header_fails("{\"w.d\": {\"dtype\": \"f32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                 "tensor 'w.d'", "'f32'");
}

Test(safetensors, unknown_dtype_through_the_writer)
{
    mw_model *m = mw_model_tiny(3);
    mw_set_dtype(m, "transformer.decoder.layers.0.norm3.bias", "F128");
    mw_write_safetensors(m, weights);
    expect_open_fails("tensor 'transformer.decoder.layers.0.norm3.bias'", "F128");
    mw_model_free(m);
}

Test(safetensors, shape_missing_or_not_an_array)
{
    header_fails("{\"w\": {\"dtype\": \"F32\", \"data_offsets\": [0, 4]}}", 4, "tensor 'w'",
                 "shape");
    header_fails("{\"w\": {\"dtype\": \"F32\", \"shape\": 1, \"data_offsets\": [0, 4]}}", 4,
                 "tensor 'w'", "\"shape\" is an integer");
}

Test(safetensors, bad_dimensions)
{
    header_fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [2, -1], \"data_offsets\": [0, 4]}}", 4,
                 "tensor 'w'", "shape[1] is -1");
    header_fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [1.0], \"data_offsets\": [0, 4]}}", 4,
                 "tensor 'w'", "shape[0]");
    header_fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [\"1\"], \"data_offsets\": [0, 4]}}", 4,
                 "tensor 'w'", "shape[0]");
}

Test(safetensors, too_many_dimensions)
{
    mw_model *m = mw_model_tiny(4);
    mw_set_shape(m, "generator.bias", 9, (size_t[]){1, 1, 1, 1, 1, 1, 1, 1, 13});
    mw_write_safetensors(m, weights);
    expect_open_fails("tensor 'generator.bias'", "9 dimensions");
    mw_model_free(m);
}

Test(safetensors, offsets_not_two_integers)
{
    static const char *const bad[] = {"[0]", "[0, 4, 8]", "[\"0\", 4]", "[0, 4.0]", "4",
                                      "{\"begin\": 0}", "[-4, 0]", "[]"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char header[256];
        snprintf(header, sizeof header,
                 "{\"layer.w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": %s}}", bad[i]);
        header_fails(header, 8, "tensor 'layer.w'", "data_offsets");
    }
    header_fails("{\"layer.w\": {\"dtype\": \"F32\", \"shape\": [1]}}", 8, "tensor 'layer.w'",
                 "data_offsets");
}

Test(safetensors, begin_after_end)
{
    header_fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 4]}}", 8,
                 "tensor 'w'", "[8, 4]");
}

Test(safetensors, end_beyond_the_data)
{
    header_fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [8, 24]}}", 16,
                 "tensor 'w': data_offsets [8, 24] outside the data section (16 bytes)", NULL);

    mw_model *m = mw_model_tiny(5);
    mw_set_offsets(m, "generator.weight", 1u << 20, (1u << 20) + 13 * 8 * 4);
    mw_write_safetensors(m, weights);
    expect_open_fails("tensor 'generator.weight'", "outside the data section");
    mw_model_free(m);
}

Test(safetensors, truncated_data)
{
    mw_model *m = mw_model_tiny(6);
    m->truncate_bytes = 1;
    mw_write_safetensors(m, weights);
    /* The writer puts the generator bias last. */
    expect_open_fails("tensor 'generator.bias'", "outside the data section");
    mw_model_free(m);
}

Test(safetensors, size_mismatch)
{
    header_fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 12]}}", 16,
                 "tensor 'w'", "needs 16");
    header_fails("{\"w\": {\"dtype\": \"F16\", \"shape\": [2, 3], \"data_offsets\": [0, 16]}}", 16,
                 "tensor 'w'", "needs 12");

    mw_model *m = mw_model_tiny(8);
    mw_set_offsets(m, "src_tok_emb.embedding.weight", 0, 4);
    mw_write_safetensors(m, weights);
    expect_open_fails("tensor 'src_tok_emb.embedding.weight'", "needs 352");
    mw_model_free(m);
}

Test(safetensors, overflow_in_the_shape)
{
    header_fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [4294967296, 4294967296, 2],"
                 " \"data_offsets\": [0, 4]}}",
                 4, "tensor 'w'", "overflow");
    /* The element count fits but the byte count does not. */
    header_fails("{\"w\": {\"dtype\": \"F32\", \"shape\": [4611686018427387904],"
                 " \"data_offsets\": [0, 4]}}",
                 4, "tensor 'w'", "too large");
}

Test(safetensors, overlapping_tensors)
{
    mw_model *m = mw_model_tiny(9);
    mw_overlap(m, "tgt_tok_emb.embedding.weight", "generator.bias");
    mw_write_safetensors(m, weights);
    expect_open_fails("tensor 'generator.bias'", "tensor 'tgt_tok_emb.embedding.weight'");
    mw_model_free(m);

    /* One tensor inside another, listed first. */
    header_fails("{\"inner\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [8, 12]},"
                 " \"outer\": {\"dtype\": \"F32\", \"shape\": [4], \"data_offsets\": [0, 16]}}",
                 16, "'inner'", "'outer'");
    /* Identical spans. */
    header_fails("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                 " \"b\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}",
                 8, "'a'", "'b'");
    /* An empty tensor sorted between two overlapping ones hides nothing. */
    header_fails("{\"long\": {\"dtype\": \"U8\", \"shape\": [10], \"data_offsets\": [0, 10]},"
                 " \"none\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [2, 2]},"
                 " \"short\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [4, 6]}}",
                 10, "tensor 'short'", "overlap tensor 'long'");
}

Test(safetensors, adjacent_tensors_do_not_overlap)
{
    mw_write_header_text(weights,
                         "{\"b\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [4, 8]},"
                         " \"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]},"
                         " \"z\": {\"dtype\": \"U8\", \"shape\": [0], \"data_offsets\": [2, 2]}}",
                         8);
    tsr_safetensors st;
    open_ok(&st);
    cr_expect_eq(st.n_tensors, 3);
    const tsr_tensor_info *a = tsr_safetensors_find(&st, "a"), *b = tsr_safetensors_find(&st, "b");
    cr_assert(a && b);
    cr_expect_eq((const char *)b->data - (const char *)a->data, 4);
    tsr_safetensors_close(&st);
}

/* ---- config.json --------------------------------------------------------------- */

static const char *const base_keys[][2] = {
    {"d_model", "512"},        {"n_heads", "8"},          {"d_ff", "2048"},
    {"n_encoder_layers", "6"}, {"n_decoder_layers", "5"}, {"src_vocab_size", "1000"},
    {"tgt_vocab_size", "1200"},
};
#define N_BASE_KEYS (sizeof base_keys / sizeof base_keys[0])

/* The required keys with the values above, changed by (key, value) pairs: a
 * NULL value removes the key, a key not in the list is added. NULL-terminated. */
static char *config_with(const char *key, ...)
{
    const char *keys[32], *values[32];
    size_t n = 0;
    for (; n < N_BASE_KEYS; n++) {
        keys[n] = base_keys[n][0];
        values[n] = base_keys[n][1];
    }
    va_list ap;
    va_start(ap, key);
    for (const char *k = key; k; k = va_arg(ap, const char *)) {
        const char *v = va_arg(ap, const char *);
        size_t i = 0;
        while (i < n && strcmp(keys[i], k) != 0)
            i++;
        if (i == n) {
            cr_assert_lt(n, 32);
            keys[n++] = k;
        }
        values[i] = v;
    }
    va_end(ap);
    size_t len = 0;
    char *text = NULL;
    FILE *f = open_memstream(&text, &len);
    fputs("{", f);
    const char *sep = "";
    for (size_t i = 0; i < n; i++) {
        if (!values[i])
            continue;
        fprintf(f, "%s\n  \"%s\": %s", sep, keys[i], values[i]);
        sep = ",";
    }
    fputs("\n}\n", f);
    fclose(f);
    return text;
}

static void parse_ok(const char *json, tessera_config *cfg)
{
    int rc = tsr_config_parse(json, strlen(json), cfg, err, sizeof err);
    cr_assert_eq(rc, 0, "parse failed: %s\n%s", err, json);
}

static void parse_fails(char *json, const char *needle, const char *needle2)
{
    tessera_config cfg;
    int rc = tsr_config_parse(json, strlen(json), &cfg, err, sizeof err);
    cr_assert_eq(rc, -1, "parse should fail (wanted \"%s\"):\n%s", needle, json);
    cr_expect_eq(strchr(err, '\n'), NULL, "one-line message: \"%s\"", err);
    expect_contains(err, needle);
    if (needle2)
        expect_contains(err, needle2);
    free(json);
}

Test(config, defaults_for_optional_keys)
{
    char *json = config_with(NULL);
    tessera_config cfg;
    parse_ok(json, &cfg);
    free(json);
    cr_expect_eq(cfg.d_model, 512);
    cr_expect_eq(cfg.n_heads, 8);
    cr_expect_eq(cfg.d_ff, 2048);
    cr_expect_eq(cfg.n_encoder_layers, 6);
    cr_expect_eq(cfg.n_decoder_layers, 5);
    cr_expect_eq(cfg.src_vocab_size, 1000);
    cr_expect_eq(cfg.tgt_vocab_size, 1200);
    cr_expect_eq(cfg.max_positions, 1024);
    cr_expect_eq(cfg.activation, TESSERA_RELU);
    cr_expect_eq(cfg.norm_first, 0);
    cr_expect_float_eq(cfg.layer_norm_eps, 1e-5f, 1e-12f);
    cr_expect_eq(cfg.scale_embedding, 1);
    cr_expect_eq(cfg.bos_id, 2);
    cr_expect_eq(cfg.eos_id, 3);
    cr_expect_eq(cfg.pad_id, 1);
    cr_expect_eq(cfg.unk_id, 0);
    cr_expect_eq(cfg.layer_norm_form, TESSERA_LAYER_NORM_VARIANCE);

    tessera_config d;
    tsr_config_defaults(&d);
    cr_expect_eq(d.d_model, 0);
    cr_expect_eq(d.max_positions, 1024);
    cr_expect_eq(d.eos_id, 3);
}

Test(config, every_key_is_read)
{
    char *json = config_with("max_positions", "77", "activation", "\"gelu\"", "norm_first", "true",
                             "layer_norm_eps", "1e-6", "scale_embedding", "false", "bos_id", "10",
                             "eos_id", "11", "pad_id", "12", "unk_id", "13", NULL);
    tessera_config cfg;
    parse_ok(json, &cfg);
    free(json);
    cr_expect_eq(cfg.max_positions, 77);
    cr_expect_eq(cfg.activation, TESSERA_GELU);
    cr_expect_eq(cfg.norm_first, 1);
    cr_expect_float_eq(cfg.layer_norm_eps, 1e-6f, 1e-13f);
    cr_expect_eq(cfg.scale_embedding, 0);
    cr_expect_eq(cfg.bos_id, 10);
    cr_expect_eq(cfg.eos_id, 11);
    cr_expect_eq(cfg.pad_id, 12);
    cr_expect_eq(cfg.unk_id, 13);

    json = config_with("activation", "\"silu\"", "layer_norm_eps", "1", NULL);
    parse_ok(json, &cfg);
    free(json);
    cr_expect_eq(cfg.activation, TESSERA_SILU);
    cr_expect_float_eq(cfg.layer_norm_eps, 1.0f, 1e-9f);

    const char *forms[] = {"\"variance\"", "\"std\"", "\"std_unbiased\""};
    const tessera_layer_norm_form values[] = {TESSERA_LAYER_NORM_VARIANCE, TESSERA_LAYER_NORM_STD,
                                              TESSERA_LAYER_NORM_STD_UNBIASED};
    for (size_t i = 0; i < 3; i++) {
        json = config_with("layer_norm_form", forms[i], NULL);
        parse_ok(json, &cfg);
        free(json);
        cr_expect_eq(cfg.layer_norm_form, values[i], "%s", forms[i]);
    }
}

/* The keys model families add (docs/model-format.md). */
Test(config, family_keys_are_read)
{
    tessera_config cfg;
    char *json = config_with("src_vocab_size", "1200", NULL);
    parse_ok(json, &cfg);
    free(json);
    cr_expect_eq(cfg.position_encoding, TESSERA_POSITIONS_SINUSOID);
    cr_expect_eq(cfg.tie_output_projection + cfg.share_embeddings + cfg.n_source_suffix +
                     cfg.n_banned_target_ids + cfg.ban_logits, 0);
    cr_expect_eq(cfg.decoder_start, TESSERA_START_BOS);
    cr_expect_str_empty(cfg.family);

    json = config_with("src_vocab_size", "1200", "position_encoding", "\"sinusoid_halves_t2t\"",
                       "tie_output_projection", "true", "share_embeddings", "true",
                       "decoder_start", "\"zeros\"", "source_suffix", "[0, 1199]",
                       "banned_target_ids", "[1, 7, 1199]", "banned_target_ids_mode",
                       "\"logits\"", "family", "\"marian\"", NULL);
    parse_ok(json, &cfg);
    free(json);
    cr_expect_eq(cfg.position_encoding, TESSERA_POSITIONS_SINUSOID_HALVES_T2T);
    cr_expect_eq(cfg.tie_output_projection, 1);
    cr_expect_eq(cfg.share_embeddings, 1);
    cr_expect_eq(cfg.decoder_start, TESSERA_START_ZEROS);
    cr_expect_eq(cfg.n_source_suffix, 2);
    cr_expect_eq(cfg.source_suffix[1], 1199);
    cr_expect_eq(cfg.n_banned_target_ids, 3);
    cr_expect_eq(cfg.banned_target_ids[2], 1199);
    cr_expect_eq(cfg.ban_logits, 1);
    cr_expect_str_eq(cfg.family, "marian");

    json = config_with("position_encoding", "\"sinusoid_halves\"", "banned_target_ids_mode",
                       "\"log_probs\"", NULL);
    parse_ok(json, &cfg);
    free(json);
    cr_expect_eq(cfg.position_encoding, TESSERA_POSITIONS_SINUSOID_HALVES);
    cr_expect_eq(cfg.ban_logits, 0);
    cr_expect_eq(cfg.alignment_layer, 0); /* the last */

    json = config_with("alignment_layer", "3", "alignment_heads", "1", "position_offset", "2",
                       NULL);
    parse_ok(json, &cfg);
    free(json);
    cr_expect_eq(cfg.alignment_layer, 4); /* held 1-based */
    cr_expect_eq(cfg.alignment_heads, 1);
    cr_expect_eq(cfg.position_offset, 2);
    json = config_with("alignment_layer", "-1", NULL);
    parse_ok(json, &cfg);
    free(json);
    cr_expect_eq(cfg.alignment_layer, 0);
}

Test(config, family_keys_are_checked)
{
    parse_fails(config_with("position_encoding", "\"rotary\"", NULL),
                "key 'position_encoding': unknown encoding 'rotary' (sinusoid, sinusoid_halves, "
                "sinusoid_halves_t2t)", NULL);
    parse_fails(config_with("position_encoding", "\"sinusoid_halves\"", "d_model", "9",
                            "n_heads", "3", NULL),
                "key 'position_encoding': needs an even d_model, got 9", NULL);
    parse_fails(config_with("position_encoding", "\"sinusoid_halves_t2t\"", "d_model", "2",
                            "n_heads", "1", NULL),
                "key 'position_encoding': needs an even d_model >= 4, got 2", NULL);
    parse_fails(config_with("tie_output_projection", "1", NULL), "key 'tie_output_projection'",
                "expected true or false");
    parse_fails(config_with("share_embeddings", "true", NULL),
                "key 'share_embeddings': the vocabularies differ (1000 source, 1200 target)", NULL);
    parse_fails(config_with("decoder_start", "\"eos\"", NULL),
                "key 'decoder_start': unknown start 'eos' (bos, zeros)", NULL);
    parse_fails(config_with("source_suffix", "0", NULL), "key 'source_suffix'",
                "expected a list of ids");
    parse_fails(config_with("source_suffix", "[1000]", NULL),
                "key 'source_suffix': id 1000 is out of range [0, 1000) (src_vocab_size)", NULL);
    parse_fails(config_with("source_suffix", "[1, 2, 3, 4, 5]", NULL),
                "key 'source_suffix': 5 ids, at most 4", NULL);
    parse_fails(config_with("source_suffix", "[1, \"x\"]", NULL),
                "key 'source_suffix': item 2 is a string", NULL);
    parse_fails(config_with("source_suffix", "[-1]", NULL),
                "key 'source_suffix': id -1 is out of range", NULL);
    parse_fails(config_with("banned_target_ids", "[1200]", NULL),
                "key 'banned_target_ids': id 1200 is out of range [0, 1200) (tgt_vocab_size)",
                NULL);
    parse_fails(config_with("banned_target_ids", "[3]", NULL),
                "key 'banned_target_ids': bans eos_id (3)", NULL);
    parse_fails(config_with("banned_target_ids_mode", "\"probs\"", NULL),
                "key 'banned_target_ids_mode': unknown mode 'probs' (log_probs, logits)", NULL);
    parse_fails(config_with("family", "\"Marian NMT\"", NULL),
                "key 'family': 'Marian NMT' is not 1 to 31 of a-z", NULL);
    parse_fails(config_with("family", "7", NULL), "key 'family': expected a string", NULL);
    parse_fails(config_with("alignment_layer", "5", NULL),
                "key 'alignment_layer': 5 is not -1 (the last) or a decoder layer 0..4", NULL);
    parse_fails(config_with("alignment_layer", "-2", NULL), "key 'alignment_layer': -2", NULL);
    parse_fails(config_with("alignment_heads", "9", NULL),
                "key 'alignment_heads': 9 is out of range [0, 9)", NULL);
    parse_fails(config_with("position_offset", "-1", NULL), "key 'position_offset'", NULL);
    parse_fails(config_with("min_target_length", "1024", NULL),
                "key 'min_target_length': 1024 is out of range [0, 1024)", NULL);
    parse_fails(config_with("source_unk_id", "1000", NULL),
                "key 'source_unk_id': 1000 is out of range [0, 1000) (src_vocab_size)", NULL);
    parse_fails(config_with("n_decoder_layers", "0", "tgt_vocab_size", NULL,
                            "tie_output_projection", "true", NULL),
                "key 'tie_output_projection': an encoder alone has no target side", NULL);
}

Test(config, writer_text_round_trips)
{
    tessera_config want, got;
    mw_tiny_config(&want);
    want.activation = TESSERA_SILU;
    want.norm_first = 1;
    want.layer_norm_eps = 1e-6f;
    want.layer_norm_form = TESSERA_LAYER_NORM_STD_UNBIASED;
    want.has_source_unk_id = 1;
    want.source_unk_id = 10;
    char *json = mw_config_json(&want);
    parse_ok(json, &got);
    free(json);
    cr_expect_eq(memcmp(&want, &got, sizeof want), 0);
}

Test(config, unknown_keys_are_ignored)
{
    char *json = config_with("comment", "\"hello\"", "dropout", "0.1",
                             "architectures", "[\"Transformer\", {\"x\": null}]", NULL);
    tessera_config cfg;
    parse_ok(json, &cfg);
    free(json);
    cr_expect_eq(cfg.d_model, 512);
}

Test(config, each_required_key_missing)
{
    for (size_t i = 0; i < N_BASE_KEYS; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "key '%s': missing", base_keys[i][0]);
        parse_fails(config_with(base_keys[i][0], NULL, NULL), needle, NULL);
    }
}

Test(config, integers_must_be_json_integers)
{
    static const char *const int_keys[] = {"d_model",        "n_heads",        "d_ff",
                                           "n_encoder_layers", "n_decoder_layers",
                                           "src_vocab_size", "tgt_vocab_size", "max_positions",
                                           "bos_id",         "eos_id",         "pad_id",
                                           "unk_id"};
    static const char *const wrong[][2] = {{"\"8\"", "a string"},  {"8.0", "a real number"},
                                           {"true", "a boolean"}, {"null", "null"},
                                           {"[8]", "an array"},   {"{}", "an object"}};
    for (size_t i = 0; i < sizeof int_keys / sizeof int_keys[0]; i++) {
        for (size_t j = 0; j < sizeof wrong / sizeof wrong[0]; j++) {
            char needle[96];
            snprintf(needle, sizeof needle, "key '%s': expected an integer, got %s", int_keys[i],
                     wrong[j][1]);
            parse_fails(config_with(int_keys[i], wrong[j][0], NULL), needle, NULL);
        }
    }
}

Test(config, integers_beyond_int)
{
    parse_fails(config_with("d_model", "10000000000", NULL), "key 'd_model'", "10000000000");
    parse_fails(config_with("bos_id", "-10000000000", NULL), "key 'bos_id'", NULL);
}

Test(config, booleans_must_be_true_or_false)
{
    parse_fails(config_with("norm_first", "1", NULL), "key 'norm_first'", "an integer");
    parse_fails(config_with("scale_embedding", "\"true\"", NULL), "key 'scale_embedding'",
                "a string");
    parse_fails(config_with("norm_first", "null", NULL), "key 'norm_first'", NULL);
}

Test(config, activation)
{
    parse_fails(config_with("activation", "\"tanh\"", NULL),
                "key 'activation': unknown activation 'tanh' (relu, gelu, silu, gelu_tanh, gelu_sigmoid)", NULL);
    parse_fails(config_with("activation", "\"ReLU\"", NULL), "key 'activation'", "'ReLU'");
    parse_fails(config_with("activation", "1", NULL), "key 'activation'", "a string");
}

Test(config, layer_norm_eps)
{
    parse_fails(config_with("layer_norm_eps", "0", NULL), "key 'layer_norm_eps'", NULL);
    parse_fails(config_with("layer_norm_eps", "0.0", NULL), "key 'layer_norm_eps'", NULL);
    parse_fails(config_with("layer_norm_eps", "-1e-5", NULL), "key 'layer_norm_eps'", NULL);
    parse_fails(config_with("layer_norm_eps", "1e-60", NULL), "key 'layer_norm_eps'", NULL);
    parse_fails(config_with("layer_norm_eps", "1e300", NULL), "key 'layer_norm_eps'", NULL);
    parse_fails(config_with("layer_norm_eps", "\"1e-5\"", NULL), "key 'layer_norm_eps'",
                "a string");
}

Test(config, layer_norm_form)
{
    parse_fails(config_with("layer_norm_form", "\"rms\"", NULL),
                "key 'layer_norm_form': unknown form 'rms' (variance, std, std_unbiased)", NULL);
    parse_fails(config_with("layer_norm_form", "\"Variance\"", NULL), "key 'layer_norm_form'",
                "'Variance'");
    parse_fails(config_with("layer_norm_form", "2", NULL), "key 'layer_norm_form'", "an integer");
    parse_fails(config_with("layer_norm_form", "null", NULL), "key 'layer_norm_form'", NULL);
    parse_fails(config_with("layer_norm_form", "\"std_unbiased\"", "d_model", "1", "n_heads", "1",
                            NULL),
                "key 'layer_norm_form': 'std_unbiased' needs d_model >= 2", NULL);
}

/* An encoder alone: n_decoder_layers 0, and then no target vocabulary is
 * needed; special ids are checked against the source vocabulary only. */
Test(config, encoder_only)
{
    tessera_config cfg;
    char *json = config_with("n_decoder_layers", "0", "tgt_vocab_size", NULL, NULL);
    parse_ok(json, &cfg);
    free(json);
    cr_expect_eq(cfg.n_decoder_layers, 0);
    cr_expect_eq(cfg.tgt_vocab_size, 0);
    json = config_with("n_decoder_layers", "0", "tgt_vocab_size", NULL, "bos_id", "5000",
                       "eos_id", "5000", NULL);
    parse_ok(json, &cfg);
    free(json);
    parse_fails(config_with("n_decoder_layers", "0", "tgt_vocab_size", NULL, "unk_id", "1000",
                            NULL),
                "key 'unk_id': 1000 is out of range [0, 1000) (src_vocab_size)", NULL);
    parse_fails(config_with("n_decoder_layers", "-1", NULL), "key 'n_decoder_layers'", NULL);
    parse_fails(config_with("tgt_vocab_size", NULL, NULL), "key 'tgt_vocab_size': missing", NULL);
}

Test(config, n_heads_must_divide_d_model)
{
    parse_fails(config_with("n_heads", "5", NULL),
                "key 'n_heads': 5 does not divide d_model (512)", NULL);
    tessera_config cfg;
    char *json = config_with("n_heads", "512", NULL);
    parse_ok(json, &cfg);
    free(json);
}

Test(config, sizes_out_of_range)
{
    for (size_t i = 0; i < N_BASE_KEYS; i++) {
        char needle[64];
        snprintf(needle, sizeof needle, "key '%s'", base_keys[i][0]);
        /* n_decoder_layers 0 is an encoder alone (config::encoder_only). */
        if (strcmp(base_keys[i][0], "n_decoder_layers") != 0)
            parse_fails(config_with(base_keys[i][0], "0", NULL), needle, NULL);
        parse_fails(config_with(base_keys[i][0], "-3", NULL), needle, NULL);
        parse_fails(config_with(base_keys[i][0], "16777217", NULL), needle, NULL);
    }
    parse_fails(config_with("max_positions", "1", NULL), "key 'max_positions'", NULL);
    parse_fails(config_with("max_positions", "16777217", NULL), "key 'max_positions'", NULL);
    /* 16M positions in a 2.8 MB model once made loading take a minute and
     * 8 GB (the sinusoid table): bounded, with the bound named. */
    parse_fails(config_with("max_positions", "16777216", NULL), "key 'max_positions'",
                "[2, 65537) (TESSERA_MAX_POSITIONS_MAX)");
    tessera_config cfg;
    char *json = config_with("max_positions", "65536", "n_encoder_layers", "16777216", NULL);
    parse_ok(json, &cfg);
    free(json);
}

Test(config, special_ids_out_of_range)
{
    parse_fails(config_with("bos_id", "1200", NULL), "key 'bos_id'", "1200");
    parse_fails(config_with("bos_id", "-1", NULL), "key 'bos_id'", NULL);
    parse_fails(config_with("eos_id", "1200", NULL), "key 'eos_id'", NULL);
    parse_fails(config_with("eos_id", "-2", NULL), "key 'eos_id'", NULL);
    /* pad and unk are used on both sides: the smaller vocabulary bounds them. */
    parse_fails(config_with("pad_id", "1000", NULL), "key 'pad_id'", NULL);
    parse_fails(config_with("unk_id", "1000", NULL), "key 'unk_id'", NULL);
    parse_fails(config_with("unk_id", "-1", NULL), "key 'unk_id'", NULL);
    /* With a source_unk_id of its own, unk_id is the target's alone
     * (CTranslate2 appends <unk> to each vocabulary that lacks it). */
    tessera_config own;
    char *own_json = config_with("unk_id", "1100", "source_unk_id", "999", NULL);
    parse_ok(own_json, &own);
    free(own_json);
    cr_expect(own.unk_id == 1100 && own.source_unk_id == 999);
    parse_fails(config_with("unk_id", "1200", "source_unk_id", "999", NULL),
                "key 'unk_id': 1200 is out of range [0, 1200) (tgt_vocab_size)", NULL);
    /* fairseq's decoder starts from </s>: bos_id may be eos_id. */
    tessera_config same;
    char *same_json = config_with("bos_id", "7", "eos_id", "7", NULL);
    parse_ok(same_json, &same);
    free(same_json);
    cr_expect(same.bos_id == 7 && same.eos_id == 7);

    tessera_config cfg;
    char *json = config_with("bos_id", "1199", "eos_id", "0", "pad_id", "999", "unk_id", "999",
                             NULL);
    parse_ok(json, &cfg);
    free(json);
    cr_expect_eq(cfg.bos_id, 1199);
}

Test(config, invalid_json)
{
    parse_fails(strdup("{\n  \"d_model\": 512,\n  oops\n}"), "line 3", "JSON");
    parse_fails(strdup(""), "JSON", NULL);
    parse_fails(strdup("{\"d_model\": 512} trailing"), "JSON", NULL);
    parse_fails(config_with("d_model", "8, \"d_model\": 16", NULL), "d_model", NULL);
}

Test(config, top_level_not_an_object)
{
    parse_fails(strdup("[1, 2]"), "top level", "an array");
    parse_fails(strdup("42"), "top level", NULL);
}

Test(config, validate_filled_structs)
{
    tessera_config cfg;
    mw_tiny_config(&cfg);
    cr_expect_eq(tsr_config_validate(&cfg, err, sizeof err), 0, "%s", err);
    cfg.layer_norm_eps = 0;
    cr_expect_eq(tsr_config_validate(&cfg, err, sizeof err), -1);
    expect_contains(err, "key 'layer_norm_eps'");
    mw_tiny_config(&cfg);
    cfg.activation = (tessera_activation)7;
    cr_expect_eq(tsr_config_validate(&cfg, err, sizeof err), -1);
    expect_contains(err, "key 'activation'");
    mw_tiny_config(&cfg);
    cfg.n_heads = 3;
    cr_expect_eq(tsr_config_validate(&cfg, err, sizeof err), -1);
    expect_contains(err, "key 'n_heads': 3 does not divide d_model (8)");
    /* Transformer-big fits. */
    cfg = (tessera_config){.d_model = 1024, .n_heads = 16, .d_ff = 4096, .n_encoder_layers = 6,
                           .n_decoder_layers = 6, .src_vocab_size = 32000,
                           .tgt_vocab_size = 32000, .max_positions = 1024,
                           .layer_norm_eps = 1e-5f, .bos_id = 2, .eos_id = 3, .pad_id = 1};
    cr_expect_eq(tsr_config_validate(&cfg, err, sizeof err), 0, "%s", err);
}

Test(config, load_from_a_file, .timeout = 20)
{
    char *path = mw_path(dir, "config.json");
    tessera_config want, got;
    mw_tiny_config(&want);
    char *json = mw_config_json(&want);
    test_write_file(path, json, strlen(json));
    free(json);
    cr_assert_eq(tsr_config_load(path, &got, err, sizeof err), 0, "%s", err);
    cr_expect_eq(memcmp(&want, &got, sizeof want), 0);

    json = config_with("n_heads", "\"8\"", NULL);
    test_write_file(path, json, strlen(json));
    free(json);
    cr_assert_eq(tsr_config_load(path, &got, err, sizeof err), -1);
    char needle[1200];
    snprintf(needle, sizeof needle, "%s: key 'n_heads': expected an integer", path);
    expect_contains(err, needle);

    remove(path);
    cr_assert_eq(tsr_config_load(path, &got, err, sizeof err), -1);
    expect_contains(err, path);
    expect_contains(err, "No such file");

    cr_assert_eq(mkdir(path, 0700), 0);
    cr_assert_eq(tsr_config_load(path, &got, err, sizeof err), -1);
    expect_contains(err, path);
    expect_contains(err, "is a directory");

    /* A FIFO is refused without waiting for a writer. */
    cr_assert_eq(rmdir(path), 0);
    cr_assert_eq(mkfifo(path, 0600), 0);
    cr_assert_eq(tsr_config_load(path, &got, err, sizeof err), -1);
    expect_contains(err, path);
    expect_contains(err, "not a regular file (a FIFO)");
    free(path);
}

Test(config, messages_are_truncated_safely)
{
    char small[12];
    char *json = config_with("activation", "\"a-very-long-activation-name\"", NULL);
    tessera_config cfg;
    cr_assert_eq(tsr_config_parse(json, strlen(json), &cfg, small, sizeof small), -1);
    cr_expect_eq(strlen(small), sizeof small - 1);
    cr_expect_eq(tsr_config_parse(json, strlen(json), &cfg, NULL, 0), -1);
    free(json);
}

/* ---- What the files say, quoted ----------------------------------------------------- */

/* A tensor name or a config value is the file's to choose: in a message it
 * must not end the line, send a terminal escape or close its quote early.
 * jansson refuses raw control bytes and invalid UTF-8 inside strings, so a
 * file gets control bytes into a name only as JSON escapes (\u001b, \n),
 * and other bytes as valid UTF-8; what jansson quotes of a refused file
 * (the bytes near the error) is escaped too. */

TestSuite(quote);

static void expect_printable(const char *message)
{
    for (const unsigned char *p = (const unsigned char *)message; *p; p++)
        cr_expect(*p >= 0x20 && *p < 0x7f, "byte 0x%02x at %td of \"%s\" is not printable ASCII",
                  *p, (const char *)p - message, message);
}

Test(quote, every_byte_outside_printable_ascii_as_hex)
{
    char out[TSR_QUOTE_LEN];
    cr_expect_str_eq(tsr_quote(out, sizeof out, "a\x1b[2J\n\r\t\x7f\xff\xc3\xa9'\\\"z", '\''),
                     "a\\x1b[2J\\x0a\\x0d\\x09\\x7f\\xff\\xc3\\xa9\\x27\\x5c\"z");
    /* Outside quotes, a quote character is just a character. */
    cr_expect_str_eq(tsr_quote(out, sizeof out, "near '\x1b'", 0), "near '\\x1b'");
    cr_expect_str_eq(tsr_quote(out, sizeof out, "", '\''), "");
    const char *plain = "transformer.encoder.layers.1.self_attn.in_proj_bias";
    cr_expect_str_eq(tsr_quote(out, sizeof out, plain, '\''), plain);
}

Test(quote, long_text_is_cut_with_an_ellipsis)
{
    char text[1001], out[TSR_QUOTE_LEN], want[TSR_QUOTE_LEN];
    memset(text, 'a', 1000);
    text[1000] = '\0';
    memset(want, 'a', TSR_QUOTE_MAX);
    strcpy(want + TSR_QUOTE_MAX, "...");
    cr_expect_str_eq(tsr_quote(out, sizeof out, text, '\''), want);
    /* Exactly as long as the limit: whole. */
    text[TSR_QUOTE_MAX] = '\0';
    cr_expect_str_eq(tsr_quote(out, sizeof out, text, '\''), text);
    /* An escape that would cross the limit is left out whole. */
    text[TSR_QUOTE_MAX - 1] = '\x1b';
    memset(want, 'a', TSR_QUOTE_MAX - 1);
    strcpy(want + TSR_QUOTE_MAX - 1, "...");
    cr_expect_str_eq(tsr_quote(out, sizeof out, text, '\''), want);
    memset(text, '\x1b', 1000);
    text[1000] = '\0';
    tsr_quote(out, sizeof out, text, '\'');
    cr_expect_eq(strlen(out), TSR_QUOTE_MAX + 3);
    cr_expect_str_eq(out + TSR_QUOTE_MAX - 4, "\\x1b...");
    /* A smaller buffer cuts sooner. */
    cr_expect_str_eq(tsr_quote(out, 8, "abcdefgh", '\''), "abcd...");
}

Test(safetensors, names_and_dtypes_from_the_header_are_escaped)
{
    header_fails("{\"w\\u001b[31m\\nX\\u00e9'\\\\\": {\"dtype\": \"F32\", \"shape\": [2],"
                 " \"data_offsets\": [0, 4]}}",
                 4, "tensor 'w\\x1b[31m\\x0aX\\xc3\\xa9\\x27\\x5c': data_offsets [0, 4] hold 4",
                 NULL);
    expect_printable(err);
    header_fails("{\"w\": {\"dtype\": \"F\\u001b\\r\\u0085\", \"shape\": [1],"
                 " \"data_offsets\": [0, 4]}}",
                 4, "tensor 'w': unknown dtype 'F\\x1b\\x0d\\xc2\\x85'", NULL);
    expect_printable(err);
    header_fails("{\"__metadata__\": {\"\\u001b]0;pwned\\u0007\": 1}}", 0,
                 "'__metadata__': value of '\\x1b]0;pwned\\x07' is an integer", NULL);
    expect_printable(err);
    header_fails("{\"a\\n\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]},"
                 " \"b\\n\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [4, 12]}}",
                 12, "tensor 'b\\x0a'", "overlap tensor 'a\\x0a'");
    expect_printable(err);
}

Test(safetensors, raw_control_bytes_and_invalid_utf8_in_the_header)
{
    /* Refused by jansson, which quotes the bytes near the error. */
    header_fails("{\x1b[2J}", 0, "not valid JSON", "near '\\x1b'");
    expect_printable(err);
    header_fails("{\"w\x1b\\n\xff\": {\"dtype\": \"F32\", \"shape\": [1],"
                 " \"data_offsets\": [0, 4]}}",
                 4, "not valid JSON", "control character 0x1b");
    expect_printable(err);
    header_fails("{\"w\xff\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [0, 4]}}", 4,
                 "not valid JSON", "0xff");
    expect_printable(err);
}

Test(safetensors, a_long_name_is_cut_with_an_ellipsis)
{
    char name[301], header[600], needle[TSR_QUOTE_MAX + 64];
    memset(name, 'n', 300);
    name[300] = '\0';
    snprintf(header, sizeof header,
             "{\"%s\": {\"dtype\": \"Q4\", \"shape\": [1], \"data_offsets\": [0, 4]}}", name);
    snprintf(needle, sizeof needle, "tensor '%.*s...': unknown dtype 'Q4'", TSR_QUOTE_MAX, name);
    header_fails(header, 4, needle, NULL);
}

/* The whole load: the message names the file, then the tensor, escaped. */
Test(safetensors, a_model_load_quotes_the_files_names)
{
    mw_model *m = mw_model_tiny(5);
    const char *name = "extra\\u001b]0;title\\u0007\\n";
    mw_add(m, name, 1, (size_t[]){2});
    mw_set_dtype(m, name, "F\\u001b");
    mw_write(m, dir);
    mw_model_free(m);
    tessera_model *model = NULL;
    cr_assert_neq(tessera_model_load(dir, &model, err, sizeof err), 0);
    char needle[2048];
    snprintf(needle, sizeof needle,
             "%s: tensor 'extra\\x1b]0;title\\x07\\x0a': unknown dtype 'F\\x1b'", weights);
    cr_expect_str_eq(err, needle);
    expect_printable(err);
}

Test(config, string_values_and_what_jansson_quotes_are_escaped)
{
    parse_fails(config_with("activation", "\"\\u001b[2J\\r\\nkey 'd_model': fine\\\\\"", NULL),
                "key 'activation': unknown activation "
                "'\\x1b[2J\\x0d\\x0akey \\x27d_model\\x27: fine\\x5c' (relu, gelu, silu, gelu_tanh, gelu_sigmoid)",
                NULL);
    expect_printable(err);
    parse_fails(config_with("layer_norm_form", "\"\\u00ff\\u007f\"", NULL),
                "key 'layer_norm_form': unknown form '\\xc3\\xbf\\x7f'", NULL);
    expect_printable(err);
    /* Unknown keys are ignored, whatever their bytes: nothing to quote. */
    tessera_config cfg;
    char *json = config_with("\\u001b[31m\\n", "1", NULL);
    parse_ok(json, &cfg);
    free(json);
    parse_fails(config_with("activation", "\x1b[2J", NULL), "not valid JSON", "near '\\x1b'");
    expect_printable(err);
    parse_fails(config_with("activation", "\"relu\x1b\"", NULL), "not valid JSON",
                "control character 0x1b");
    expect_printable(err);
    parse_fails(config_with("activation", "\"relu\xff\"", NULL), "not valid JSON", "0xff");
    expect_printable(err);
    parse_fails(config_with("x\\u001b", "1, \"x\\u001b\": 2", NULL), "not valid JSON",
                "duplicate object key");
    expect_printable(err);
}

Test(config, a_long_value_is_cut_with_an_ellipsis)
{
    char value[503], needle[TSR_QUOTE_MAX + 64];
    value[0] = '"';
    memset(value + 1, 'v', 500);
    strcpy(value + 501, "\"");
    snprintf(needle, sizeof needle, "key 'activation': unknown activation '%.*s...' (relu",
             TSR_QUOTE_MAX, value + 1);
    parse_fails(config_with("activation", value, NULL), needle, NULL);
}

/* ---- I8 weights loaded as int8 ----------------------------------------------- */

TestSuite(i8_model, .init = make_dir, .fini = remove_dir);

/* Runs `lin` of the loaded model on m rows of x and checks every output
 * against the int8 definition on the file's q (lround(100 v)) and scales,
 * file rows [row0, row0 + lin->n) of tensor `w`. Returns how many outputs
 * differ from what the file's weights, widened and quantized again, would
 * give (0 would mean the test cannot tell the two loads apart). */
static size_t expect_file_values(const tessera_model *model, const tsr_packed_linear *lin,
                                 const mw_tensor *w, const mw_tensor *scale, size_t row0)
{
    enum { m = 5 };
    const size_t n = lin->n, k = lin->k;
    float x[m * 64], y[m * 64], want[m * 64], widened_want[m * 64];
    int8_t q[64 * 64], requantized[64 * 64];
    float widened[64 * 64], widened_scale[64];
    cr_assert(n <= 64 && k <= 64 && w->shape[1] == k);
    for (size_t j = 0; j < n; j++)
        for (size_t p = 0; p < k; p++) {
            q[j * k + p] = (int8_t)lroundf(w->values[(row0 + j) * k + p] * 100.0f);
            widened[j * k + p] = (float)q[j * k + p] * scale->values[row0 + j];
        }
    ref_rng rng;
    ref_rng_seed(&rng, 77);
    ref_fill_uniform(&rng, x, m, k, k, -2.0f, 2.0f);

    const tsr_kernels *ks = model->kernels;
    tsr_linear_args a = {.x = x, .ldx = k, .m = m, .w = lin, .n_begin = 0, .n_end = n,
                         .act = TSR_ACT_NONE, .y = y, .ldy = n};
    ks->linear(ks, &a);
    cr_assert(ref_linear_i8(x, k, m, q, scale->values + row0, n, k, lin->bias, want) == 0);
    ref_quantize_weights_i8(widened, k, n, k, requantized, widened_scale);
    cr_assert(ref_linear_i8(x, k, m, requantized, widened_scale, n, k, lin->bias,
                            widened_want) == 0);
    size_t differ = 0;
    for (size_t i = 0; i < m * n; i++) {
        cr_assert(memcmp(&y[i], &want[i], sizeof y[i]) == 0,
                  "%s [%zu][%zu]: %.9g, the file's q and scales give %.9g", w->name, i / n,
                  i % n, y[i], want[i]);
        differ += memcmp(&want[i], &widened_want[i], sizeof want[i]) != 0;
    }
    return differ;
}

/* With compute type int8, an I8 file's values and scales are packed as they
 * are (never widened to float32 and quantized again): the loaded layers give
 * the bits of the int8 definition on the file's own q and scales. The file's
 * rows stay below 127 (|q| <= 100), where quantizing again would change them,
 * and the test checks that this shows. The cross-attention's K/V rows are
 * rows d..3d of the file's in_proj (with their own scales). */
Test(i8_model, int8_takes_the_files_values_as_they_are)
{
    mw_model *mw = mw_model_tiny(15);
    const char *gen = "generator.weight";
    const char *cross = "transformer.decoder.layers.0.multihead_attn.in_proj_weight";
    mw_tensor *gen_scale = mw_quantize_i8(mw, gen);
    mw_tensor *cross_scale = mw_quantize_i8(mw, cross);
    mw_write(mw, dir);

    tessera_load_options options;
    tessera_load_options_init(&options);
    options.compute_type = TESSERA_COMPUTE_INT8;
    tessera_model *model;
    cr_assert_eq(tessera_model_load_with(dir, &options, &model, err, sizeof err), 0, "%s", err);
    cr_assert_eq(model->weight_type, TSR_WEIGHTS_INT8);
    size_t d = model->d, differ = 0;
    differ += expect_file_values(model, &model->generator, mw_find(mw, gen), gen_scale, 0);
    differ += expect_file_values(model, &model->dec[0].cross.kv, mw_find(mw, cross), cross_scale, d);
    differ += expect_file_values(model, &model->dec[0].cross.q, mw_find(mw, cross), cross_scale, 0);
    cr_expect_gt(differ, 0, "widening and quantizing again gave the same outputs: the test "
                            "cannot tell the loads apart");
    tessera_model_free(model);
    mw_model_free(mw);
}

/* ---- The packed weights: one result, however the file holds them ---------- */

TestSuite(packed, .init = make_dir, .fini = remove_dir);

typedef struct set_case {
    char isa[32];
} set_case;

static void free_set_cases(struct criterion_test_params *p) { cr_free(p->params); }

ParameterizedTestParameters(packed, same_bytes_whatever_the_dtype_and_threads)
{
    set_case *cases = cr_malloc(tsr_kernel_set_count * sizeof *cases);
    for (size_t s = 0; s < tsr_kernel_set_count; s++)
        snprintf(cases[s].isa, sizeof cases[s].isa, "%s", tsr_kernel_sets[s].name);
    return cr_make_param_array(set_case, cases, tsr_kernel_set_count, free_set_cases);
}

static tessera_model *load_packed(const char *from, tessera_compute_type type, int threads)
{
    tessera_load_options options;
    tessera_load_options_init(&options);
    options.compute_type = type;
    options.threads = threads;
    tessera_model *model;
    cr_assert_eq(tessera_model_load_with(from, &options, &model, err, sizeof err), 0, "%s", err);
    return model;
}

/* Every byte the load produced: the packed panels and the plain tensors. */
static void expect_same_model(const tessera_model *got, const tessera_model *want,
                              const char *what)
{
    cr_assert_eq(got->arena_used, want->arena_used, "%s: packed sizes differ", what);
    cr_assert_eq(got->plain_used, want->plain_used, "%s: plain sizes differ", what);
    cr_expect(memcmp(got->replicas[0], want->replicas[0], want->arena_used) == 0,
              "%s: the packed panels differ", what);
    cr_expect(memcmp(got->plain, want->plain, want->plain_used * sizeof(float)) == 0,
              "%s: the plain tensors differ", what);
}

static char *write_variant(mw_model *mw, const char *name)
{
    char *sub = mw_path(dir, name);
    cr_assert(mkdir(sub, 0700) == 0, "mkdir %s", sub);
    mw_write(mw, sub);
    return sub;
}

/* The load packs F32 weights from the file's bytes in place and every other
 * dtype through a staging copy, on as many threads as it is given: for
 * values F16, BF16 and I8 hold exactly (the writer's are), each way gives
 * the bytes of the one-thread F32 load, in each compute type, on each kernel
 * set. An I8 file compares with the F32 file of its dequantized values. */
ParameterizedTest(set_case *c, packed, same_bytes_whatever_the_dtype_and_threads)
{
    test_kernel_set_or_skip(c->isa);
    setenv("TESSERA_ISA", c->isa, 1); /* this test's process chooses once: this set */
    mw_model *mw = mw_model_tiny(23);
    mw_add_optional_tensors(mw);
    char *f32 = write_variant(mw, "f32");
    for (size_t i = 0; i < mw->n_tensors; i++)
        mw_set_dtype(mw, mw->tensors[i].name, "F16");
    char *f16 = write_variant(mw, "f16");
    for (size_t i = 0; i < mw->n_tensors; i++)
        mw_set_dtype(mw, mw->tensors[i].name, "BF16");
    char *bf16 = write_variant(mw, "bf16");
    for (size_t i = 0; i < mw->n_tensors; i++)
        mw_set_dtype(mw, mw->tensors[i].name, "F32");

    /* The I8 file, and the F32 file of what the load makes of it in f32. */
    size_t n = mw->n_tensors;
    for (size_t i = 0; i < n; i++)
        if (mw_is_linear_weight(&mw->tensors[i]))
            mw_quantize_i8(mw, mw->tensors[i].name);
    char *i8 = write_variant(mw, "i8");
    for (size_t i = 0; i < n; i++) {
        mw_tensor *t = &mw->tensors[i];
        if (!mw_is_linear_weight(t))
            continue;
        char scale_name[300];
        snprintf(scale_name, sizeof scale_name, "%s_scale", t->name);
        const float *scale = mw_find(mw, scale_name)->values;
        /* q as the writer stores it, times its row's scale: the load's f32. */
        for (size_t j = 0; j < t->count; j++)
            t->values[j] = (float)lroundf(t->values[j] * 100.0f) * scale[j / t->shape[1]];
        mw_set_dtype(mw, t->name, "F32");
    }
    char *dequantized = write_variant(mw, "dequantized");

    static const tessera_compute_type types[] = {TESSERA_COMPUTE_F32, TESSERA_COMPUTE_BF16,
                                                 TESSERA_COMPUTE_INT8};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        char what[96];
        tessera_model *want = load_packed(f32, types[t], 1);
        const char *const variants[] = {f32, f16, bf16};
        for (size_t v = 0; v < 3; v++)
            for (int threads = 1; threads <= 3; threads += 2) {
                tessera_model *got = load_packed(variants[v], types[t], threads);
                snprintf(what, sizeof what, "%s, %s file, compute type %s, %d threads", c->isa,
                         v == 0 ? "F32" : v == 1 ? "F16" : "BF16",
                         tessera_compute_type_name(types[t]), threads);
                expect_same_model(got, want, what);
                tessera_model_free(got);
            }
        tessera_model_free(want);
        /* int8 packs an I8 file's q as they are, not its dequantized values
         * quantized again (the test above): there, threads only. */
        want = load_packed(types[t] == TESSERA_COMPUTE_INT8 ? i8 : dequantized, types[t], 1);
        tessera_model *got = load_packed(i8, types[t], 3);
        snprintf(what, sizeof what, "%s, I8 file, compute type %s", c->isa,
                 tessera_compute_type_name(types[t]));
        expect_same_model(got, want, what);
        tessera_model_free(got);
        tessera_model_free(want);
    }
    free(f32);
    free(f16);
    free(bf16);
    free(i8);
    free(dequantized);
    mw_model_free(mw);
}

/* A linear weight of more than the load's staging (2^20 values: the output
 * layer of a 70,001-token vocabulary at d_model 16) is fetched and packed a
 * block of rows at a time: its panels are the kernel set's packing of the
 * whole, in f32, bf16 and int8, from an F32 and an F16 file, on 1 and 3
 * threads, and from an I8 file its q and scales packed as they are. */
Test(packed, a_large_weight_packed_a_block_of_rows_at_a_time)
{
    tessera_config cfg;
    mw_tiny_config(&cfg);
    cfg.d_model = 16;
    cfg.d_ff = 16;
    cfg.tgt_vocab_size = 70001;
    mw_model *mw = mw_model_new(&cfg, 29);
    const mw_tensor *g = mw_find(mw, "generator.weight");
    cr_assert(g && g->count > ((size_t)1 << 20), "the generator is no larger than the staging");
    char *f32 = write_variant(mw, "large-f32");
    mw_set_dtype(mw, "generator.weight", "F16");
    char *f16 = write_variant(mw, "large-f16");
    mw_set_dtype(mw, "generator.weight", "F32");
    static const tessera_compute_type types[] = {TESSERA_COMPUTE_F32, TESSERA_COMPUTE_BF16,
                                                 TESSERA_COMPUTE_INT8};
    for (size_t t = 0; t < 3; t++)
        for (int v = 0; v < 2; v++)
            for (int threads = 1; threads <= 3; threads += 2) {
                tessera_model *m = load_packed(v ? f16 : f32, types[t], threads);
                const tsr_kernels *ks = m->kernels;
                tsr_weight_type wt = types[t] == TESSERA_COMPUTE_BF16   ? TSR_WEIGHTS_BF16
                                     : types[t] == TESSERA_COMPUTE_INT8 ? TSR_WEIGHTS_INT8
                                                                        : TSR_WEIGHTS_F32;
                size_t bytes = ks->pack_bytes(ks, wt, cfg.tgt_vocab_size, 16);
                void *want = malloc(bytes);
                cr_assert(want);
                ks->pack_linear(ks, wt, g->values, cfg.tgt_vocab_size, 16, want);
                cr_expect(memcmp(m->generator.panels, want, bytes) == 0,
                          "%s file, compute type %s, %d threads: the output layer's panels are "
                          "not the packing of its weight",
                          v ? "F16" : "F32", tessera_compute_type_name(types[t]), threads);
                free(want);
                tessera_model_free(m);
            }
    /* An I8 file at compute type int8: its q and scales packed as they are. */
    mw_quantize_i8(mw, "generator.weight");
    g = mw_find(mw, "generator.weight"); /* the tensors may have moved */
    char *i8 = write_variant(mw, "large-i8");
    const float *scales = mw_find(mw, "generator.weight_scale")->values;
    size_t count = g->count;
    int8_t *q = malloc(count);
    cr_assert(q);
    for (size_t j = 0; j < count; j++)
        q[j] = (int8_t)lroundf(g->values[j] * 100.0f); /* as mw_quantize_i8 stores them */
    for (int threads = 1; threads <= 3; threads += 2) {
        tessera_model *m = load_packed(i8, TESSERA_COMPUTE_INT8, threads);
        const tsr_kernels *ks = m->kernels;
        size_t bytes = ks->pack_bytes(ks, TSR_WEIGHTS_INT8, cfg.tgt_vocab_size, 16);
        void *want = malloc(bytes);
        cr_assert(want);
        ks->pack_linear_i8(ks, q, scales, cfg.tgt_vocab_size, 16, 0, cfg.tgt_vocab_size, want);
        cr_expect(memcmp(m->generator.panels, want, bytes) == 0,
                  "I8 file, compute type int8, %d threads: the output layer's panels are not the "
                  "packing of its q and scales",
                  threads);
        free(want);
        tessera_model_free(m);
    }
    free(q);
    free(i8);
    free(f32);
    free(f16);
    mw_model_free(mw);
}

/* ---- One list of tensors -------------------------------------------------------- */

/* What the loader asks a weight source for, and what tessera_model_tensors
 * lists, as "name shape" lines, sorted: the two must be one list. */
typedef struct name_lines {
    char lines[512][200];
    size_t n;
} name_lines;

static void add_line(name_lines *l, const char *name, const size_t *shape, size_t ndim,
                     int optional)
{
    cr_assert(l->n < 512);
    char dims[64] = "";
    for (size_t i = 0; i < ndim; i++)
        snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%zu", i ? "x" : "", shape[i]);
    (void)optional; /* an optional norm's bias is required once its weight is there */
    snprintf(l->lines[l->n++], sizeof l->lines[0], "%s %s", name, dims);
}

static int recording_fetch(void *ctx, const char *name, const size_t *shape, size_t ndim,
                           int optional, int rows_at_least, float *dst, void *scratch, char *e,
                           size_t e_len)
{
    (void)rows_at_least, (void)scratch, (void)e, (void)e_len;
    name_lines *l = ctx;
    if (dst)
        return 0; /* the layout's fetches: the values do not matter here */
    for (size_t i = 0; i < l->n; i++) /* the tied table is checked twice: once is the list */
        if (strncmp(l->lines[i], name, strlen(name)) == 0 && l->lines[i][strlen(name)] == ' ')
            return 0;
    add_line(l, name, shape, ndim, optional);
    return 0; /* every one present: the loader then asks for all it can read */
}

static int listed(const tessera_tensor_spec *t, void *arg)
{
    add_line(arg, t->name, t->shape, t->ndim, t->optional);
    return 0;
}

static int by_line(const void *a, const void *b) { return strcmp(a, b); }

Test(tensors, the_loader_reads_the_one_list)
{
    tessera_config variants[6];
    for (int v = 0; v < 6; v++)
        mw_tiny_config(&variants[v]);
    variants[1].tie_output_projection = 1;
    variants[2].src_vocab_size = variants[2].tgt_vocab_size;
    variants[2].share_embeddings = variants[2].tie_output_projection = 1;
    variants[3].n_decoder_layers = 0;
    variants[3].tgt_vocab_size = 0;
    variants[4].position_offset = 2;
    variants[4].n_encoder_layers = 2;
    variants[5].n_decoder_layers = 3;
    for (int v = 0; v < 6; v++) {
        for (int type = 0; type < 3; type++) {
            static name_lines loaded, want;
            loaded.n = want.n = 0;
            tsr_weight_source src = {.fetch = recording_fetch, .ctx = &loaded};
            tessera_model *m = NULL;
            /* The checking pass asks for every tensor it can read. */
            char why[128];
            const tsr_kernels *ks = tsr_kernels_lookup("scalar", why, sizeof why);
            cr_assert(ks, "%s", why);
            cr_assert_eq(tsr_model_build(&variants[v], ks, (tessera_compute_type)type, NULL, 1,
                                         &src, &m, err, sizeof err), 0, "%s", err);
            tessera_model_free(m);
            cr_assert_eq(tessera_model_tensors(&variants[v], listed, &want, err, sizeof err), 0,
                         "%s", err);
            qsort(loaded.lines, loaded.n, sizeof loaded.lines[0], by_line);
            qsort(want.lines, want.n, sizeof want.lines[0], by_line);
            cr_assert_eq(loaded.n, want.n, "variant %d, type %d: the loader asks for %zu tensors, "
                         "the list has %zu", v, type, loaded.n, want.n);
            for (size_t i = 0; i < want.n; i++)
                cr_assert_str_eq(loaded.lines[i], want.lines[i], "variant %d, type %d: loader \"%s\", list \"%s\"", v, type, loaded.lines[i], want.lines[i]);
        }
    }
}
