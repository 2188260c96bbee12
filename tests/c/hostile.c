/*
 * Hostile input at the edgeguard C ABI, from C, against include/edgeguard.h.
 *
 * Built twice: with -fsanitize=address,undefined (scripts/c-abi-test.sh) and
 * plain against the release library under valgrind (scripts/valgrind.sh).
 * Every case checks the documented result code; the sanitizers and valgrind
 * check that nothing reads or writes outside what the caller handed over and
 * that every handle is released.
 *
 * Usage: hostile FIXTURE_DIR   (tests/fixtures/catboost)
 * Prints one line per failure and closes with "N passed, N failed".
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#define _GNU_SOURCE /* memmem */
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "edgeguard.h"

static int passed, failed;
static const char *fixture_dir;

#define CHECK(cond, ...)                                                      \
    do {                                                                      \
        if (cond) {                                                           \
            passed++;                                                         \
        } else {                                                              \
            failed++;                                                         \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                       \
            printf(__VA_ARGS__);                                              \
            printf("\n");                                                     \
        }                                                                     \
    } while (0)

#define CHECK_CODE(got, want, what)                                           \
    CHECK((got) == (want), "%s: got %d (%s), want %d", what, (int)(got),      \
          edgeguard_result_text(got), (int)(want))

static void *xmalloc(size_t n) {
    void *p = malloc(n ? n : 1);
    if (!p) {
        perror("malloc");
        exit(2);
    }
    return p;
}

/* Reads a whole fixture; *len receives its size. */
static uint8_t *read_fixture(const char *name, size_t *len) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", fixture_dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *buf = xmalloc((size_t)n);
    if (fread(buf, 1, (size_t)n, f) != (size_t)n) {
        perror(path);
        exit(2);
    }
    fclose(f);
    *len = (size_t)n;
    return buf;
}

static edgeguard_str str_of(const void *p, size_t n) {
    edgeguard_str s = {(int)n, (const uint8_t *)p};
    return s;
}

/* ------------------------------------------------------------ result codes */

static void test_result_text(void) {
    for (int code = 0; code <= 10; code++) {
        const char *t = edgeguard_result_text(code);
        CHECK(t && *t && strcmp(t, "unknown result code") != 0, "text of %d", code);
        for (int other = 0; other < code; other++)
            CHECK(strcmp(t, edgeguard_result_text(other)) != 0, "%d and %d share text", code, other);
    }
    int unknown[] = {-1, 11, 12, 1000, INT32_MIN, INT32_MAX};
    for (size_t i = 0; i < sizeof unknown / sizeof *unknown; i++)
        CHECK(strcmp(edgeguard_result_text(unknown[i]), "unknown result code") == 0, "text of %d",
              unknown[i]);
    const char *v = edgeguard_version();
    CHECK(v && strchr(v, '.'), "version %s", v ? v : "(null)");
}

/* ------------------------------------------------- process "models in force" */

static void test_process_flag(void) {
    CHECK(edgeguard_process_models_in_force() == 0, "a new process has no models in force");
    int values[] = {1, -1, 2, INT32_MIN, INT32_MAX, 0};
    for (size_t i = 0; i < sizeof values / sizeof *values; i++) {
        edgeguard_process_set_models_in_force(values[i]);
        CHECK(edgeguard_process_models_in_force() == (values[i] != 0), "flag after setting %d", values[i]);
    }
}

/* ------------------------------------------------------------- header sets */

static edgeguard_result parse_list(const void *buf, size_t len, const char *source,
                                   edgeguard_header_set **out, char *err, size_t err_len) {
    return edgeguard_header_set_new_from_buffer((const uint8_t *)buf, len, source, out, err, err_len);
}

static void test_header_list_nulls(void) {
    edgeguard_header_set *set = NULL;
    char err[128];
    const char list[] = "x-user-id\n";
    CHECK_CODE(edgeguard_header_set_new_from_file(NULL, &set, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "file: null path");
    CHECK_CODE(edgeguard_header_set_new_from_file("/dev/null", NULL, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "file: null out");
    CHECK_CODE(parse_list(list, 10, NULL, NULL, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "buffer: null out");
    CHECK_CODE(parse_list(NULL, 10, NULL, &set, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "buffer: null data with a length");
    CHECK(set == NULL, "out written on failure");
    CHECK_CODE(parse_list(list, sizeof list - 1, NULL, &set, NULL, 0), EDGEGUARD_RESULT_OK,
               "null source and errbuf");
    CHECK(edgeguard_header_set_len(set) == 1, "len");
    edgeguard_header_set_free(set);
    edgeguard_header_set_free(NULL);
    CHECK(edgeguard_header_set_len(NULL) == 0, "len of null");
}

struct list_case {
    const char *what;
    const char *text;
    size_t len;
    edgeguard_result want;
};

static void test_header_list_hostile(void) {
    static const char nul_name[] = "x-user\0-id\n";
    struct list_case cases[] = {
        {"NUL in name", nul_name, sizeof nul_name - 1, EDGEGUARD_RESULT_HEADER_LIST_INVALID},
        {"8-bit name", "x-\xc3\xa9t\xe9\n", 7, EDGEGUARD_RESULT_HEADER_LIST_INVALID},
        {"invalid UTF-8", "\xff\xfe\xfd", 3, EDGEGUARD_RESULT_HEADER_LIST_INVALID},
        {"bare star", "*", 1, EDGEGUARD_RESULT_HEADER_LIST_INVALID},
        {"inner star", "x-*-a", 5, EDGEGUARD_RESULT_HEADER_LIST_INVALID},
        {"empty", "", 0, EDGEGUARD_RESULT_HEADER_LIST_INVALID},
        {"blank lines", "\n \r\n\t\n", 6, EDGEGUARD_RESULT_HEADER_LIST_INVALID},
        {"only comments", "# x-user-id\n  # x-a-*\n", 22, EDGEGUARD_RESULT_HEADER_LIST_INVALID},
        {"ok with CRLF", "x-user-id\r\nx-internal-*\r\n", 25, EDGEGUARD_RESULT_OK},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        edgeguard_header_set *set = NULL;
        char err[256] = "";
        edgeguard_result r = parse_list(cases[i].text, cases[i].len, "hostile.list", &set, err, sizeof err);
        CHECK_CODE(r, cases[i].want, cases[i].what);
        CHECK((r == EDGEGUARD_RESULT_OK) == (set != NULL), "%s: out iff ok", cases[i].what);
        if (r != EDGEGUARD_RESULT_OK)
            CHECK(strncmp(err, "hostile.list:", 13) == 0, "%s: message %s", cases[i].what, err);
        edgeguard_header_set_free(set);
    }
    /* A 1 MiB name, and a null buffer of length 0 (the empty list). */
    size_t n = 1 << 20;
    char *big = xmalloc(n);
    memset(big, 'a', n);
    edgeguard_header_set *set = NULL;
    char err[64];
    CHECK_CODE(parse_list(big, n, "\xff\xfe", &set, err, sizeof err),
               EDGEGUARD_RESULT_HEADER_LIST_INVALID, "1 MiB name, non-UTF-8 source name");
    CHECK_CODE(parse_list(NULL, 0, NULL, &set, err, sizeof err), EDGEGUARD_RESULT_HEADER_LIST_INVALID,
               "null buffer of length 0");
    CHECK(set == NULL, "no set");
    free(big);

    /* Files: missing, a directory, empty, non-UTF-8 path. */
    CHECK_CODE(edgeguard_header_set_new_from_file("/nonexistent/x.list", &set, err, sizeof err),
               EDGEGUARD_RESULT_IO, "missing file");
    CHECK(strstr(err, "x.list") != NULL || strlen(err) == sizeof err - 1, "message %s", err);
    CHECK_CODE(edgeguard_header_set_new_from_file("/", &set, err, sizeof err), EDGEGUARD_RESULT_IO,
               "directory");
    CHECK_CODE(edgeguard_header_set_new_from_file("/tmp/\xff\xfe.list", &set, err, sizeof err),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "non-UTF-8 path");
    CHECK_CODE(edgeguard_header_set_new_from_file("/dev/null", &set, err, sizeof err),
               EDGEGUARD_RESULT_HEADER_LIST_INVALID, "empty file");
    CHECK(set == NULL, "no set");
}

static void test_errbuf_lengths(void) {
    size_t lens[] = {0, 1, 2, 7, 16};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        /* Exactly `len` bytes on the heap, so ASan/valgrind see any overrun. */
        size_t len = lens[i];
        char *err = len ? xmalloc(len) : NULL;
        if (err)
            memset(err, 'U', len);
        edgeguard_header_set *set = NULL;
        char zero_len_target = 'U';
        edgeguard_result r =
            parse_list("bad name\n", 9, "src", &set, len ? err : &zero_len_target, len);
        CHECK_CODE(r, EDGEGUARD_RESULT_HEADER_LIST_INVALID, "errbuf case");
        if (len == 0) {
            CHECK(zero_len_target == 'U', "errbuf_len 0 written");
        } else {
            CHECK(strlen(err) == len - 1, "errbuf_len %zu: got %zu bytes", len, strlen(err));
            CHECK(strncmp(err, "src:1:", len - 1 < 6 ? len - 1 : 6) == 0, "errbuf %s", err);
        }
        free(err);
    }
}

/* ASCII case folding with '_' read as '-', as the list format defines. */
static int fold(int c) {
    if (c == '_')
        return '-';
    return (c >= 'A' && c <= 'Z') ? c + 32 : c;
}

static int naive_internal(const edgeguard_str *k) {
    static const char *exact[] = {"x-user-id", "cf-connecting-ip"};
    static const char prefix[] = "x-internal-";
    if (k->len <= 0 || !k->data)
        return 0;
    size_t n = (size_t)k->len;
    for (size_t e = 0; e < 2; e++) {
        size_t m = strlen(exact[e]);
        size_t j = 0;
        if (n != m)
            continue;
        while (j < m && fold(k->data[j]) == exact[e][j])
            j++;
        if (j == m)
            return 1;
    }
    size_t p = sizeof prefix - 1, j = 0;
    if (n < p)
        return 0;
    while (j < p && fold(k->data[j]) == prefix[j])
        j++;
    return j == p;
}

/* The length the library reads: negative lengths and null data are empty. */
static int visible_len(const edgeguard_str *s) {
    return s->len > 0 && s->data ? s->len : 0;
}

static int same_name(const edgeguard_str *a, const edgeguard_str *b) {
    int n = visible_len(a);
    if (n != visible_len(b))
        return 0;
    for (int i = 0; i < n; i++) {
        int x = a->data[i], y = b->data[i];
        if ((x >= 'A' && x <= 'Z' ? x + 32 : x) != (y >= 'A' && y <= 'Z' ? y + 32 : y))
            return 0;
    }
    return 1;
}

/* edgeguard_header_set_extend and edgeguard_header_set_find_checked, as the
 * Lua shim uses them: the score header added as an extra rule is found and
 * listed to clear in every spelling but not counted; internal names that are
 * not RFC 9110 tokens (what ngx.req.clear_header cannot remove) are counted
 * in out_unremovable, for every byte after a prefix. */
static void test_extend_and_find_checked(void) {
    static const char list[] = "x-user-id\nx-internal-*\n";
    edgeguard_header_set *set = NULL, *both = NULL;
    char err[256];
    CHECK_CODE(parse_list(list, sizeof list - 1, NULL, &set, NULL, 0), EDGEGUARD_RESULT_OK, "list");
    if (!set)
        return;

    /* Nulls and refused extensions, each leaving *out untouched. */
    CHECK_CODE(edgeguard_header_set_extend(NULL, (const uint8_t *)"X-Bot-Score", 11, "s", &both, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "extend null set");
    CHECK_CODE(edgeguard_header_set_extend(set, NULL, 11, "s", &both, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "extend null buf");
    CHECK_CODE(edgeguard_header_set_extend(set, (const uint8_t *)"X-Bot-Score", 11, "s", NULL, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "extend null out");
    static const struct { const char *text; size_t len; const char *what; } bad[] = {
        {"", 0, "empty"}, {"X-Bot(Score", 11, "separator"}, {"X Bot", 5, "space"},
        {"a*b", 3, "inner star"}, {"\xff", 1, "8-bit"}, {"x\0y", 3, "NUL"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        CHECK_CODE(edgeguard_header_set_extend(set, (const uint8_t *)bad[i].text, bad[i].len, "score_header", &both,
                                               err, sizeof err),
                   EDGEGUARD_RESULT_HEADER_LIST_INVALID, bad[i].what);
        CHECK(both == NULL, "%s: out written", bad[i].what);
        CHECK(strncmp(err, "score_header", 12) == 0, "%s: message %s", bad[i].what, err);
    }
    CHECK_CODE(edgeguard_header_set_extend(set, (const uint8_t *)"X-Bot-Score", 11, NULL, &both, err, sizeof err),
               EDGEGUARD_RESULT_OK, "extend");
    if (!both) {
        edgeguard_header_set_free(set);
        return;
    }
    CHECK(edgeguard_header_set_len(both) == 2, "extra rules are not counted in len");

    /* find_checked's nulls; outputs untouched on failure. */
    edgeguard_header one = {str_of("x-user-id", 9), str_of("1", 1)};
    uint32_t clear[8];
    size_t n = 77, m = 77, u = 77;
    CHECK_CODE(edgeguard_header_set_find_checked(NULL, &one, 1, clear, 8, &n, &m, &u),
               EDGEGUARD_RESULT_NULL_PARAMETER, "checked: null set");
    CHECK_CODE(edgeguard_header_set_find_checked(both, NULL, 1, clear, 8, &n, &m, &u),
               EDGEGUARD_RESULT_NULL_PARAMETER, "checked: null headers");
    CHECK_CODE(edgeguard_header_set_find_checked(both, &one, 1, clear, 8, &n, &m, NULL),
               EDGEGUARD_RESULT_NULL_PARAMETER, "checked: null out_unremovable");
    CHECK_CODE(edgeguard_header_set_find_checked(both, &one, SIZE_MAX, clear, 8, &n, &m, &u),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "checked: headers_len SIZE_MAX");
    CHECK(n == 77 && m == 77 && u == 77, "checked: outputs written on failure");

    /* Score header spellings: listed, not counted. */
    edgeguard_header req[] = {
        {str_of("X_Bot_Score", 11), str_of("forged", 6)}, {str_of("accept", 6), str_of("*/*", 3)},
        {str_of("x-bot-SCORE", 11), str_of("forged", 6)}, {str_of("X_User_Id", 9), str_of("1", 1)},
        {str_of("x-bot-scores", 12), str_of("kept", 4)},
    };
    CHECK_CODE(edgeguard_header_set_find_checked(both, req, 5, clear, 8, &n, &m, &u), EDGEGUARD_RESULT_OK,
               "checked: score spellings");
    CHECK(n == 3 && m == 1 && u == 0, "score spellings: distinct %zu matched %zu unremovable %zu", n, m, u);
    CHECK(n == 3 && clear[0] == 0 && clear[1] == 2 && clear[2] == 3, "score spellings: indices");
    CHECK_CODE(edgeguard_header_set_find_checked(set, req, 5, clear, 8, &n, &m, &u), EDGEGUARD_RESULT_OK,
               "checked: base set");
    CHECK(n == 1 && m == 1, "the base set is unchanged: distinct %zu matched %zu", n, m);

    /* Every byte after the prefix, in an exact-size name block. */
    for (int b = 0; b < 256; b++) {
        uint8_t *name = xmalloc(13);
        memcpy(name, "x-internal-", 11);
        name[11] = (uint8_t)b;
        name[12] = 'a';
        edgeguard_header h = {{13, name}, str_of("1", 1)};
        CHECK_CODE(edgeguard_header_set_find_checked(both, &h, 1, clear, 8, &n, &m, &u), EDGEGUARD_RESULT_OK,
                   "checked: byte");
        int token = (b >= '0' && b <= '9') || (b >= 'A' && b <= 'Z') || (b >= 'a' && b <= 'z') ||
                    (b != 0 && strchr("!#$%&'*+-.^_`|~", b) != NULL);
        CHECK(m == 1 && u == (size_t)!token, "byte 0x%02x: matched %zu unremovable %zu", b, m, u);
        free(name);
    }
    /* find_internal agrees with find_checked on the counts they share. */
    size_t n2 = 0, m2 = 0;
    CHECK_CODE(edgeguard_header_set_find_internal(both, req, 5, clear, 8, &n2, &m2), EDGEGUARD_RESULT_OK,
               "find_internal on an extended set");
    CHECK(n2 == 3 && m2 == 1, "find_internal: distinct %zu matched %zu", n2, m2);

    edgeguard_header_set_free(both);
    edgeguard_header_set_free(set);
}

static void test_find_internal(void) {
    static const char list[] = "x-user-id\nx-internal-*\ncf-connecting-ip\n";
    edgeguard_header_set *set = NULL;
    CHECK_CODE(parse_list(list, sizeof list - 1, NULL, &set, NULL, 0), EDGEGUARD_RESULT_OK, "list");
    if (!set)
        return;

    /* Nulls and short outputs. */
    edgeguard_header one = {str_of("x-user-id", 9), str_of("1", 1)};
    uint32_t clear[4];
    size_t n = 77, m = 77;
    CHECK_CODE(edgeguard_header_set_find_internal(NULL, &one, 1, clear, 4, &n, &m),
               EDGEGUARD_RESULT_NULL_PARAMETER, "null set");
    CHECK_CODE(edgeguard_header_set_find_internal(set, NULL, 1, clear, 4, &n, &m),
               EDGEGUARD_RESULT_NULL_PARAMETER, "null headers");
    CHECK_CODE(edgeguard_header_set_find_internal(set, &one, 1, NULL, 4, &n, &m),
               EDGEGUARD_RESULT_NULL_PARAMETER, "null out_clear");
    CHECK_CODE(edgeguard_header_set_find_internal(set, &one, 1, clear, 4, NULL, &m),
               EDGEGUARD_RESULT_NULL_PARAMETER, "null out_clear_len");
    CHECK_CODE(edgeguard_header_set_find_internal(set, &one, 1, clear, 4, &n, NULL),
               EDGEGUARD_RESULT_NULL_PARAMETER, "null out_matched");
    CHECK_CODE(edgeguard_header_set_find_internal(set, &one, 1, clear, 0, &n, &m),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "out_clear_cap 0");
    CHECK_CODE(edgeguard_header_set_find_internal(set, &one, SIZE_MAX, clear, 4, &n, &m),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "headers_len SIZE_MAX");
    CHECK(n == 77 && m == 77, "outputs written on failure");
    CHECK_CODE(edgeguard_header_set_find_internal(set, NULL, 0, clear, 0, &n, &m), EDGEGUARD_RESULT_OK,
               "empty request");
    CHECK(n == 0 && m == 0, "empty request counts %zu %zu", n, m);

    /* 10 000 headers with 1 MiB values and hostile names. */
    static const char *spellings[] = {
        "x-user-id", "X-USER-ID", "x_user_id", "X_User-Id", "cf-connecting-ip", "x-internal-",
        "X_INTERNAL_route", "x-user-id ", "\xffx-user-id", "x-us\xc3\xa9r-id", "x-user-i", "",
        "accept", "x-internal", "X-Internal-\xff\xfe",
    };
    size_t ns = sizeof spellings / sizeof *spellings;
    size_t count = 10000, vlen = 1 << 20;
    uint8_t *value = xmalloc(vlen);
    memset(value, 'v', vlen);
    static const char nul_key[] = "x-user-id\0";
    size_t long_len = 5000;
    char *long_key = xmalloc(long_len);
    memset(long_key, 'a', long_len);
    memcpy(long_key, "x-internal-", 11);
    edgeguard_header *headers = xmalloc(count * sizeof *headers);
    for (size_t i = 0; i < count; i++) {
        size_t s = i % (ns + 4);
        edgeguard_str key;
        if (s < ns)
            key = str_of(spellings[s], strlen(spellings[s]));
        else if (s == ns)
            key = str_of(nul_key, sizeof nul_key - 1);
        else if (s == ns + 1)
            key = str_of(long_key, long_len);
        else if (s == ns + 2) /* a negative length over real internal bytes */
            key = (edgeguard_str){-9, (const uint8_t *)"x-user-id"};
        else /* a null pointer with a length */
            key = (edgeguard_str){9, NULL};
        headers[i].key = key;
        headers[i].value = i % 7 == 0 ? (edgeguard_str){INT32_MIN, NULL} : str_of(value, vlen);
    }
    uint32_t *out = xmalloc(count * sizeof *out);
    edgeguard_result r = edgeguard_header_set_find_internal(set, headers, count, out, count, &n, &m);
    CHECK_CODE(r, EDGEGUARD_RESULT_OK, "10 000 hostile headers");
    if (r == EDGEGUARD_RESULT_OK) {
        size_t matched = 0, missed = 0, extra = 0;
        for (size_t i = 0; i < count; i++) {
            int internal = naive_internal(&headers[i].key);
            int cleared = 0;
            matched += (size_t)internal;
            for (size_t j = 0; j < n && !cleared; j++)
                cleared = out[j] < count && same_name(&headers[out[j]].key, &headers[i].key);
            missed += internal && !cleared;
            extra += !internal && cleared;
        }
        CHECK(missed == 0 && extra == 0, "%zu internal headers passed, %zu cleared wrongly", missed, extra);
        CHECK(m == matched, "matched %zu, reference %zu", m, matched);
    }
    free(out);
    free(headers);
    free(long_key);
    free(value);
    edgeguard_header_set_free(set);
}

/* ------------------------------------------------------------------ models */

static edgeguard_result load_model(const void *buf, size_t len, edgeguard_model **out, char *err,
                                   size_t err_len) {
    return edgeguard_model_new_from_buffer((const uint8_t *)buf, len, "hostile.json", out, err, err_len);
}

/* `{"oblivious_trees":[[[...]]]}` nested `depth` levels, or unclosed. */
static char *nested(size_t depth, int closed, size_t *len) {
    const char head[] = "{\"oblivious_trees\":";
    size_t h = sizeof head - 1;
    char *s = xmalloc(h + 2 * depth + 1);
    memcpy(s, head, h);
    memset(s + h, '[', depth);
    size_t n = h + depth;
    if (closed) {
        memset(s + n, ']', depth);
        n += depth;
        s[n++] = '}';
    }
    *len = n;
    return s;
}

static void test_model_load_hostile(void) {
    size_t real_len;
    uint8_t *real = read_fixture("binary_ctr.json", &real_len);
    struct {
        const char *what;
        const char *json;
    } texts[] = {
        {"empty", ""},
        {"whitespace", " \n\t"},
        {"not JSON", "GIF89a\x01\xff"},
        {"null", "null"},
        {"array", "[1,2,3]"},
        {"empty object", "{}"},
        {"10^12 trees claimed", "{\"oblivious_trees\":1000000000000,\"features_info\":{}}"},
        {"depth 17 with one leaf",
         "{\"features_info\":{\"float_features\":[{\"feature_index\":0,\"borders\":[0.5]}]},"
         "\"oblivious_trees\":[{\"leaf_values\":[0],\"splits\":["
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5},"
         "{\"split_index\":0,\"split_type\":\"FloatFeature\",\"float_feature_index\":0,\"border\":0.5}"
         "]}]}"},
        {"feature index 10^12",
         "{\"features_info\":{\"float_features\":[{\"feature_index\":1000000000000,\"borders\":[1]}]},"
         "\"oblivious_trees\":[]}"},
        {"feature index 2^60",
         "{\"features_info\":{\"categorical_features\":[{\"feature_index\":1152921504606846976}]},"
         "\"oblivious_trees\":[]}"},
        {"negative feature index",
         "{\"features_info\":{\"float_features\":[{\"feature_index\":-1}]},\"oblivious_trees\":[]}"},
        {"number overflow", "{\"features_info\":{\"float_features\":[{\"feature_index\":1e400}]}}"},
    };
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        edgeguard_model *model = NULL;
        char err[256] = "";
        edgeguard_result r = load_model(texts[i].json, strlen(texts[i].json), &model, err, sizeof err);
        CHECK_CODE(r, EDGEGUARD_RESULT_MODEL_INVALID, texts[i].what);
        CHECK(strstr(err, "hostile.json") != NULL, "%s: message %s", texts[i].what, err);
        CHECK(model == NULL, "%s: out written", texts[i].what);
        edgeguard_model_free(model);
    }
    /* Truncations of a real model, including inside a multi-byte escape. */
    size_t cuts[] = {1, real_len / 3, real_len / 2, real_len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        edgeguard_model *model = NULL;
        char err[128];
        uint8_t *copy = xmalloc(cuts[i]); /* exact size: a read past it is caught */
        memcpy(copy, real, cuts[i]);
        CHECK_CODE(load_model(copy, cuts[i], &model, err, sizeof err), EDGEGUARD_RESULT_MODEL_INVALID,
                   "truncated model");
        free(copy);
    }
    /* Invalid UTF-8 inside a JSON string. */
    uint8_t *bad = xmalloc(real_len + 2);
    memcpy(bad, real, 2);
    bad[2] = 0xff;
    bad[3] = 0xfe;
    memcpy(bad + 4, real + 2, real_len - 2);
    edgeguard_model *model = NULL;
    char err[128];
    CHECK_CODE(load_model(bad, real_len + 2, &model, err, sizeof err), EDGEGUARD_RESULT_MODEL_INVALID,
               "invalid UTF-8 in JSON");
    free(bad);
    /* Nested 10 000 deep (closed) and 100 000 deep (unclosed). */
    size_t depths[] = {10000, 100000};
    for (size_t i = 0; i < 2; i++) {
        size_t len;
        char *s = nested(depths[i], i == 0, &len);
        CHECK_CODE(load_model(s, len, &model, err, sizeof err), EDGEGUARD_RESULT_MODEL_INVALID,
                   "deeply nested");
        free(s);
    }
    free(real);

    /* Nulls, files. */
    CHECK_CODE(edgeguard_model_new_from_file(NULL, &model, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "model file: null path");
    CHECK_CODE(edgeguard_model_new_from_file("x.json", NULL, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "model file: null out");
    CHECK_CODE(edgeguard_model_new_from_buffer((const uint8_t *)"{}", 2, NULL, &model, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "model buffer: null source name");
    CHECK_CODE(edgeguard_model_new_from_buffer(NULL, 5, "m", &model, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "model buffer: null data with length");
    CHECK_CODE(edgeguard_model_new_from_buffer((const uint8_t *)"{}", 2, "m", NULL, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "model buffer: null out");
    CHECK_CODE(edgeguard_model_new_from_buffer(NULL, 0, "m", &model, err, sizeof err),
               EDGEGUARD_RESULT_MODEL_INVALID, "model buffer: null and empty");
    const char *paths[] = {"/nonexistent/m.json", "/nonexistent/\xff\xfe.json", "/", ""};
    for (size_t i = 0; i < 4; i++) {
        err[0] = 0;
        CHECK_CODE(edgeguard_model_new_from_file(paths[i], &model, err, sizeof err), EDGEGUARD_RESULT_IO,
                   "unreadable model file");
        CHECK(err[0] != 0, "no message for an unreadable model file");
    }
    CHECK_CODE(edgeguard_model_new_from_file("/dev/null", &model, err, sizeof err),
               EDGEGUARD_RESULT_MODEL_INVALID, "empty model file");
    CHECK(model == NULL, "out written");
    edgeguard_model_free(NULL);
    CHECK(edgeguard_model_float_feature_count(NULL) == 0 && edgeguard_model_cat_feature_count(NULL) == 0 &&
              edgeguard_model_dimension(NULL) == 0,
          "counts of null");
}

static edgeguard_model *real_model(const char *name) {
    char path[4096], err[256] = "";
    edgeguard_model *model = NULL;
    snprintf(path, sizeof path, "%s/%s", fixture_dir, name);
    edgeguard_result r = edgeguard_model_new_from_file(path, &model, err, sizeof err);
    CHECK_CODE(r, EDGEGUARD_RESULT_OK, name);
    return model;
}

static void test_predict_hostile(void) {
    const char *names[] = {"regression_cat.json", "binary_ctr.json", "multiclass_cat.json"};
    const float specials[] = {NAN, -NAN, INFINITY, -INFINITY, 3.4e38f, -3.4e38f, 1e-45f, -0.0f, 0.0f};
    const int32_t hashes[] = {0, -1, INT32_MIN, INT32_MAX, 1};
    size_t nspec = sizeof specials / sizeof *specials;
    for (size_t k = 0; k < 3; k++) {
        edgeguard_model *model = real_model(names[k]);
        if (!model)
            continue;
        int regression = strncmp(names[k], "regression", 10) == 0;
        size_t nf = edgeguard_model_float_feature_count(model);
        size_t nc = edgeguard_model_cat_feature_count(model);
        size_t dim = edgeguard_model_dimension(model);
        /* Exact-size heap arrays: any read past the counts is caught. */
        float *floats = xmalloc((nf + 1) * sizeof *floats);
        int32_t *cats = xmalloc((nc + 1) * sizeof *cats);
        double *out = xmalloc(dim * sizeof *out);
        for (size_t i = 0; i <= nf; i++)
            floats[i] = 0.5f;
        for (size_t i = 0; i <= nc; i++)
            cats[i] = 7;

        CHECK_CODE(edgeguard_model_predict(model, floats, nf + 1, cats, nc, 0, out, dim),
                   EDGEGUARD_RESULT_FEATURE_COUNT, "one float too many");
        CHECK_CODE(edgeguard_model_predict(model, floats, nf, cats, nc + 1, 0, out, dim),
                   EDGEGUARD_RESULT_FEATURE_COUNT, "one cat too many");
        if (nf)
            CHECK_CODE(edgeguard_model_predict(model, floats, nf - 1, cats, nc, 0, out, dim),
                       EDGEGUARD_RESULT_FEATURE_COUNT, "one float short");
        CHECK_CODE(edgeguard_model_predict(model, floats, nf, cats, nc, 0, out, 0),
                   EDGEGUARD_RESULT_BUFFER_TOO_SMALL, "out_len 0");
        CHECK_CODE(edgeguard_model_predict(model, floats, nf, cats, nc, 0, NULL, dim),
                   EDGEGUARD_RESULT_NULL_PARAMETER, "null out");
        CHECK_CODE(edgeguard_model_predict(NULL, floats, nf, cats, nc, 0, out, dim),
                   EDGEGUARD_RESULT_NULL_PARAMETER, "null model");
        if (nf)
            CHECK_CODE(edgeguard_model_predict(model, NULL, nf, cats, nc, 0, out, dim),
                       EDGEGUARD_RESULT_NULL_PARAMETER, "null floats");
        if (nc)
            CHECK_CODE(edgeguard_model_predict(model, floats, nf, NULL, nc, 0, out, dim),
                       EDGEGUARD_RESULT_NULL_PARAMETER, "null cats");
        int types[] = {-1, 3, 4, 1000, INT32_MIN, INT32_MAX};
        for (size_t t = 0; t < sizeof types / sizeof *types; t++)
            CHECK_CODE(edgeguard_model_predict(model, floats, nf, cats, nc, types[t], out, dim),
                       EDGEGUARD_RESULT_INVALID_ARGUMENT, "bad prediction type");
        CHECK_CODE(edgeguard_model_predict(model, floats, nf, cats, nc, 1, out, dim),
                   regression ? EDGEGUARD_RESULT_INVALID_ARGUMENT : EDGEGUARD_RESULT_OK,
                   "probability");

        for (size_t s = 0; s < nspec; s++) {
            for (size_t i = 0; i < nf; i++)
                floats[i] = i == 0 ? specials[s] : specials[(s + i) % nspec];
            for (size_t i = 0; i < nc; i++)
                cats[i] = hashes[(s + i) % 5];
            for (int ty = 0; ty <= 2; ty++) {
                edgeguard_result r = edgeguard_model_predict(model, floats, nf, cats, nc, ty, out, dim);
                if (regression && ty > 0) {
                    CHECK_CODE(r, EDGEGUARD_RESULT_INVALID_ARGUMENT, "regression non-raw");
                    continue;
                }
                CHECK_CODE(r, EDGEGUARD_RESULT_OK, "special floats");
                size_t w = ty == 2 ? 1 : dim;
                for (size_t i = 0; i < w && r == EDGEGUARD_RESULT_OK; i++)
                    CHECK(isfinite(out[i]), "%s: score %f for float %f", names[k], out[i], specials[s]);
            }
        }

        /* Categorical strings: negative lengths, nulls, 1 MiB, 8-bit bytes. */
        size_t big_len = 1 << 20;
        uint8_t *big = xmalloc(big_len);
        memset(big, 0xff, big_len);
        edgeguard_str *strs = xmalloc((nc + 1) * sizeof *strs);
        for (size_t i = 0; i < nc; i++) {
            switch (i % 5) {
            case 0: strs[i] = (edgeguard_str){-1, (const uint8_t *)"cat"}; break;
            case 1: strs[i] = (edgeguard_str){INT32_MIN, NULL}; break;
            case 2: strs[i] = (edgeguard_str){5, NULL}; break;
            case 3: strs[i] = str_of(big, big_len); break;
            default: strs[i] = str_of("\0\xff\xfe", 3); break;
            }
        }
        for (size_t i = 0; i < nf; i++)
            floats[i] = NAN;
        CHECK_CODE(edgeguard_model_predict_strings(model, floats, nf, strs, nc, 0, out, dim),
                   EDGEGUARD_RESULT_OK, "hostile cat strings");
        CHECK_CODE(edgeguard_model_predict_strings(model, floats, nf, strs, nc + 1, 0, out, dim),
                   EDGEGUARD_RESULT_FEATURE_COUNT, "one cat string too many");
        if (nc)
            CHECK_CODE(edgeguard_model_predict_strings(model, floats, nf, NULL, nc, 0, out, dim),
                       EDGEGUARD_RESULT_NULL_PARAMETER, "null cat strings");
        CHECK_CODE(edgeguard_model_predict_strings(NULL, floats, nf, strs, nc, 0, out, dim),
                   EDGEGUARD_RESULT_NULL_PARAMETER, "strings: null model");
        free(strs);
        free(big);
        free(out);
        free(cats);
        free(floats);
        edgeguard_model_free(model);
    }
    CHECK(edgeguard_cat_hash(NULL, 0) == edgeguard_cat_hash((const uint8_t *)"", 0), "hash of null");
    CHECK(edgeguard_cat_hash(NULL, (size_t)1 << 40) == edgeguard_cat_hash((const uint8_t *)"", 0),
          "hash of null with a length");
}

/* ----------------------------------------------------------------- scorers */

/* The shipped models, from FIXTURE_DIR (tests/fixtures/catboost). */
static char bot_path[4096], spoof_path[4096];

static edgeguard_result new_scorer(const char *const *names, const char *const *paths, size_t n,
                                   edgeguard_scorer **out, char *err, size_t err_len) {
    return edgeguard_scorer_new(names, paths, n, out, err, err_len);
}

static edgeguard_scorer *shipped_scorer(void) {
    const char *names[] = {"bot", "spoof"};
    const char *paths[] = {bot_path, spoof_path};
    edgeguard_scorer *s = NULL;
    char err[512] = "";
    edgeguard_result r = new_scorer(names, paths, 2, &s, err, sizeof err);
    CHECK_CODE(r, EDGEGUARD_RESULT_OK, err);
    if (!s) {
        printf("cannot load the shipped models; scorer cases skipped\n");
        exit(1);
    }
    return s;
}

/* Writes a file under the scratch directory; returns its path (static). */
static const char *scratch_file(const char *dir, const char *name, const void *bytes, size_t len) {
    static char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(bytes, 1, len, f) != len || fclose(f) != 0) {
        perror(path);
        exit(2);
    }
    return path;
}

static void test_scorer_new_hostile(void) {
    const char *names[] = {"bot", "spoof"};
    const char *paths[] = {bot_path, spoof_path};
    edgeguard_scorer *s = NULL;
    char err[1024];

    CHECK_CODE(new_scorer(NULL, paths, 2, &s, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "scorer: null names");
    CHECK_CODE(new_scorer(names, NULL, 2, &s, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "scorer: null paths");
    CHECK_CODE(new_scorer(names, paths, 2, NULL, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "scorer: null out");
    for (int i = 0; i < 2; i++) {
        const char *n2[] = {"bot", "spoof"}, *p2[] = {bot_path, spoof_path};
        n2[i] = NULL;
        CHECK_CODE(new_scorer(n2, paths, 2, &s, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
                   "scorer: a null name");
        p2[i] = NULL;
        CHECK_CODE(new_scorer(names, p2, 2, &s, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
                   "scorer: a null path");
    }
    /* Counts that the two-entry arrays cannot hold: only the count is read. */
    size_t counts[] = {0, 65, (size_t)1 << 32, SIZE_MAX / 8 + 1, SIZE_MAX};
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++) {
        err[0] = 0;
        CHECK_CODE(new_scorer(names, paths, counts[i], &s, err, sizeof err),
                   EDGEGUARD_RESULT_CONFIG_INVALID, "scorer: count out of range");
        CHECK(strstr(err, "models given") != NULL, "count %zu: message %s", counts[i], err);
    }
    CHECK_CODE(new_scorer(names, paths, 0, &s, NULL, 0), EDGEGUARD_RESULT_CONFIG_INVALID,
               "scorer: no models, no errbuf");

    struct {
        const char *what, *names[2], *says;
    } bad_names[] = {
        {"empty name", {"", "spoof"}, "empty name"},
        {"duplicate", {"bot", "bot"}, "twice"},
        {"tab", {"bot", "sp\toof"}, "control"},
        {"escape", {"\x1b[31m", "spoof"}, "control"},
        {"DEL", {"bot", "spoof\x7f"}, "control"},
        {"C1 control", {"b\xc2\x85", "spoof"}, "control"},
        {"invalid UTF-8", {"bot", "\xff\xfe"}, "UTF-8"},
        {"lone continuation byte", {"\x80", "spoof"}, "UTF-8"},
    };
    for (size_t i = 0; i < sizeof bad_names / sizeof *bad_names; i++) {
        err[0] = 0;
        CHECK_CODE(new_scorer(bad_names[i].names, paths, 2, &s, err, sizeof err),
                   EDGEGUARD_RESULT_CONFIG_INVALID, bad_names[i].what);
        CHECK(strstr(err, bad_names[i].says) != NULL, "%s: message %s", bad_names[i].what, err);
    }
    CHECK(s == NULL, "scorer: out written on failure");

    /* 8-bit names that are UTF-8 are names like any other. */
    const char *utf8[] = {"b\xc3\xb8t", "\xf0\x9f\xa4\x96"};
    CHECK_CODE(new_scorer(utf8, paths, 2, &s, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    CHECK(s && strcmp(edgeguard_scorer_model_name(s, 1), utf8[1]) == 0, "utf-8 name kept");
    edgeguard_scorer_free(s);
    s = NULL;

    /* Broken model files, second in the list: named by model and file. */
    char dir[] = "/tmp/edgeguard-hostile-XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        exit(2);
    }
    size_t real_len;
    uint8_t *real = read_fixture("../../../models/bot.json", &real_len);
    size_t deep_len;
    char *deep = nested(100000, 1, &deep_len);
    struct {
        const char *what;
        const char *path;
        edgeguard_result want;
    } files[12];
    size_t nfiles = 0;
    char paths_store[12][4096];
#define ADD_FILE(w, p, r)                                                       \
    do {                                                                        \
        snprintf(paths_store[nfiles], sizeof paths_store[nfiles], "%s", (p));   \
        files[nfiles].what = (w);                                               \
        files[nfiles].path = paths_store[nfiles];                               \
        files[nfiles].want = (r);                                               \
        nfiles++;                                                               \
    } while (0)
    char missing[4200];
    snprintf(missing, sizeof missing, "%s/missing.json", dir);
    ADD_FILE("missing file", missing, EDGEGUARD_RESULT_IO);
    ADD_FILE("a directory", dir, EDGEGUARD_RESULT_IO);
    ADD_FILE("empty path", "", EDGEGUARD_RESULT_IO);
    ADD_FILE("non-UTF-8 path", "/nonexistent/\xff\xfe.json", EDGEGUARD_RESULT_IO);
    ADD_FILE("empty file", scratch_file(dir, "empty.json", "", 0), EDGEGUARD_RESULT_MODEL_INVALID);
    ADD_FILE("/dev/null", "/dev/null", EDGEGUARD_RESULT_MODEL_INVALID);
    ADD_FILE("not JSON", scratch_file(dir, "gif.json", "GIF89a\0\xff", 8),
             EDGEGUARD_RESULT_MODEL_INVALID);
    ADD_FILE("truncated", scratch_file(dir, "trunc.json", real, real_len / 3),
             EDGEGUARD_RESULT_MODEL_INVALID);
    ADD_FILE("truncated by one", scratch_file(dir, "trunc1.json", real, real_len - 1),
             EDGEGUARD_RESULT_MODEL_INVALID);
    ADD_FILE("nested 100 000", scratch_file(dir, "deep.json", deep, deep_len),
             EDGEGUARD_RESULT_MODEL_INVALID);
    char multiclass[4200];
    snprintf(multiclass, sizeof multiclass, "%s/multiclass_cat.json", fixture_dir);
    ADD_FILE("a model the schema cannot feed", multiclass, EDGEGUARD_RESULT_MODEL_INVALID);
#undef ADD_FILE
    for (size_t i = 0; i < nfiles; i++) {
        const char *p2[] = {bot_path, files[i].path};
        err[0] = 0;
        CHECK_CODE(new_scorer(names, p2, 2, &s, err, sizeof err), files[i].want, files[i].what);
        /* A non-UTF-8 path is named lossily: look for its readable part. */
        const char *named = strchr(files[i].path, '\xff') ? "/nonexistent/" : files[i].path;
        CHECK(strstr(err, "`spoof`") && strstr(err, named), "%s: message %s", files[i].what, err);
        CHECK(s == NULL, "%s: out written", files[i].what);
    }
    for (size_t i = 0; i < nfiles; i++)
        if (strncmp(files[i].path, dir, strlen(dir)) == 0 && strcmp(files[i].path, dir) != 0)
            remove(files[i].path);
    rmdir(dir);
    free(deep);
    free(real);
}

static void test_scorer_introspection(void) {
    edgeguard_scorer *s = shipped_scorer();
    CHECK(edgeguard_scorer_model_count(NULL) == 0, "count of null");
    CHECK(edgeguard_scorer_model_count(s) == 2, "count");
    size_t idx[] = {0, 1, 2, 64, SIZE_MAX};
    for (size_t i = 0; i < sizeof idx / sizeof *idx; i++) {
        CHECK(edgeguard_scorer_model_name(NULL, idx[i]) == NULL, "name of null %zu", idx[i]);
        CHECK(isnan(edgeguard_scorer_model_threshold(NULL, idx[i])), "threshold of null");
        int in = idx[i] < 2;
        const char *name = edgeguard_scorer_model_name(s, idx[i]);
        double t = edgeguard_scorer_model_threshold(s, idx[i]);
        CHECK(in ? name != NULL : name == NULL, "name %zu", idx[i]);
        CHECK(in ? (t >= 0 && t <= 1) : isnan(t), "threshold %zu: %g", idx[i], t);
    }
    CHECK(strcmp(edgeguard_scorer_model_name(s, 0), "bot") == 0, "name order");
    edgeguard_scorer_free(NULL);
    edgeguard_scorer_free(s);
}

static edgeguard_request request_of(const char *method, const char *uri, edgeguard_header *h,
                                    size_t n) {
    edgeguard_request r;
    r.method = str_of(method, strlen(method));
    r.uri = str_of(uri, strlen(uri));
    r.client_addr = str_of("127.0.0.1", 9);
    r.http_version = 11;
    r.headers = h;
    r.headers_len = n;
    r.tls = NULL;
    r.request_id = str_of("", 0);
    r.peer_addr = str_of("", 0);
    return r;
}

static int scores_ok(const double *out) {
    return out[0] >= 0 && out[0] <= 1 && out[1] >= 0 && out[1] <= 1;
}

static void test_scorer_score_hostile(void) {
    edgeguard_scorer *s = shipped_scorer();
    double out[3] = {-7, -7, -7};
    edgeguard_header one = {str_of("user-agent", 10), str_of("curl/8.0", 8)};
    edgeguard_request req = request_of("GET", "/", &one, 1);

    CHECK_CODE(edgeguard_scorer_score(NULL, &req, out, 2), EDGEGUARD_RESULT_NULL_PARAMETER,
               "score: null scorer");
    CHECK_CODE(edgeguard_scorer_score(s, NULL, out, 2), EDGEGUARD_RESULT_NULL_PARAMETER,
               "score: null request");
    CHECK_CODE(edgeguard_scorer_score(s, &req, NULL, 2), EDGEGUARD_RESULT_NULL_PARAMETER,
               "score: null out");
    size_t small[] = {0, 1}, large[] = {3, 64, (size_t)1 << 32, SIZE_MAX / 8 + 1, SIZE_MAX};
    for (size_t i = 0; i < 2; i++)
        CHECK_CODE(edgeguard_scorer_score(s, &req, out, small[i]), EDGEGUARD_RESULT_BUFFER_TOO_SMALL,
                   "score: short output");
    for (size_t i = 0; i < sizeof large / sizeof *large; i++)
        CHECK_CODE(edgeguard_scorer_score(s, &req, out, large[i]), EDGEGUARD_RESULT_INVALID_ARGUMENT,
                   "score: output longer than the models");
    size_t lens[] = {(size_t)1 << 32, (size_t)1 << 40, SIZE_MAX / 32 + 1, SIZE_MAX};
    for (size_t i = 0; i < sizeof lens / sizeof *lens; i++) {
        edgeguard_request huge = req;
        huge.headers_len = lens[i];
        CHECK_CODE(edgeguard_scorer_score(s, &huge, out, 2), EDGEGUARD_RESULT_INVALID_ARGUMENT,
                   "score: impossible header count");
        huge.headers = NULL;
        CHECK_CODE(edgeguard_scorer_score(s, &huge, out, 2), EDGEGUARD_RESULT_NULL_PARAMETER,
                   "score: null headers with a count");
    }
    int versions[] = {-1, INT32_MIN, 65536, INT32_MAX};
    for (size_t i = 0; i < sizeof versions / sizeof *versions; i++) {
        edgeguard_request bad = req;
        bad.http_version = versions[i];
        CHECK_CODE(edgeguard_scorer_score(s, &bad, out, 2), EDGEGUARD_RESULT_INVALID_ARGUMENT,
                   "score: http_version out of range");
    }
    CHECK(out[0] == -7 && out[1] == -7 && out[2] == -7, "score: written on refusal");

    /* 10 000 headers, 1 MiB values, NUL and 8-bit bytes, invalid UTF-8. */
    size_t mib = (size_t)1 << 20;
    uint8_t *big = xmalloc(mib), *high = xmalloc(mib);
    memset(big, 'a', mib);
    memset(high, 0xe9, mib);
    size_t nh = 10000;
    edgeguard_header *h = xmalloc(nh * sizeof *h);
    for (size_t i = 0; i < nh; i++) {
        switch (i % 4) {
        case 0: h[i].key = str_of("user-agent", 10); h[i].value = str_of(big, mib); break;
        case 1: h[i].key = str_of("accept-language", 15); h[i].value = str_of(high, mib); break;
        case 2: h[i].key = str_of("sec-ch-ua", 9); h[i].value = str_of("\"\xff\0\"; v=\"9999999999999\"", 24); break;
        default: h[i].key = str_of("x-\0\xff\xfe", 5); h[i].value = str_of(big, mib); break;
        }
    }
    edgeguard_request many = request_of("GET", "/", h, nh);
    CHECK_CODE(edgeguard_scorer_score(s, &many, out, 2), EDGEGUARD_RESULT_OK, "score: 10 000 headers");
    CHECK(scores_ok(out), "10 000 headers: scores %g %g", out[0], out[1]);
    double first[2] = {out[0], out[1]};
    CHECK_CODE(edgeguard_scorer_score(s, &many, out, 2), EDGEGUARD_RESULT_OK, "score: again");
    CHECK(out[0] == first[0] && out[1] == first[1], "same request, same scores");

    edgeguard_header weird[] = {
        {str_of("", 0), str_of("", 0)},
        {str_of("\0", 1), str_of("\0", 1)},
        {str_of("user-agent", 10), str_of("\xff\xfe\xfd Chrome/\xff.0", 14)},
        {str_of("accept", 6), str_of(big, mib)},
        {str_of("cookie", 6), str_of(";;;;=;=;", 8)},
        {str_of("referer", 7), str_of("\x80", 1)},
        {str_of("sec-fetch-site", 14), str_of("\xc3\x28", 2)},
    };
    size_t nw = sizeof weird / sizeof *weird;
    edgeguard_str uris[] = {str_of("", 0), str_of("\0", 1), str_of("/\xff\xfe?\xc3\x28=\x80", 8),
                            str_of(big, mib), str_of(high, mib)};
    edgeguard_str clients[] = {str_of("", 0), str_of("::", 2), str_of("\xff", 1),
                               str_of("999.999.999.999", 15), str_of(big, mib)};
    edgeguard_str methods[] = {str_of("", 0), str_of("G\0T", 3), str_of("\xff\xff", 2),
                               str_of(big, mib), str_of("GET", 3)};
    for (size_t i = 0; i < 5; i++) {
        edgeguard_request r = request_of("GET", "/", weird, nw);
        r.method = methods[i];
        r.uri = uris[i];
        r.client_addr = clients[i];
        CHECK_CODE(edgeguard_scorer_score(s, &r, out, 2), EDGEGUARD_RESULT_OK, "score: hostile strings");
        CHECK(scores_ok(out), "hostile strings %zu: %g %g", i, out[0], out[1]);
    }
    edgeguard_request lying = request_of("GET", "/", NULL, 0);
    lying.method.len = INT32_MIN;
    lying.uri.data = NULL;
    lying.uri.len = INT32_MAX;
    lying.client_addr.len = -1;
    CHECK_CODE(edgeguard_scorer_score(s, &lying, out, 2), EDGEGUARD_RESULT_OK,
               "score: negative lengths, null data with a length");
    CHECK(scores_ok(out), "lying lengths: %g %g", out[0], out[1]);
    int ok_versions[] = {0, 9, 10, 11, 20, 30, 65535};
    for (size_t i = 0; i < sizeof ok_versions / sizeof *ok_versions; i++) {
        edgeguard_request v = req;
        v.http_version = ok_versions[i];
        CHECK_CODE(edgeguard_scorer_score(s, &v, out, 2), EDGEGUARD_RESULT_OK, "score: version");
    }
    free(h);
    free(high);
    free(big);
    edgeguard_scorer_free(s);
}

/* ------------------------------------------------- configuration and policy */

static edgeguard_result config_of(const char *json, edgeguard_config **out, char *err, size_t err_len) {
    return edgeguard_config_new((const uint8_t *)json, strlen(json), "edgeguard.configure", NULL, out,
                                err, err_len);
}

static void test_config_hostile(void) {
    char err[512];
    edgeguard_config *c = NULL;
    const char *ok = "{\"mode\": \"block\", \"allow\": [\"10.0.0.0/8\", \"2001:db8::/32\"]}";

    CHECK_CODE(edgeguard_config_new((const uint8_t *)ok, strlen(ok), NULL, NULL, NULL, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "null out");
    CHECK_CODE(edgeguard_config_new(NULL, 5, NULL, NULL, &c, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "null json with a length");
    CHECK(c == NULL, "nothing written on failure");
    /* A negative int converted to size_t: refused before a slice is made. */
    CHECK_CODE(edgeguard_config_new((const uint8_t *)ok, SIZE_MAX, NULL, NULL, &c, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "SIZE_MAX length");
    CHECK_CODE(edgeguard_config_new((const uint8_t *)"", 0, NULL, NULL, &c, err, sizeof err),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "empty text");
    CHECK(strstr(err, "options: not JSON") != NULL, "empty text named: %s", err);
    /* A prefix of valid JSON, cut short: the length is honoured, not the NUL. */
    CHECK_CODE(edgeguard_config_new((const uint8_t *)ok, 10, NULL, NULL, &c, err, sizeof err),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "truncated JSON");
    const char *bad[][2] = {
        {"not json", "not JSON"},
        {"[1]", "not a JSON object"},
        {"{\"allow\": [\"10.0.0.0/33\"]}", "edgeguard.configure: allow[0]: prefix length 33"},
        {"{\"allow\": [\"10.0.0.0/8\", \"x\"]}", "allow[1]: invalid address"},
        {"{\"mode\": \"deny\"}", "mode: must be"},
        {"{\"nope\": 1}", "nope: unknown option 'nope'"},
        {"{\"models\": {\"bot\": \"\"}}", "models.bot: must be a non-empty path"},
        {"{\"status\": 99999999999999999999}", "status: must be an HTTP error status"},
        {"{\"mode\": \"log\", \"mode\": \"\xff\"}", "not JSON"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        err[0] = 0;
        CHECK_CODE(config_of(bad[i][0], &c, err, sizeof err), EDGEGUARD_RESULT_INVALID_ARGUMENT, bad[i][0]);
        CHECK(strstr(err, bad[i][1]) != NULL, "%s: %s", bad[i][0], err);
    }
    /* A bad or missing file is not the caller's mistake: its own codes. */
    char dir[] = "/tmp/edgeguard-config-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char file[256], json[512];
    snprintf(file, sizeof file, "%s/edgeguard.json", dir);
    FILE *f = fopen(file, "wb");
    fputs("{\"allow\": [\"10.0.0.0/33\"]}", f);
    fclose(f);
    snprintf(json, sizeof json, "{\"config\": \"%s\"}", file);
    CHECK_CODE(config_of(json, &c, err, sizeof err), EDGEGUARD_RESULT_CONFIG_INVALID, "bad file");
    CHECK(strncmp(err, file, strlen(file)) == 0 && strstr(err, ": allow[0]: ") != NULL, "names the file: %s",
          err);
    snprintf(json, sizeof json, "{\"config\": \"%s/missing.json\"}", dir);
    CHECK_CODE(config_of(json, &c, err, sizeof err), EDGEGUARD_RESULT_IO, "missing file");
    unlink(file);
    rmdir(dir);
    /* Tiny error buffers are truncated, never overrun (ASan watches). */
    char tiny[3] = {'x', 'x', 'x'};
    CHECK_CODE(config_of("{\"nope\": 1}", &c, tiny, sizeof tiny), EDGEGUARD_RESULT_INVALID_ARGUMENT, "tiny errbuf");
    CHECK(tiny[2] == 0, "tiny errbuf terminated");
    CHECK_CODE(config_of("{\"nope\": 1}", &c, NULL, 100), EDGEGUARD_RESULT_INVALID_ARGUMENT, "null errbuf");
    CHECK_CODE(edgeguard_config_new((const uint8_t *)ok, strlen(ok), NULL, "\xff", &c, err, sizeof err),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "base_dir not UTF-8");

    CHECK(edgeguard_config_json(NULL) == NULL, "json of null");
    CHECK_CODE(config_of(ok, &c, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    const char *resolved = edgeguard_config_json(c);
    CHECK(resolved && strstr(resolved, "\"mode\":\"block\"") && strstr(resolved, "\"status\":403"),
          "resolved %s", resolved ? resolved : "(null)");
    /* Without signals, starting their refresh thread is a no-op. */
    CHECK_CODE(edgeguard_config_start_signals(NULL), EDGEGUARD_RESULT_NULL_PARAMETER, "start signals: null");
    CHECK_CODE(edgeguard_config_start_signals(c), EDGEGUARD_RESULT_OK, "start signals: none");

    /* Locations. */
    edgeguard_config *loc = NULL;
    const char *lj = "{\"mode\": \"log\"}";
    CHECK_CODE(edgeguard_config_new_for_location(NULL, (const uint8_t *)lj, strlen(lj), NULL, &loc, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "location of null");
    CHECK_CODE(edgeguard_config_new_for_location(c, NULL, 3, NULL, &loc, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "location null json");
    const char *lbad = "{\"allow\": []}";
    CHECK_CODE(edgeguard_config_new_for_location(c, (const uint8_t *)lbad, strlen(lbad), "edgeguard.access", &loc,
                                                 err, sizeof err),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "allow per location");
    CHECK(strstr(err, "edgeguard.access: allow: unknown option") != NULL, "%s", err);
    CHECK_CODE(edgeguard_config_new_for_location(c, (const uint8_t *)lj, strlen(lj), NULL, &loc, err, sizeof err),
               EDGEGUARD_RESULT_OK, err);

    /* Locations of given scores (the legacy engine's), deciding. */
    edgeguard_location *p = NULL;
    const char *names[] = {"bot", "spoof"};
    double own[] = {0.5, NAN};
    CHECK_CODE(edgeguard_location_new(NULL, NULL, names, own, 2, NULL, &p, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "location of null");
    CHECK_CODE(edgeguard_location_new(c, NULL, NULL, own, 2, NULL, &p, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "null names");
    CHECK_CODE(edgeguard_location_new(c, NULL, names, own, SIZE_MAX, NULL, &p, err, sizeof err),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "SIZE_MAX models");
    const char *null_name[] = {"bot", NULL};
    CHECK_CODE(edgeguard_location_new(c, NULL, null_name, own, 2, NULL, &p, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "a null name");
    CHECK(p == NULL, "nothing written");
    CHECK_CODE(edgeguard_location_new(c, NULL, names, own, 2, NULL, &p, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    CHECK(edgeguard_location_model_count(p) == 2 && edgeguard_location_model_count(NULL) == 0, "model count");

    edgeguard_effects d;
    double scores[] = {0.7, 0.99};
    edgeguard_scratch *sc = NULL;
    CHECK_CODE(edgeguard_scratch_new(NULL), EDGEGUARD_RESULT_NULL_PARAMETER, "scratch to null");
    CHECK_CODE(edgeguard_scratch_new(&sc), EDGEGUARD_RESULT_OK, "scratch");
    edgeguard_request rq = request_of("GET", "/", NULL, 0);
    rq.client_addr = str_of("192.0.2.1", 9);
    edgeguard_given g = {scores, 2, 0, 0};
    CHECK_CODE(edgeguard_location_run(NULL, NULL, &rq, &g, EDGEGUARD_JOB_ACCESS, 0, sc, &d),
               EDGEGUARD_RESULT_NULL_PARAMETER, "null location");
    CHECK_CODE(edgeguard_location_run(p, NULL, &rq, &g, EDGEGUARD_JOB_ACCESS, 0, sc, NULL),
               EDGEGUARD_RESULT_NULL_PARAMETER, "null out");
    edgeguard_given null_scores = {NULL, 2, 0, 0}, one = {scores, 1, 0, 0}, huge = {scores, SIZE_MAX, 0, 0};
    CHECK_CODE(edgeguard_location_run(p, NULL, &rq, &null_scores, EDGEGUARD_JOB_ACCESS, 0, sc, &d),
               EDGEGUARD_RESULT_NULL_PARAMETER, "null scores, n 2");
    CHECK_CODE(edgeguard_location_run(p, NULL, &rq, &one, EDGEGUARD_JOB_ACCESS, 0, sc, &d),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "n 1 of 2");
    CHECK_CODE(edgeguard_location_run(p, NULL, &rq, &huge, EDGEGUARD_JOB_ACCESS, 0, sc, &d),
               EDGEGUARD_RESULT_NULL_PARAMETER, "n SIZE_MAX");
    CHECK_CODE(edgeguard_location_run(p, NULL, &rq, &g, EDGEGUARD_JOB_ACCESS, 0, sc, &d), EDGEGUARD_RESULT_OK,
               "decide");
    /* A block answers with a body naming its reference; the request gave no
     * $request_id, so the caller inserts one at the gap. */
    CHECK(d.action == EDGEGUARD_OUTCOME_BLOCK && d.model == 0 && d.threshold == 0.5 && d.status == 403 &&
              d.exit == EDGEGUARD_EXIT_BODY && d.body_request_id_at > 0 &&
              d.body_request_id_at < (size_t)d.body.len,
          "block by model 0: %d %d %g %d", d.action, d.model, d.threshold, d.status);
    const char *clients[][2] = {
        {"10.1.2.3", "10.1.2.3 is allowed"},
        {"2001:db8::", "2001:db8:: is allowed"},
    };
    for (size_t i = 0; i < 2; i++) {
        rq.client_addr = str_of(clients[i][0], strlen(clients[i][0]));
        CHECK_CODE(edgeguard_location_run(p, NULL, &rq, &g, EDGEGUARD_JOB_ACCESS, 0, sc, &d), EDGEGUARD_RESULT_OK,
                   clients[i][0]);
        CHECK(d.action == EDGEGUARD_OUTCOME_ALLOW, "%s: %d", clients[i][1], d.action);
    }
    rq.client_addr = str_of("2001:db8", 8);
    CHECK_CODE(edgeguard_location_run(p, NULL, &rq, &g, EDGEGUARD_JOB_ACCESS, 0, sc, &d), EDGEGUARD_RESULT_OK,
               "decide odd addr");
    CHECK(d.action == EDGEGUARD_OUTCOME_BLOCK, "an address that does not parse is in no block: %d", d.action);
    rq.client_addr = str_of(NULL, 0);
    CHECK_CODE(edgeguard_location_run(p, NULL, &rq, &g, EDGEGUARD_JOB_ACCESS, 0, sc, &d), EDGEGUARD_RESULT_OK,
               "decide no addr");
    CHECK(d.action == EDGEGUARD_OUTCOME_BLOCK, "no address is in no block: %d", d.action);
    rq.client_addr = str_of("192.0.2.1", 9);
    double low[] = {0.1, 0.99};
    g.scores = low;
    CHECK_CODE(edgeguard_location_run(p, NULL, &rq, &g, EDGEGUARD_JOB_ACCESS, 0, sc, &d), EDGEGUARD_RESULT_OK,
               "decide low");
    CHECK(d.action == EDGEGUARD_OUTCOME_PASS && d.model == -1 && isnan(d.threshold) && d.exit == EDGEGUARD_EXIT_CONTINUE,
          "spoof has no threshold, bot is low: %d %d", d.action, d.model);
    double nan_scores[] = {NAN, NAN};
    g.scores = nan_scores;
    CHECK_CODE(edgeguard_location_run(p, NULL, &rq, &g, EDGEGUARD_JOB_ACCESS, 0, sc, &d), EDGEGUARD_RESULT_OK,
               "decide NaN");
    CHECK(d.action == EDGEGUARD_OUTCOME_PASS, "NaN never flags: %d", d.action);
    edgeguard_given unscored = {NULL, 0, 0, 0};
    CHECK_CODE(edgeguard_location_run(p, NULL, &rq, &unscored, EDGEGUARD_JOB_ACCESS, 0, sc, &d), EDGEGUARD_RESULT_OK,
               "unscored");
    CHECK(d.action == EDGEGUARD_OUTCOME_PASS, "unscored passes without fail_closed: %d", d.action);
    edgeguard_location_free(p);

    edgeguard_location *lp = NULL;
    g.scores = scores;
    CHECK_CODE(edgeguard_location_new(loc, NULL, names, NULL, 2, NULL, &lp, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    CHECK_CODE(edgeguard_location_run(lp, NULL, &rq, &g, EDGEGUARD_JOB_ACCESS, 0, sc, &d), EDGEGUARD_RESULT_OK,
               "location decide");
    CHECK(d.action == EDGEGUARD_OUTCOME_PASS, "no thresholds without own ones: %d", d.action);
    edgeguard_location_free(lp);
    edgeguard_config_free(loc);

    /* A location's strip set: its own score header and configure()'s,
     * found in every spelling and counted as nothing internal; nothing
     * without a list and a name; a bad name is misuse. */
    const char *oj = "{\"score_header\": \"X-Own\"}";
    CHECK_CODE(edgeguard_config_new_for_location(c, (const uint8_t *)oj, strlen(oj), NULL, &loc, err, sizeof err),
               EDGEGUARD_RESULT_OK, err);
    CHECK_CODE(edgeguard_location_new(loc, NULL, names, NULL, 2, NULL, &lp, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    edgeguard_header sh[3] = {{str_of("X_OWN", 5), str_of("1", 1)}, {str_of("x-bot-score", 11), str_of("1", 1)},
                              {str_of("Accept", 6), str_of("1", 1)}};
    edgeguard_request sr = request_of("GET", "/", sh, 3);
    CHECK_CODE(edgeguard_location_run(lp, NULL, &sr, NULL, EDGEGUARD_JOB_STRIP, 0, sc, &d), EDGEGUARD_RESULT_OK,
               "strip");
    CHECK(d.clear_len == 2 && d.clear[0] == 0 && d.clear[1] == 1 && d.matched == 0 && d.unremovable == 0,
          "both names: %zu %zu %zu", d.clear_len, d.matched, d.unremovable);
    CHECK_CODE(edgeguard_location_run(lp, NULL, &sr, NULL, 5, 0, sc, &d), EDGEGUARD_RESULT_INVALID_ARGUMENT, "job 5");
    edgeguard_location_free(lp);
    edgeguard_config_free(loc);
    edgeguard_config *none = NULL;
    CHECK_CODE(config_of("{\"score_header\": \"\"}", &none, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    CHECK_CODE(edgeguard_location_new(none, NULL, NULL, NULL, 0, NULL, &lp, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    CHECK_CODE(edgeguard_location_run(lp, NULL, &sr, NULL, EDGEGUARD_JOB_STRIP, 0, sc, &d), EDGEGUARD_RESULT_OK,
               "strip nothing");
    CHECK(d.clear_len == 0, "no list, no score header: nothing to strip");
    edgeguard_location_free(lp);
    edgeguard_config_free(none);
    none = NULL;
    CHECK_CODE(config_of("{\"score_header\": \"X-*\"}", &none, err, sizeof err), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "score_header X-*");
    CHECK(none == NULL && strstr(err, "score_header \"X-*\" is not a header name") != NULL, "%s", err);
    const char *bad_sh = "{\"score_header\": \"X-(a\"}";
    CHECK_CODE(edgeguard_config_new_for_location(c, (const uint8_t *)bad_sh, strlen(bad_sh), "edgeguard.access", &loc,
                                                 err, sizeof err),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "score_header X-(a");
    CHECK(strstr(err, "edgeguard.access: score_header is not a header name") != NULL, "%s", err);
    edgeguard_config_free(c);

    /* fail_closed with models configured refuses unscored requests. */
    const char *fc = "{\"models\": {\"bot\": \"b.json\"}, \"fail_closed\": true}";
    CHECK_CODE(config_of(fc, &c, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    CHECK_CODE(edgeguard_location_new(c, NULL, NULL, NULL, 0, NULL, &p, err, sizeof err), EDGEGUARD_RESULT_OK,
               "location, 0 models");
    CHECK_CODE(edgeguard_location_run(p, NULL, &rq, NULL, EDGEGUARD_JOB_ACCESS, 0, sc, &d), EDGEGUARD_RESULT_OK,
               "unscored fail_closed");
    CHECK(d.action == EDGEGUARD_OUTCOME_UNAVAILABLE && d.status == 503, "fail_closed: %d", d.action);
    edgeguard_location_free(p);
    edgeguard_config_free(c);
    edgeguard_config_free(NULL);
    edgeguard_location_free(NULL);
    edgeguard_scratch_free(sc);
    edgeguard_scratch_free(NULL);
}

/* ------------------------------------------------------------------ TLS */

static int is_grease(uint16_t v) { return (v & 0x0f0f) == 0x0a0a && (v >> 8) == (v & 0xff); }

/* A ClientHello record with `nc` ciphers (every 17th a GREASE value) and `ne`
 * empty extensions starting at type `first_ext`, plus SNI. */
static uint8_t *client_hello(size_t nc, size_t ne, uint16_t first_ext, size_t *len) {
    size_t body = 2 + 32 + 1 + 2 + 2 * nc + 2 + 2 + 4 + 4 * ne;
    size_t n = 5 + 4 + body;
    uint8_t *b = xmalloc(n), *p = b;
    *p++ = 22; *p++ = 3; *p++ = 1; *p++ = (uint8_t)((n - 5) >> 8); *p++ = (uint8_t)(n - 5);
    *p++ = 1; *p++ = (uint8_t)(body >> 16); *p++ = (uint8_t)(body >> 8); *p++ = (uint8_t)body;
    *p++ = 3; *p++ = 3;
    memset(p, 0x42, 32); p += 32;
    *p++ = 0;
    *p++ = (uint8_t)((2 * nc) >> 8); *p++ = (uint8_t)(2 * nc);
    for (size_t i = 0; i < nc; i++) {
        uint16_t c = i % 17 == 0 ? 0x0a0a : (uint16_t)(0x0100 + i);
        *p++ = (uint8_t)(c >> 8); *p++ = (uint8_t)c;
    }
    *p++ = 1; *p++ = 0;
    size_t ext = 4 + 4 * ne;
    *p++ = (uint8_t)(ext >> 8); *p++ = (uint8_t)ext;
    *p++ = 0; *p++ = 0; *p++ = 0; *p++ = 0; /* server_name, empty */
    for (size_t i = 0; i < ne; i++) {
        uint16_t t = (uint16_t)(first_ext + i);
        *p++ = (uint8_t)(t >> 8); *p++ = (uint8_t)t; *p++ = 0; *p++ = 0;
    }
    *len = n;
    return b;
}

static void test_tls_hostile(void) {
    char err[256];
    edgeguard_tls_info info;
    size_t n;
    uint8_t *h = client_hello(15, 10, 0x0100, &n);

    CHECK_CODE(edgeguard_tls_parse(h, n, &info, err, sizeof err), EDGEGUARD_RESULT_OK, "tls_parse");
    CHECK(info.present == 1 && info.ciphers == 14 && info.extensions == 11 && info.grease == 1,
          "parts %d %d %d %d", info.present, info.ciphers, info.extensions, info.grease);
    CHECK(memcmp(info.ja4, "t12d1411", 8) == 0 && info.ja4[10] == '_' && info.ja4[23] == '_',
          "ja4 %.36s", info.ja4);
    CHECK(info.alpn_len == 0 && info.source == 1, "alpn %d source %d", info.alpn_len, info.source);

    CHECK_CODE(edgeguard_tls_parse(h, n, NULL, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "tls_parse: null out");
    CHECK_CODE(edgeguard_tls_parse(NULL, n, &info, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "tls_parse: null bytes with a length");
    CHECK_CODE(edgeguard_tls_parse(h, SIZE_MAX, &info, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "tls_parse: a length no array has");
    CHECK_CODE(edgeguard_tls_parse(NULL, 0, &info, err, sizeof err), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "tls_parse: nothing");

    /* Every truncation: refused, out untouched, the field named. */
    for (size_t cut = 0; cut < n; cut++) {
        edgeguard_tls_info before;
        memset(&before, 0x5a, sizeof before);
        info = before;
        uint8_t *copy = xmalloc(cut ? cut : 1);
        memcpy(copy, h, cut);
        edgeguard_result r = edgeguard_tls_parse(copy, cut, &info, err, sizeof err);
        CHECK_CODE(r, EDGEGUARD_RESULT_INVALID_ARGUMENT, "tls_parse: truncated");
        CHECK(memcmp(&info, &before, sizeof info) == 0, "out written on failure at %zu", cut);
        CHECK(strstr(err, " at byte ") != NULL, "message at %zu: %s", cut, err);
        free(copy);
    }
    /* Lengths that lie, every error buffer size. */
    uint8_t *lie = xmalloc(n);
    memcpy(lie, h, n);
    lie[9 + 2 + 32 + 1] = 0xff; /* cipher_suites length past the end */
    for (size_t cap = 0; cap <= 40; cap += 8) {
        char *small = cap ? xmalloc(cap) : NULL;
        CHECK_CODE(edgeguard_tls_parse(lie, n, &info, small, cap), EDGEGUARD_RESULT_INVALID_ARGUMENT,
                   "tls_parse: lying cipher length");
        CHECK(cap == 0 || strlen(small) < cap, "errbuf of %zu terminated", cap);
        free(small);
    }
    free(lie);
    free(h);

    /* The largest lists a ClientHello holds. */
    h = client_hello(32767, 16382, 0x0100, &n);
    /* 16 382 extensions overflow the record's 16-bit length: as a handshake message. */
    CHECK_CODE(edgeguard_tls_parse(h + 5, n - 5, &info, err, sizeof err), EDGEGUARD_RESULT_OK,
               "tls_parse: 32767 ciphers, 16383 extensions");
    size_t want_c = 0, want_e = 1;
    for (size_t i = 0; i < 32767; i++)
        want_c += i % 17 != 0 && !is_grease((uint16_t)(0x0100 + i));
    for (size_t i = 0; i < 16382; i++)
        want_e += !is_grease((uint16_t)(0x0100 + i));
    CHECK(info.ciphers == want_c && info.extensions == want_e, "counts %d %d, want %zu %zu",
          info.ciphers, info.extensions, want_c, want_e);
    CHECK(memcmp(info.ja4 + 4, "9999", 4) == 0, "capped counts %.36s", info.ja4);
    free(h);

    /* The live calls, in a process without OpenSSL. */
    int fake;
    CHECK_CODE(edgeguard_tls_client_hello(NULL, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "client_hello: null");
    CHECK_CODE(edgeguard_tls_client_hello(&fake, err, sizeof err), EDGEGUARD_RESULT_TLS_UNAVAILABLE,
               "client_hello: no OpenSSL");
    CHECK_CODE(edgeguard_tls_client_hello(&fake, NULL, 0), EDGEGUARD_RESULT_TLS_UNAVAILABLE,
               "client_hello: no errbuf");
    memset(&info, 0x5a, sizeof info);
    CHECK_CODE(edgeguard_tls_get(&fake, &info), EDGEGUARD_RESULT_OK, "tls_get: no OpenSSL");
    CHECK(info.present == 0, "nothing found");
    CHECK_CODE(edgeguard_tls_get(NULL, &info), EDGEGUARD_RESULT_OK, "tls_get: plain HTTP");
    CHECK_CODE(edgeguard_tls_get(&fake, NULL), EDGEGUARD_RESULT_NULL_PARAMETER, "tls_get: null out");
    const char *names[] = {"unknown", "boringssl", "nss", "openssl", "go"};
    for (int f = -1; f <= 6; f++) {
        const char *want = f >= 0 && f <= 4 ? names[f] : "unknown";
        CHECK(strcmp(edgeguard_tls_family_name(f), want) == 0, "family %d", f);
    }
    CHECK(strcmp(edgeguard_tls_family_name(INT32_MIN), "unknown") == 0, "family INT32_MIN");
}

/* A deterministic pseudo-random stream (the requests stay reproducible). */
static uint32_t rng_state = 12345;
static uint32_t rng(void) {
    rng_state = rng_state * 1664525u + 1013904223u;
    return rng_state >> 8;
}

/* edgeguard_location_run: the one call of the Rust engine's access().
 * Nulls and lengths are refused with nothing written; on random hostile
 * requests (any byte in names and values, repeats, 0 to 150 headers,
 * addresses of every shape) its answer equals find_checked + scorer_score +
 * a location given those scores on the same request, with the exact score
 * header spelling left off the clear list when scored. */
static void test_access_hostile(void) {
    static const char list[] = "x-user-id\nx-internal-*\n";
    edgeguard_header_set *base = NULL, *set = NULL;
    char err[512] = "";
    CHECK_CODE(parse_list(list, sizeof list - 1, NULL, &base, NULL, 0), EDGEGUARD_RESULT_OK, "list");
    CHECK_CODE(edgeguard_header_set_extend(base, (const uint8_t *)"X-Bot-Score", 11, "s", &set, err, sizeof err),
               EDGEGUARD_RESULT_OK, err);
    edgeguard_scorer *s = shipped_scorer();
    edgeguard_config *c = NULL;
    const char *cj = "{\"models\": {\"bot\": \"b.json\", \"spoof\": \"s.json\"}, \"mode\": \"block\", "
                     "\"thresholds\": {\"spoof\": 0.5}, \"allow\": [\"10.0.0.0/8\", \"2001:db8::/32\"]}";
    CHECK_CODE(edgeguard_config_new((const uint8_t *)cj, strlen(cj), NULL, NULL, &c, err, sizeof err),
               EDGEGUARD_RESULT_OK, err);
    const char *names[] = {"bot", "spoof"};
    double own[2] = {edgeguard_scorer_model_threshold(s, 0), edgeguard_scorer_model_threshold(s, 1)};
    edgeguard_location *p = NULL, *p0 = NULL, *pg = NULL;
    /* The location extends the list with the score header (the default
     * X-Bot-Score) itself; `set`, extended here, is the reference. */
    CHECK_CODE(edgeguard_location_new(c, s, NULL, NULL, 0, base, &p, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    CHECK_CODE(edgeguard_location_new(c, NULL, NULL, NULL, 0, base, &p0, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    CHECK_CODE(edgeguard_location_new(c, NULL, names, own, 2, base, &pg, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    CHECK_CODE(edgeguard_location_new(c, s, names, own, 2, base, &p, err, sizeof err),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "names beside a scorer");
    if (!set || !c || !p || !p0 || !pg)
        return;
    CHECK(edgeguard_location_model_count(p) == 2 && edgeguard_location_model_count(p0) == 0, "model counts");
    edgeguard_scratch *sc = NULL;
    CHECK_CODE(edgeguard_scratch_new(&sc), EDGEGUARD_RESULT_OK, "scratch");

    edgeguard_header h[150];
    edgeguard_request req = {str_of("GET", 3), str_of("/", 1), str_of("192.0.2.1", 9), 11, h, 0, NULL, {0, NULL}, {0, NULL}};
    h[0] = (edgeguard_header){str_of("User-Agent", 10), str_of("curl/8.0", 8)};
    h[1] = (edgeguard_header){str_of("X-Bot-Score", 11), str_of("bot=0", 5)};
    h[2] = (edgeguard_header){str_of("x-user-id", 9), str_of("7", 1)};
    req.headers_len = 3;
    edgeguard_effects out, untouched;
    memset(&untouched, 0x5a, sizeof untouched);
    out = untouched;
    double one_score[1] = {0.5};
    edgeguard_given short_given = {one_score, 1, 0, 0}, huge_given = {one_score, SIZE_MAX, 0, 0};
#define RUN(loc_, req_, given_, job_, scratch_, out_) \
    edgeguard_location_run(loc_, NULL, req_, given_, job_, 1800000000, scratch_, out_)
    static const struct { edgeguard_result want; const char *what; } expect[] = {
        {EDGEGUARD_RESULT_NULL_PARAMETER, "null location"},
        {EDGEGUARD_RESULT_NULL_PARAMETER, "null request"},
        {EDGEGUARD_RESULT_NULL_PARAMETER, "null scratch"},
        {EDGEGUARD_RESULT_INVALID_ARGUMENT, "job -1"},
        {EDGEGUARD_RESULT_INVALID_ARGUMENT, "job 5"},
        {EDGEGUARD_RESULT_INVALID_ARGUMENT, "1 given score of 2"},
        {EDGEGUARD_RESULT_INVALID_ARGUMENT, "given scores to a location without models"},
        {EDGEGUARD_RESULT_NULL_PARAMETER, "SIZE_MAX given scores"},
    };
    edgeguard_result got[sizeof expect / sizeof *expect] = {
        RUN(NULL, &req, NULL, EDGEGUARD_JOB_ACCESS, sc, &out),
        RUN(p, NULL, NULL, EDGEGUARD_JOB_ACCESS, sc, &out),
        RUN(p, &req, NULL, EDGEGUARD_JOB_ACCESS, NULL, &out),
        RUN(p, &req, NULL, -1, sc, &out),
        RUN(p, &req, NULL, 5, sc, &out),
        RUN(pg, &req, &short_given, EDGEGUARD_JOB_ACCESS, sc, &out),
        RUN(p0, &req, &short_given, EDGEGUARD_JOB_ACCESS, sc, &out),
        RUN(pg, &req, &huge_given, EDGEGUARD_JOB_ACCESS, sc, &out),
    };
    for (size_t i = 0; i < sizeof expect / sizeof *expect; i++)
        CHECK_CODE(got[i], expect[i].want, expect[i].what);
    CHECK_CODE(RUN(p, &req, NULL, EDGEGUARD_JOB_ACCESS, sc, NULL), EDGEGUARD_RESULT_NULL_PARAMETER, "null out");
    edgeguard_request bad = req;
    bad.http_version = -1;
    CHECK_CODE(RUN(p, &bad, NULL, EDGEGUARD_JOB_ACCESS, sc, &out), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "negative http_version");
    bad = req;
    bad.headers = NULL;
    CHECK_CODE(RUN(p, &bad, NULL, EDGEGUARD_JOB_ACCESS, sc, &out), EDGEGUARD_RESULT_NULL_PARAMETER,
               "null headers, length 3");
    bad = req;
    bad.headers_len = SIZE_MAX;
    CHECK_CODE(RUN(p, &bad, NULL, EDGEGUARD_JOB_ACCESS, sc, &out), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "SIZE_MAX headers_len");
    edgeguard_tls_info forged_tls;
    memset(&forged_tls, 0, sizeof forged_tls);
    forged_tls.present = 1;
    memset(forged_tls.ja4, '!', sizeof forged_tls.ja4);
    bad = req;
    bad.tls = &forged_tls;
    CHECK_CODE(RUN(p, &bad, NULL, EDGEGUARD_JOB_ACCESS, sc, &out), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "a JA4 that is not one");
    CHECK(memcmp(&out, &untouched, sizeof out) == 0, "out written on a refused call");

    /* The pieces the random requests are made of. */
    static const char *pool[] = {"X-Bot-Score", "x-bot-score", "X_Bot_Score", "x-user-id", "X_USER_ID",
                                 "x-internal-a", "X-Internal-(a", "x-internal-\xe9", "User-Agent", "Accept",
                                 "Host", "sec-ch-ua", "Accept-Language", "", "x-internal-"};
    static const char *clients[] = {"192.0.2.1", "10.9.8.7", "2001:db8::5", "2001:db9::5", "", "unix:", "10.1"};
    static char bytes[150][24];
    static char addr_bytes[24];
    size_t agree = 0, scored = 0, kept = 0, allowed = 0, blocked = 0, unremovable = 0;
    for (int round = 0; round < 400; round++) {
        size_t n = rng() % 151;
        if (round % 50 == 0)
            n = 0;
        for (size_t i = 0; i < n; i++) {
            edgeguard_str key, value;
            if (rng() % 4 == 0) {
                size_t len = rng() % sizeof bytes[i];
                for (size_t j = 0; j < len; j++)
                    bytes[i][j] = (char)(rng() & 0xff);
                key = str_of(bytes[i], len);
            } else {
                const char *k = pool[rng() % (sizeof pool / sizeof *pool)];
                key = str_of(k, strlen(k));
            }
            value = rng() % 8 == 0 ? (edgeguard_str){-5, NULL} : str_of("curl/8.0 value", rng() % 15);
            h[i] = (edgeguard_header){key, value};
        }
        req.headers_len = n;
        req.http_version = (int)(rng() % 4 == 0 ? 20 : 11);
        if (rng() % 6 == 0) {
            size_t len = rng() % sizeof addr_bytes;
            for (size_t j = 0; j < len; j++)
                addr_bytes[j] = (char)(rng() & 0xff);
            req.client_addr = str_of(addr_bytes, len);
        } else {
            const char *a = clients[rng() % (sizeof clients / sizeof *clients)];
            req.client_addr = str_of(a, strlen(a));
        }
        int with_scorer = rng() % 5 != 0;

        out = untouched;
        edgeguard_result r = RUN(with_scorer ? p : p0, &req, NULL, EDGEGUARD_JOB_ACCESS, sc, &out);
        CHECK_CODE(r, EDGEGUARD_RESULT_OK, "random request");
        /* Read what the scratch holds before the reference runs reuse it. */
        uint32_t clear[150];
        memcpy(clear, out.clear, out.clear_len * sizeof *clear);
        double scores[2] = {-7, -7};
        if (out.scores_len == 2)
            memcpy(scores, out.scores, sizeof scores);
        char value_text[128] = "";
        snprintf(value_text, sizeof value_text, "%.*s", out.set_header.value.len,
                 (const char *)out.set_header.value.data);

        uint32_t clear2[150];
        size_t n2 = 0, m2 = 0, u2 = 0;
        CHECK_CODE(edgeguard_header_set_find_checked(set, h, n, clear2, 150, &n2, &m2, &u2), EDGEGUARD_RESULT_OK,
                   "find_checked");
        double scores2[2] = {0, 0};
        edgeguard_given g = {NULL, 0, 0, 0};
        if (with_scorer) {
            CHECK_CODE(edgeguard_scorer_score(s, &req, scores2, 2), EDGEGUARD_RESULT_OK, "score");
            g.scores = scores2;
            g.scores_len = 2;
        }
        edgeguard_effects d;
        CHECK_CODE(RUN(pg, &req, &g, EDGEGUARD_JOB_ACCESS, sc, &d), EDGEGUARD_RESULT_OK, "decide");
        /* The reference clear list: find_checked's, less the exact spelling
         * when scored; nothing when refused. */
        size_t want_len = 0;
        for (size_t i = 0; i < n2 && u2 == 0; i++) {
            const edgeguard_str *k = &h[clear2[i]].key;
            int exact = k->len == 11 && memcmp(k->data, "X-Bot-Score", 11) == 0;
            if (with_scorer && exact) {
                kept++;
                continue;
            }
            clear2[want_len++] = clear2[i];
        }
        int refused = u2 > 0;
        int same = out.clear_len == want_len && memcmp(clear, clear2, want_len * sizeof *clear) == 0 &&
                   out.matched == m2 && out.unremovable == u2 && out.scores_len == (with_scorer ? 2u : 0u) &&
                   out.score_result == EDGEGUARD_RESULT_OK && out.action == d.action && out.model == d.model &&
                   out.status == d.status && out.bot_name.len == 0 &&
                   (!with_scorer || memcmp(scores, scores2, sizeof scores) == 0) &&
                   (out.action == EDGEGUARD_OUTCOME_REFUSED) == refused;
        /* The score header's value, as the shim's string.format wrote it. */
        if (with_scorer && !refused) {
            char want_text[128];
            snprintf(want_text, sizeof want_text, "bot=%.9g; spoof=%.9g", scores2[0], scores2[1]);
            int text_same = strcmp(value_text, want_text) == 0;
            CHECK(text_same, "round %d: score text %s, want %s", round, value_text, want_text);
            same = same && text_same;
        } else {
            same = same && out.set_header.value.len == 0;
        }
        int lined = d.action == EDGEGUARD_OUTCOME_BLOCK || d.action == EDGEGUARD_OUTCOME_LOG || refused;
        same = same && (d.line.len > 0) == lined;
        CHECK(same, "round %d: the run and the separate exports disagree (clear %zu/%zu, action %d/%d)", round,
              out.clear_len, want_len, out.action, d.action);
        agree += same;
        scored += with_scorer;
        allowed += out.action == EDGEGUARD_OUTCOME_ALLOW;
        blocked += out.action == EDGEGUARD_OUTCOME_BLOCK;
        unremovable += out.unremovable > 0;
    }

    /* A location given scores: the legacy engine's texts, the same formats
     * as C's printf. */
    edgeguard_effects pd;
    double ps[2] = {0.25, 0.75};
    edgeguard_given pg_given = {ps, 2, 0, 0};
    req.headers_len = 0;
    req.client_addr = str_of("192.0.2.1", 9);
    CHECK_CODE(RUN(pg, &req, &pg_given, EDGEGUARD_JOB_ACCESS, sc, &pd), EDGEGUARD_RESULT_OK, "given");
    char want_text[512];
    snprintf(want_text, sizeof want_text, "bot=%.9g; spoof=%.9g", ps[0], ps[1]);
    CHECK(pd.set_header.value.len == (int)strlen(want_text) &&
              memcmp(pd.set_header.value.data, want_text, strlen(want_text)) == 0,
          "given text scores: %.*s", pd.set_header.value.len, (const char *)pd.set_header.value.data);
    CHECK(pd.action == EDGEGUARD_OUTCOME_BLOCK && pd.model >= 0, "a flagged decision: %d %d", pd.action, pd.model);
    if (pd.model >= 0 && pd.model < 2) {
        snprintf(want_text, sizeof want_text,
                 "edgeguard action=block grade=certain reasons=ua_missing model=%s score=%.6f threshold=%.6f "
                 "request_id= client=192.0.2.1 method=GET uri=\"/\"",
                 names[pd.model], ps[pd.model], pd.threshold);
        CHECK(pd.line.len == (int)strlen(want_text) && memcmp(pd.line.data, want_text, strlen(want_text)) == 0,
              "given text line: %.*s", pd.line.len, (const char *)pd.line.data);
    }
#undef RUN
    CHECK(agree == 400 && scored > 200 && kept > 0 && allowed > 0 && blocked > 0 && unremovable > 0,
          "access rounds: %zu agree, %zu scored, %zu kept, %zu allowed, %zu blocked, %zu unremovable", agree, scored,
          kept, allowed, blocked, unremovable);
    edgeguard_location_free(p);
    edgeguard_location_free(p0);
    edgeguard_location_free(pg);
    edgeguard_scratch_free(sc);
    edgeguard_config_free(c);
    edgeguard_scorer_free(s);
    edgeguard_header_set_free(set);
    edgeguard_header_set_free(base);
}

/* ----------------------------------------- challenge and verified bots */

static edgeguard_header hdr(const char *k, const char *v) {
    edgeguard_header h;
    h.key = str_of(k, strlen(k));
    h.value = str_of(v, strlen(v));
    return h;
}

/* ----------------------------------------------------------------- metrics */

/* Drains `m` into a dict of its own and reports whether the exposition of
 * the totals holds every string of the NULL-terminated list. */
static int metrics_text_has(const edgeguard_metrics *m, ...) {
    size_t n = edgeguard_metrics_len(m), got = 0, len = 0;
    uint32_t *slots = xmalloc(n * sizeof *slots);
    double *deltas = xmalloc(n * sizeof *deltas);
    double *values = calloc(n ? n : 1, sizeof *values);
    size_t room = edgeguard_metrics_text_room(m);
    char *text = xmalloc(room + 1);
    int ok = edgeguard_metrics_drain(m, slots, deltas, n, &got) == EDGEGUARD_RESULT_OK;
    for (size_t i = 0; ok && i < got; i++)
        values[slots[i]] += deltas[i];
    ok = ok && edgeguard_metrics_text(m, values, n, (uint8_t *)text, room, &len) == EDGEGUARD_RESULT_OK;
    if (ok)
        text[len] = 0;
    va_list ap;
    va_start(ap, m);
    for (const char *want = va_arg(ap, const char *); ok && want; want = va_arg(ap, const char *)) {
        ok = strstr(text, want) != NULL;
        if (!ok)
            printf("metrics text without \"%s\":\n%.*s\n", want, (int)len, text);
    }
    va_end(ap);
    free(slots);
    free(deltas);
    free(values);
    free(text);
    return ok;
}

static void test_metrics_hostile(void) {
    char err[256];
    edgeguard_metrics *m = NULL;
    const char *rust[] = {"bot", "sp\"oof"};
    const char *bad_utf8[] = {"bot", "\xff\xfe"};
    const char *with_null[] = {"bot", NULL};
    /* The configuration gives the series: a challenge and the fixture's
     * verified bots (Googlebot, bingbot). */
    char json[2048];
    snprintf(json, sizeof json,
             "{\"challenge_secret\": \"%s/../challenge/secret\", \"verified_bots\": \"%s/../verified/bots.json\"}",
             fixture_dir, fixture_dir);
    edgeguard_config *cfg = NULL;
    CHECK_CODE(config_of(json, &cfg, err, sizeof err), EDGEGUARD_RESULT_OK, "metrics config");
    if (!cfg)
        return;
    CHECK_CODE(edgeguard_metrics_new(cfg, rust, 2, NULL, 0, NULL, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "metrics_new: null out");
    CHECK_CODE(edgeguard_metrics_new(NULL, rust, 2, NULL, 0, &m, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "metrics_new: null config");
    CHECK_CODE(edgeguard_metrics_new(cfg, NULL, 2, NULL, 0, &m, err, sizeof err), EDGEGUARD_RESULT_NULL_PARAMETER,
               "metrics_new: null list, count 2");
    CHECK_CODE(edgeguard_metrics_new(cfg, rust, SIZE_MAX, NULL, 0, &m, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "metrics_new: SIZE_MAX count");
    CHECK_CODE(edgeguard_metrics_new(cfg, with_null, 2, NULL, 0, &m, err, sizeof err),
               EDGEGUARD_RESULT_NULL_PARAMETER, "metrics_new: null name");
    CHECK_CODE(edgeguard_metrics_new(cfg, rust, 2, bad_utf8, 2, &m, NULL, 0), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "metrics_new: name not UTF-8, no errbuf");
    CHECK_CODE(edgeguard_metrics_new(cfg, rust, 2, bad_utf8, 2, &m, err, sizeof err),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "metrics_new: name not UTF-8");
    CHECK(strcmp(err, "Lua model 1 name is not UTF-8") == 0, "utf-8 error: %s", err);
    CHECK(m == NULL, "nothing written on errors");
    CHECK(edgeguard_metrics_len(NULL) == 0 && edgeguard_metrics_text_room(NULL) == 0, "null registry: 0");
    edgeguard_metrics_free(NULL);
    CHECK_CODE(edgeguard_metrics_new(cfg, rust, 2, NULL, 0, &m, err, sizeof err), EDGEGUARD_RESULT_OK, "metrics_new");
    size_t n = edgeguard_metrics_len(m);
    CHECK(n > 40, "slots: %zu", n);

    edgeguard_str key = {-7, NULL};
    CHECK_CODE(edgeguard_metrics_key(NULL, 0, &key), EDGEGUARD_RESULT_NULL_PARAMETER, "key: null registry");
    CHECK_CODE(edgeguard_metrics_key(m, 0, NULL), EDGEGUARD_RESULT_NULL_PARAMETER, "key: null out");
    CHECK_CODE(edgeguard_metrics_key(m, n, &key), EDGEGUARD_RESULT_INVALID_ARGUMENT, "key: slot len");
    CHECK_CODE(edgeguard_metrics_key(m, SIZE_MAX, &key), EDGEGUARD_RESULT_INVALID_ARGUMENT, "key: SIZE_MAX");
    CHECK(key.len == -7, "key untouched on errors");
    CHECK_CODE(edgeguard_metrics_key(m, 0, &key), EDGEGUARD_RESULT_OK, "key 0");
    CHECK(key.len == 39 && memcmp(key.data, "edgeguard_requests_total{engine=\"rust\"}", 39) == 0, "key 0: %.*s",
          key.len, key.data);

    /* Counting calls: bad numbers refused, nothing counted. */
    CHECK_CODE(edgeguard_metrics_request(NULL, 0, 0, 0, NULL), EDGEGUARD_RESULT_NULL_PARAMETER, "request: null");
    CHECK_CODE(edgeguard_metrics_request(m, 3, 0, 0, NULL), EDGEGUARD_RESULT_INVALID_ARGUMENT, "request: engine 3");
    CHECK_CODE(edgeguard_metrics_request(m, 0, EDGEGUARD_OUTCOME_CHALLENGE_REQUIRED + 1, 0, NULL), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "request: outcome past the last");
    CHECK_CODE(edgeguard_metrics_request(m, 0, -1, 0, NULL), EDGEGUARD_RESULT_INVALID_ARGUMENT, "request: outcome -1");
    edgeguard_effects out;
    memset(&out, 0, sizeof out);
    int *raw = (int *)&out.bot;
    *raw = 3;
    CHECK_CODE(edgeguard_metrics_request(m, 0, EDGEGUARD_OUTCOME_BLOCK, 0, &out), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "request: bot 3");
    out.bot = EDGEGUARD_BOT_FAKE;
    raw = (int *)&out.clearance;
    *raw = 11;
    CHECK_CODE(edgeguard_metrics_request(m, 0, EDGEGUARD_OUTCOME_BLOCK, 0, &out), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "request: clearance 11");
    *raw = -2;
    CHECK_CODE(edgeguard_metrics_request(m, 0, EDGEGUARD_OUTCOME_BLOCK, 0, &out), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "request: clearance -2");
    /* A hostile bot name: a negative length is empty (no bot of that name). */
    out.clearance = EDGEGUARD_CLEARANCE_MAC;
    out.bot_name = str_of("Googlebot", 9);
    out.bot_name.len = -9;
    CHECK_CODE(edgeguard_metrics_request(m, 0, EDGEGUARD_OUTCOME_BLOCK, 2, &out), EDGEGUARD_RESULT_OK,
               "request: negative label");
    out.bot_name.len = 9;
    CHECK_CODE(edgeguard_metrics_request(m, 0, EDGEGUARD_OUTCOME_CHALLENGE, 0, &out), EDGEGUARD_RESULT_OK,
               "request: challenge, a fake Googlebot");
    CHECK_CODE(edgeguard_metrics_request(m, EDGEGUARD_ENGINE_KIND_LUA, EDGEGUARD_OUTCOME_REFUSED, 1, &out),
               EDGEGUARD_RESULT_OK, "request: an engine without series counts the decision only");
    double sc[2] = {0.25, 2};
    CHECK_CODE(edgeguard_metrics_scores(NULL, 0, sc, 2), EDGEGUARD_RESULT_NULL_PARAMETER, "scores: null");
    CHECK_CODE(edgeguard_metrics_scores(m, 0, NULL, 2), EDGEGUARD_RESULT_NULL_PARAMETER, "scores: null scores");
    CHECK_CODE(edgeguard_metrics_scores(m, 0, sc, 1), EDGEGUARD_RESULT_INVALID_ARGUMENT, "scores: 1 of 2");
    CHECK_CODE(edgeguard_metrics_scores(m, 0, sc, SIZE_MAX), EDGEGUARD_RESULT_NULL_PARAMETER, "scores: SIZE_MAX");
    CHECK_CODE(edgeguard_metrics_scores(m, 1, sc, 2), EDGEGUARD_RESULT_INVALID_ARGUMENT, "scores: no Lua series");
    CHECK_CODE(edgeguard_metrics_scores(m, 2, sc, 2), EDGEGUARD_RESULT_INVALID_ARGUMENT, "scores: shadow");
    CHECK_CODE(edgeguard_metrics_scores(m, 0, sc, 2), EDGEGUARD_RESULT_OK, "scores");
    CHECK_CODE(edgeguard_metrics_engine_time(NULL, 0, 1e-6), EDGEGUARD_RESULT_NULL_PARAMETER, "time: null");
    CHECK_CODE(edgeguard_metrics_engine_time(m, 1, 1e-6), EDGEGUARD_RESULT_INVALID_ARGUMENT, "time: no Lua series");
    CHECK_CODE(edgeguard_metrics_engine_time(m, 9, 1e-6), EDGEGUARD_RESULT_INVALID_ARGUMENT, "time: engine 9");
    CHECK_CODE(edgeguard_metrics_engine_time(m, 0, 3e-6), EDGEGUARD_RESULT_OK, "time");
    CHECK_CODE(edgeguard_metrics_disagreement(NULL, 0), EDGEGUARD_RESULT_NULL_PARAMETER, "disagreement: null");
    CHECK_CODE(edgeguard_metrics_disagreement(m, 3), EDGEGUARD_RESULT_INVALID_ARGUMENT, "disagreement: 3");
    CHECK_CODE(edgeguard_metrics_disagreement(m, EDGEGUARD_DISAGREEMENT_HEADERS), EDGEGUARD_RESULT_OK,
               "disagreement");
    CHECK_CODE(edgeguard_metrics_load_errors(NULL, 2), EDGEGUARD_RESULT_NULL_PARAMETER, "load errors: null");
    CHECK_CODE(edgeguard_metrics_load_errors(m, 2), EDGEGUARD_RESULT_OK, "load errors");

    /* Drain: bad buffers refused; a short buffer lists some, the rest stay. */
    uint32_t slots[4];
    double deltas[4];
    size_t got = 77;
    CHECK_CODE(edgeguard_metrics_drain(NULL, slots, deltas, 4, &got), EDGEGUARD_RESULT_NULL_PARAMETER, "drain: null");
    CHECK_CODE(edgeguard_metrics_drain(m, slots, deltas, 4, NULL), EDGEGUARD_RESULT_NULL_PARAMETER,
               "drain: null out_len");
    CHECK_CODE(edgeguard_metrics_drain(m, NULL, deltas, 4, &got), EDGEGUARD_RESULT_NULL_PARAMETER, "drain: null slots");
    CHECK_CODE(edgeguard_metrics_drain(m, slots, NULL, 4, &got), EDGEGUARD_RESULT_NULL_PARAMETER,
               "drain: null deltas");
    CHECK_CODE(edgeguard_metrics_drain(m, slots, deltas, SIZE_MAX, &got), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "drain: SIZE_MAX");
    CHECK(got == 77, "drain: out_len untouched on errors");
    CHECK_CODE(edgeguard_metrics_drain(m, NULL, NULL, 0, &got), EDGEGUARD_RESULT_OK, "drain: cap 0");
    CHECK(got == 0, "drain: cap 0 lists none");
    CHECK_CODE(edgeguard_metrics_drain(m, slots, deltas, 1, &got), EDGEGUARD_RESULT_OK, "drain: cap 1");
    /* Slot 0, the first non-zero: the two requests under "rust". */
    CHECK(got == 1 && slots[0] == 0 && deltas[0] == 2, "drain: one pair, %zu: %u %g", got, slots[0], deltas[0]);
    CHECK_CODE(edgeguard_metrics_restore(NULL, slots[0], deltas[0]), EDGEGUARD_RESULT_NULL_PARAMETER,
               "restore: null");
    CHECK_CODE(edgeguard_metrics_restore(m, n, 1), EDGEGUARD_RESULT_INVALID_ARGUMENT, "restore: slot len");
    CHECK_CODE(edgeguard_metrics_restore(m, slots[0], deltas[0]), EDGEGUARD_RESULT_OK, "restore");

    /* Text: bad arguments refused, nothing written. */
    size_t room = edgeguard_metrics_text_room(m), len = 5;
    double *values = calloc(n, sizeof *values);
    uint8_t *text = xmalloc(room);
    CHECK_CODE(edgeguard_metrics_text(NULL, values, n, text, room, &len), EDGEGUARD_RESULT_NULL_PARAMETER, "text: null");
    CHECK_CODE(edgeguard_metrics_text(m, NULL, n, text, room, &len), EDGEGUARD_RESULT_NULL_PARAMETER,
               "text: null values");
    CHECK_CODE(edgeguard_metrics_text(m, values, n, NULL, room, &len), EDGEGUARD_RESULT_NULL_PARAMETER,
               "text: null buf");
    CHECK_CODE(edgeguard_metrics_text(m, values, n, text, room, NULL), EDGEGUARD_RESULT_NULL_PARAMETER,
               "text: null out_len");
    CHECK_CODE(edgeguard_metrics_text(m, values, n - 1, text, room, &len), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "text: one value short");
    CHECK_CODE(edgeguard_metrics_text(m, values, SIZE_MAX, text, room, &len), EDGEGUARD_RESULT_NULL_PARAMETER,
               "text: SIZE_MAX values");
    CHECK_CODE(edgeguard_metrics_text(m, values, n, text, room - 1, &len), EDGEGUARD_RESULT_BUFFER_TOO_SMALL,
               "text: room - 1");
    CHECK(len == 5, "text: out_len untouched on errors");
    /* The widest values fit the room. */
    for (size_t i = 0; i < n; i++)
        values[i] = -1.2345678901234567e-308;
    CHECK_CODE(edgeguard_metrics_text(m, values, n, text, room, &len), EDGEGUARD_RESULT_OK, "text: widest values");
    CHECK(len <= room, "text: %zu of %zu", len, room);
    free(values);
    free(text);

    /* Two requests under "rust"; the Lua one has no series but its decision. */
    CHECK(metrics_text_has(m, "edgeguard_requests_total{engine=\"rust\"} 2\n", NULL), "requests counted");
    edgeguard_metrics_free(m);
    /* The registry outlives the configuration it was made from. */
    CHECK_CODE(edgeguard_metrics_new(cfg, rust, 2, NULL, 0, &m, err, sizeof err), EDGEGUARD_RESULT_OK,
               "metrics_new again");
    edgeguard_config_free(cfg);
    out.bot_name.len = 9;
    edgeguard_metrics_request(m, 0, EDGEGUARD_OUTCOME_CHALLENGE, 3, &out);
    edgeguard_metrics_request(m, EDGEGUARD_ENGINE_KIND_LUA, EDGEGUARD_OUTCOME_REFUSED, 1, &out);
    edgeguard_metrics_scores(m, 0, sc, 2);
    CHECK(metrics_text_has(m, "edgeguard_requests_total{engine=\"rust\"} 1\n"
                              "# HELP edgeguard_headers_stripped_total Internal header entries removed from requests "
                              "(by the acting engine).\n# TYPE edgeguard_headers_stripped_total counter\n"
                              "edgeguard_headers_stripped_total 4\n", NULL),
          "requests and stripped entries");
    edgeguard_metrics_request(m, 0, EDGEGUARD_OUTCOME_CHALLENGE, 3, &out);
    edgeguard_metrics_request(m, EDGEGUARD_ENGINE_KIND_LUA, EDGEGUARD_OUTCOME_REFUSED, 1, &out);
    CHECK(metrics_text_has(m, "edgeguard_verified_bots_total{bot=\"Googlebot\",result=\"fake\"} 1\n", NULL),
          "a fake bot on a challenged request, not on a refused one");
    edgeguard_metrics_request(m, 0, EDGEGUARD_OUTCOME_CHALLENGE, 0, &out);
    CHECK(metrics_text_has(m, "edgeguard_challenges_total{result=\"served\"} 1\n", NULL),
          "a challenge outcome is a page served");
    edgeguard_metrics_request(m, 0, EDGEGUARD_OUTCOME_BLOCK, 0, &out);
    CHECK(metrics_text_has(m, "edgeguard_clearances_total{result=\"mac\"} 1\n", NULL), "a rejected cookie");
    edgeguard_metrics_scores(m, 0, sc, 2);
    CHECK(metrics_text_has(m, "edgeguard_score_bucket{model=\"sp\\\"oof\",engine=\"rust\",le=\"+Inf\"} 1\n", NULL),
          "escaped model label");
    edgeguard_metrics_free(m);
}

/* A location (no models) over the options in `json`; NULL when refused. */
static edgeguard_location *challenge_location(const char *json, char *err, size_t err_len) {
    edgeguard_config *c = NULL;
    edgeguard_location *p = NULL;
    if (config_of(json, &c, err, err_len) != EDGEGUARD_RESULT_OK)
        return NULL;
    if (edgeguard_location_new(c, NULL, NULL, NULL, 0, NULL, &p, err, err_len) != EDGEGUARD_RESULT_OK)
        p = NULL;
    edgeguard_config_free(c);
    return p;
}

/* One request through a location from `client` at `now` (metrics `m`, may
 * be NULL). */
static edgeguard_result run_from(const edgeguard_location *p, const edgeguard_metrics *m, edgeguard_request r,
                                 const char *client, int64_t now, edgeguard_scratch *sc, edgeguard_effects *d) {
    r.client_addr = str_of(client, client ? strlen(client) : 0);
    return edgeguard_location_run(p, m, &r, NULL, EDGEGUARD_JOB_ACCESS, now, sc, d);
}

/* The value of response header `name` in `d`, or NULL. */
static const edgeguard_str *response_header(const edgeguard_effects *d, const char *name) {
    for (size_t i = 0; i < d->response_headers_len; i++) {
        const edgeguard_str *k = &d->response_headers[i].key;
        if (k->len == (int)strlen(name) && memcmp(k->data, name, (size_t)k->len) == 0)
            return &d->response_headers[i].value;
    }
    return NULL;
}

static void test_challenge_hostile(void) {
    char err[1024], json[2048];
    const char *fixtures = fixture_dir; /* tests/fixtures/catboost */
    snprintf(json, sizeof json,
             "{\"mode\": \"challenge\", \"challenge_secret\": \"%s/../challenge/secret\", \"challenge_difficulty\": 0, \"challenge_difficulty_max\": 0,"
             " \"verified_bots\": \"%s/../verified/bots.json\"}", fixtures, fixtures);
    edgeguard_location *p = challenge_location(json, err, sizeof err);
    CHECK(p != NULL, "challenge location: %s", err);
    if (!p)
        return;
    edgeguard_scratch *sc = NULL;
    CHECK_CODE(edgeguard_scratch_new(&sc), EDGEGUARD_RESULT_OK, "scratch");
    /* The answers below count into this registry (its configuration's
     * challenge gives the series). */
    edgeguard_metrics *cm = NULL;
    edgeguard_config *mc = NULL;
    CHECK_CODE(config_of(json, &mc, err, sizeof err), EDGEGUARD_RESULT_OK, "challenge metrics config");
    CHECK_CODE(edgeguard_metrics_new(mc, NULL, 0, NULL, 0, &cm, NULL, 0), EDGEGUARD_RESULT_OK, "challenge metrics");
    edgeguard_config_free(mc);

    /* Refused files name the file and the line or field. */
    edgeguard_config *c = NULL;
    const char *bad_files[][3] = {
        {"challenge_secret", "../challenge/secret-bad", "secret-bad: line 1: a key is hex digits"},
        {"verified_bots", "../verified/googlebot.json", "googlebot.json: not an object with a \"bots\" array"},
        {"challenge_secret", "../challenge/none", "challenge_secret: "},
    };
    for (size_t i = 0; i < sizeof bad_files / sizeof *bad_files; i++) {
        snprintf(json, sizeof json, "{\"%s\": \"%s/%s\"}", bad_files[i][0], fixtures, bad_files[i][1]);
        err[0] = 0;
        CHECK_CODE(config_of(json, &c, err, sizeof err), EDGEGUARD_RESULT_CONFIG_INVALID, bad_files[i][1]);
        CHECK(strstr(err, bad_files[i][2]) != NULL, "%s: %s", bad_files[i][1], err);
    }
    CHECK_CODE(config_of("{\"mode\": \"challenge\"}", &c, err, sizeof err), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "challenge without a secret");

    CHECK(strcmp(edgeguard_clearance_name(0), "absent") == 0, "name 0");
    CHECK(strcmp(edgeguard_clearance_name(7), "work") == 0, "name 7");
    CHECK(edgeguard_clearance_name(11) == NULL && edgeguard_clearance_name(-1) == NULL &&
              edgeguard_clearance_name(1 << 30) == NULL, "names out of range");
    CHECK(strcmp(edgeguard_outcome_name(EDGEGUARD_OUTCOME_REFUSED), "refused") == 0 &&
              strcmp(edgeguard_outcome_name(0), "pass") == 0 && edgeguard_outcome_name(EDGEGUARD_OUTCOME_CHALLENGE_REQUIRED + 1) == NULL &&
              edgeguard_outcome_name(-1) == NULL, "action names");

    edgeguard_effects d;
    const char *fake_addr = "203.0.113.1", *bot_addr = "192.0.2.70";
    const char *googlebot = "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)";
    edgeguard_header gh[] = {hdr("User-Agent", googlebot), hdr("Accept", "text/html")};
    edgeguard_request req = request_of("GET", "/", gh, 2);
    int64_t now = 1800000000;

    double one = 0.5;
    edgeguard_given one_score = {&one, 1, 0, 0};
    req.client_addr = str_of(fake_addr, strlen(fake_addr));
    CHECK_CODE(edgeguard_location_run(p, NULL, &req, &one_score, EDGEGUARD_JOB_ACCESS, now, sc, &d),
               EDGEGUARD_RESULT_INVALID_ARGUMENT, "one score for no model");
    edgeguard_request broken = req;
    broken.headers = NULL;
    CHECK_CODE(run_from(p, NULL, broken, fake_addr, now, sc, &d), EDGEGUARD_RESULT_NULL_PARAMETER,
               "null headers with a count");
    broken = req;
    broken.http_version = -1;
    CHECK_CODE(run_from(p, NULL, broken, fake_addr, now, sc, &d), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "negative http_version");
    broken = req;
    broken.headers_len = (size_t)UINT32_MAX + 1;
    CHECK_CODE(run_from(p, NULL, broken, fake_addr, now, sc, &d), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "headers_len above UINT32_MAX");

    /* A fake Googlebot navigation is challenged; from its prefix, verified. */
    CHECK_CODE(run_from(p, NULL, req, fake_addr, now, sc, &d), EDGEGUARD_RESULT_OK, "fake");
    CHECK(d.action == EDGEGUARD_OUTCOME_CHALLENGE && d.bot == EDGEGUARD_BOT_FAKE && d.bot_name.len == 9 &&
              memcmp(d.bot_name.data, "Googlebot", 9) == 0 && d.status == 403 && d.exit == EDGEGUARD_EXIT_BODY,
          "fake: action %d bot %d", (int)d.action, (int)d.bot);
    CHECK_CODE(run_from(p, NULL, req, bot_addr, now, sc, &d), EDGEGUARD_RESULT_OK, "real");
    CHECK(d.action == EDGEGUARD_OUTCOME_VERIFIED && d.bot == EDGEGUARD_BOT_VERIFIED && d.exit == EDGEGUARD_EXIT_CONTINUE,
          "verified: %d", (int)d.action);
    /* Addresses that do not parse are no address: a claim from none is a fake. */
    const char *odd[] = {"", "192.0.2", "192.0.2.70x", "192.0.2.70 ", "::ffff:192.0.2.70", "unix:", "\xff"};
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        CHECK_CODE(run_from(p, NULL, req, odd[i], now, sc, &d), EDGEGUARD_RESULT_OK, "odd address");
        int mapped = i == 4; /* the IPv4-mapped form of the bot's address */
        CHECK(d.bot == (mapped ? EDGEGUARD_BOT_VERIFIED : EDGEGUARD_BOT_FAKE), "address %zu", i);
    }

    /* Hostile Cookie headers: never a clearance, never a crash. */
    size_t big = 64 * 1024;
    char *junk = xmalloc(big + 1);
    for (size_t i = 0; i < big; i++)
        junk[i] = (char)(1 + (i * 7919) % 255);
    junk[big] = 0;
    char token100[128]; /* a token's length (104), not a token */
    memset(token100, 'A', 104);
    token100[104] = 0;
    char garbage_token[160];
    snprintf(garbage_token, sizeof garbage_token, "edgeguard_clearance=%s", token100);
    char *many = xmalloc(40 * 1000 + 1);
    many[0] = 0;
    for (int i = 0; i < 1000; i++)
        strcat(many, "edgeguard_clearance=x;");
    const char *cookies[] = {"edgeguard_clearance", "edgeguard_clearance=", "edgeguard_clearance=\"",
                             "=;=;;;==", "edgeguard_clearance=\"\"", garbage_token, junk, many};
    for (size_t i = 0; i < sizeof cookies / sizeof *cookies; i++) {
        edgeguard_header ch[] = {hdr("User-Agent", googlebot), hdr("Accept", "text/html"), hdr("Cookie", cookies[i])};
        edgeguard_request r = request_of("GET", "/", ch, 3);
        CHECK_CODE(run_from(p, NULL, r, fake_addr, now, sc, &d), EDGEGUARD_RESULT_OK, "hostile cookie");
        CHECK(d.clearance != EDGEGUARD_CLEARANCE_ACCEPTED && d.action == EDGEGUARD_OUTCOME_CHALLENGE,
              "hostile cookie %zu: clearance %d", i, (int)d.clearance);
    }
    /* A NUL inside the value is a byte like any other (lengths, not NULs). */
    edgeguard_header nul[] = {hdr("User-Agent", googlebot), hdr("Cookie", "edgeguard_clearance=")};
    uint8_t with_nul[] = "edgeguard_clearance=\0AAAA";
    nul[1].value = str_of((const char *)with_nul, sizeof with_nul - 1);
    edgeguard_request rn = request_of("GET", "/", nul, 2);
    CHECK_CODE(run_from(p, NULL, rn, fake_addr, now, sc, &d), EDGEGUARD_RESULT_OK, "nul");
    CHECK(d.clearance == EDGEGUARD_CLEARANCE_MALFORMED, "nul: %d", (int)d.clearance);

    /* The page, then an answer (difficulty 0: any counter), then the cookie. */
    CHECK_CODE(run_from(p, NULL, req, fake_addr, now, sc, &d), EDGEGUARD_RESULT_OK, "page");
    static char page[65536];
    size_t page_len = d.body.len > 0 ? (size_t)d.body.len : 0;
    CHECK(page_len > 1000 && page_len < sizeof page, "page of %zu bytes", page_len);
    memcpy(page, d.body.data, page_len < sizeof page ? page_len : 0);
    const edgeguard_str *ct = response_header(&d, "Content-Type");
    CHECK(ct && ct->len == 24 && memcmp(ct->data, "text/html; charset=utf-8", 24) == 0 &&
              response_header(&d, "Cache-Control") != NULL, "the page's headers");
    const char *at = memmem(page, page_len, "{\"n\":\"", 6);
    CHECK(at != NULL, "the page's nonce");
    char uri[512];
    snprintf(uri, sizeof uri, "/.edgeguard/challenge?n=%.104s&c=0&r=%%2Fback%%3Fq%%3D1", at ? at + 6 : "");
    edgeguard_request ar = request_of("GET", uri, gh, 2);
    edgeguard_tls_info no_fingerprint;
    memset(&no_fingerprint, 0, sizeof no_fingerprint);
    ar.tls = &no_fingerprint; /* a TLS connection: the cookie is Secure */
    CHECK_CODE(run_from(p, cm, ar, fake_addr, now, sc, &d), EDGEGUARD_RESULT_OK, "answer");
    CHECK(d.action == EDGEGUARD_OUTCOME_ANSWER && d.exit == EDGEGUARD_EXIT_REDIRECT && d.status == 303,
          "answer action %d exit %d", (int)d.action, (int)d.exit);
    const edgeguard_str *set_cookie = response_header(&d, "Set-Cookie");
    /* Through the return hop, which counts the attempt. */
    CHECK(d.location.len > 40 && memcmp(d.location.data, "/.edgeguard/challenge?a=", 24) == 0 &&
              memmem(d.location.data, (size_t)d.location.len, "&r=%2Fback%3Fq%3D1", 18) != NULL &&
              set_cookie != NULL && set_cookie->len > 120,
          "answer: location %.*s", d.location.len, (const char *)d.location.data);
    if (!set_cookie)
        return;
    CHECK(memmem(set_cookie->data, (size_t)set_cookie->len, "SameSite=None; Secure", 21) != NULL &&
              memmem(set_cookie->data, (size_t)set_cookie->len, "HttpOnly", 8),
          "attributes: %.*s", set_cookie->len, (const char *)set_cookie->data);
    /* The cookie clears the fake claim it was minted for (same UA, same /24). */
    char cookie_hdr[256];
    int pair = 0;
    while (pair < set_cookie->len && set_cookie->data[pair] != ';')
        pair++;
    snprintf(cookie_hdr, sizeof cookie_hdr, "other=1; %.*s", pair, (const char *)set_cookie->data);
    edgeguard_header kh[] = {hdr("User-Agent", googlebot), hdr("Accept", "text/html"), hdr("Cookie", cookie_hdr)};
    edgeguard_request kr = request_of("GET", "/", kh, 3);
    CHECK_CODE(run_from(p, NULL, kr, fake_addr, now + 60, sc, &d), EDGEGUARD_RESULT_OK, "cleared");
    CHECK(d.action == EDGEGUARD_OUTCOME_CLEARED && d.clearance == EDGEGUARD_CLEARANCE_ACCEPTED, "cleared: %d %d",
          (int)d.action, (int)d.clearance);
    CHECK_CODE(run_from(p, NULL, kr, fake_addr, now + 86400 * 2, sc, &d), EDGEGUARD_RESULT_OK, "expired");
    CHECK(d.clearance == EDGEGUARD_CLEARANCE_EXPIRED, "expired: %d", (int)d.clearance);

    /* Starts without a token (a problem document's `clear`): the page,
     * returning on the site whatever they ask. */
    const char *starts[] = {"/.edgeguard/challenge", "/.edgeguard/challenge?", "/.edgeguard/challenge?&&&&&=&==",
                            "/.edgeguard/challenge?r=https%3A%2F%2Fevil.example%2F", "/.edgeguard/challenge?a=x&r=%00"};
    for (size_t i = 0; i < sizeof starts / sizeof *starts; i++) {
        edgeguard_request hr = request_of("GET", starts[i], gh, 2);
        CHECK_CODE(run_from(p, cm, hr, fake_addr, now, sc, &d), EDGEGUARD_RESULT_OK, starts[i]);
        CHECK(d.action == EDGEGUARD_OUTCOME_CHALLENGE && d.exit == EDGEGUARD_EXIT_BODY && d.status == 403 &&
                  d.body.len > 1000 && memmem(d.body.data, (size_t)d.body.len, "evil.example", 12) == NULL,
              "%s: %d", starts[i], (int)d.exit);
    }
    /* Hostile request ids: left out of the page and the problem document
     * (odd or over 64 bytes), never a crash. */
    const char *ids[] = {"\"><script>alert(1)</script>", junk, "\\u0000", "0123456789abcdef0123456789abcdef"};
    edgeguard_header fh[] = {hdr("User-Agent", googlebot), hdr("Accept", "application/json"),
                             hdr("Sec-Fetch-Mode", "cors")};
    for (size_t i = 0; i < sizeof ids / sizeof *ids; i++) {
        for (int fetch = 0; fetch < 2; fetch++) {
            edgeguard_request ir = fetch ? request_of("POST", "/api", fh, 3) : req;
            ir.request_id = str_of(ids[i], strlen(ids[i]));
            CHECK_CODE(run_from(p, NULL, ir, fake_addr, now, sc, &d), EDGEGUARD_RESULT_OK, "request id");
            CHECK(d.exit == EDGEGUARD_EXIT_BODY && d.body.len > 100 &&
                      memmem(d.body.data, (size_t)d.body.len, "<script>alert", 13) == NULL &&
                      (i != 3) == (memmem(d.body.data, (size_t)d.body.len, ids[3], 32) == NULL),
                  "request id %zu fetch %d", i, fetch);
            const edgeguard_str *t = response_header(&d, "Content-Type");
            CHECK(t && (fetch ? t->len == 24 && memcmp(t->data, "application/problem+json", 24) == 0
                              : t->len == 24 && memcmp(t->data, "text/html; charset=utf-8", 24) == 0),
                  "request id %zu fetch %d: type", i, fetch);
        }
    }
    /* Hostile answers: refused with a reason, no cookie, no redirect. */
    const char *answers[] = {
        "/.edgeguard/challenge?n=&c=&r=", "/.edgeguard/challenge?n=%zz&c=0",
        "/.edgeguard/challenge?c=99999999999999999999999999&n=x",
    };
    for (size_t i = 0; i < sizeof answers / sizeof *answers; i++) {
        edgeguard_request hr = request_of("GET", answers[i], gh, 2);
        CHECK_CODE(run_from(p, cm, hr, fake_addr, now, sc, &d), EDGEGUARD_RESULT_OK, answers[i]);
        CHECK(d.action == EDGEGUARD_OUTCOME_ANSWER && d.exit == EDGEGUARD_EXIT_STATUS && d.status == 403 &&
                  d.response_headers_len == 0 && d.location.len == 0 && d.line.len > 0 &&
                  memmem(d.line.data, (size_t)d.line.len, "reason=malformed", 16) != NULL,
              "%s: %d", answers[i], (int)d.exit);
    }
    /* A long URI of junk: refused, no overrun. */
    char *long_uri = xmalloc(big + 64);
    snprintf(long_uri, big + 64, "/.edgeguard/challenge?n=%s", junk + 1000);
    edgeguard_request lr = request_of("GET", long_uri, gh, 2);
    CHECK_CODE(run_from(p, cm, lr, fake_addr, now, sc, &d), EDGEGUARD_RESULT_OK, "junk uri");
    CHECK(d.exit != EDGEGUARD_EXIT_REDIRECT, "junk uri refused");

    /* A location without a challenge has no endpoint: proxied. */
    edgeguard_location *plain = challenge_location("{\"mode\": \"block\"}", err, sizeof err);
    CHECK_CODE(run_from(plain, cm, ar, fake_addr, now, sc, &d), EDGEGUARD_RESULT_OK, "endpoint without a challenge");
    CHECK(d.action == EDGEGUARD_OUTCOME_PASS && d.status == 0 && d.exit == EDGEGUARD_EXIT_CONTINUE,
          "endpoint proxied: %d", (int)d.action);
    edgeguard_location_free(plain);
    /* One solved; three hostile answers and the junk URI failed, all as
     * malformed; the five starts served the page. */
    CHECK(metrics_text_has(cm, "edgeguard_challenges_total{result=\"solved\"} 1\n",
                           "edgeguard_challenges_total{result=\"failed\"} 4\n",
                           "edgeguard_challenges_total{result=\"served\"} 5\n",
                           "edgeguard_challenge_failures_total{reason=\"malformed\"} 4\n", NULL),
          "answers counted");
    edgeguard_metrics_free(cm);
    free(long_uri);
    free(junk);
    free(many);
    edgeguard_scratch_free(sc);
    edgeguard_location_free(p);
}

/* TLS facts handed to the scorer (edgeguard_request.tls): fingerprints of
 * hostile ClientHellos score; a fingerprint whose JA4 is not one is refused
 * and nothing is written; `present` = 0 is no fingerprint, whatever the
 * rest holds. */
static void test_score_with_tls_hostile(void) {
    edgeguard_scorer *s = shipped_scorer();
    char err[256];
    double out[2], plain[2], again[2];
    edgeguard_header h[2] = {{str_of("host", 4), str_of("x", 1)},
                             {str_of("user-agent", 10), str_of("python-requests/2.34.2", 22)}};
    edgeguard_request req = request_of("GET", "/", h, 2);
    CHECK_CODE(edgeguard_scorer_score(s, &req, plain, 2), EDGEGUARD_RESULT_OK, "score: no TLS");

    /* Thousands of ciphers, hundreds of extensions, none of either (JA4's
     * empty-list hash, 000000000000). */
    size_t shapes[][2] = {{15, 10}, {4000, 300}, {32767, 0}, {1, 0}, {0, 0}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        size_t n;
        uint8_t *hello = client_hello(shapes[i][0], shapes[i][1], 0x0100, &n);
        edgeguard_tls_info info;
        edgeguard_result r = edgeguard_tls_parse(hello + 5, n - 5, &info, err, sizeof err);
        free(hello);
        CHECK_CODE(r, EDGEGUARD_RESULT_OK, "tls_parse: a shape");
        req.tls = &info;
        out[0] = out[1] = -7;
        CHECK_CODE(edgeguard_scorer_score(s, &req, out, 2), EDGEGUARD_RESULT_OK, "score: a shape");
        CHECK(scores_ok(out), "scores of shape %zu: %g %g", i, out[0], out[1]);
        CHECK_CODE(edgeguard_scorer_score(s, &req, again, 2), EDGEGUARD_RESULT_OK, "score again");
        CHECK(memcmp(out, again, sizeof out) == 0, "the same facts, the same scores");
        /* present = 0: no facts, whatever else it holds. */
        info.present = 0;
        CHECK_CODE(edgeguard_scorer_score(s, &req, out, 2), EDGEGUARD_RESULT_OK, "score: absent");
        CHECK(memcmp(out, plain, sizeof out) == 0, "absent TLS scores as none");
    }

    /* Bytes that are not a JA4: refused, output untouched. */
    edgeguard_tls_info bad;
    memset(&bad, 0, sizeof bad);
    bad.present = 1;
    const char *ja4s[] = {"t13d1516h2_8daaf6152771_e5627efa2ab", /* 35 + NUL */
                          "T13D1516H2_8DAAF6152771_E5627EFA2AB1", "t13d15x6h2_8daaf6152771_e5627efa2ab1",
                          "t13d1516h2-8daaf6152771-e5627efa2ab1"};
    for (size_t i = 0; i < sizeof ja4s / sizeof ja4s[0]; i++) {
        memcpy(bad.ja4, ja4s[i], 36);
        req.tls = &bad;
        out[0] = out[1] = -7;
        CHECK_CODE(edgeguard_scorer_score(s, &req, out, 2), EDGEGUARD_RESULT_INVALID_ARGUMENT, "score: not a JA4");
        CHECK(out[0] == -7 && out[1] == -7, "nothing written for ja4 %zu", i);
    }
    memset(bad.ja4, 0xff, 36);
    CHECK_CODE(edgeguard_scorer_score(s, &req, out, 2), EDGEGUARD_RESULT_INVALID_ARGUMENT, "score: ja4 0xff");
    /* A family number out of range is the unknown family. */
    memcpy(bad.ja4, "t13d1516h2_8daaf6152771_e5627efa2ab1", 36);
    bad.family = 200;
    CHECK_CODE(edgeguard_scorer_score(s, &req, out, 2), EDGEGUARD_RESULT_OK, "score: family 200");
    bad.family = 0;
    CHECK_CODE(edgeguard_scorer_score(s, &req, again, 2), EDGEGUARD_RESULT_OK, "score: family 0");
    CHECK(memcmp(out, again, sizeof out) == 0, "family 200 is unknown");
    edgeguard_scorer_free(s);
}

/* ------------------------------------------------------ headers_record */

/* The text edgeguard_headers_record must write, by a second encoder written
 * apart from it: `"` and `\` backslashed, bytes below 0x20 as \u00xx, every
 * other byte as it is. Returns the length; writes to out when it is not NULL. */
static size_t reference_record(const edgeguard_header *h, size_t n, uint8_t *out) {
    size_t pos = 0;
#define PUT(c) do { if (out) out[pos] = (uint8_t)(c); pos++; } while (0)
    PUT('[');
    for (size_t i = 0; i < n; i++) {
        if (i > 0) PUT(',');
        PUT('[');
        for (int part = 0; part < 2; part++) {
            const edgeguard_str *s = part ? &h[i].value : &h[i].key;
            if (part) PUT(',');
            PUT('"');
            for (int j = 0; s->data && j < s->len; j++) {
                uint8_t c = s->data[j];
                if (c == '"' || c == '\\') {
                    PUT('\\');
                    PUT(c);
                } else if (c < 0x20) {
                    PUT('\\'); PUT('u'); PUT('0'); PUT('0');
                    PUT("0123456789abcdef"[c >> 4]);
                    PUT("0123456789abcdef"[c & 15]);
                } else {
                    PUT(c);
                }
            }
            PUT('"');
        }
        PUT(']');
    }
    PUT(']');
#undef PUT
    return pos;
}

/* edgeguard_config_record: nulls refused with nothing written; the default
 * (null config) and a configured recorder redact; every short cap asks for
 * the length, and an exactly-sized heap buffer (ASan sees past it) fits. */
static void test_config_record(void) {
    edgeguard_header h[3] = {{str_of("Cookie", 6), str_of("sid=s3cr3t; lang=en", 19)},
                             {str_of("Authorization", 13), str_of("Bearer abc.def", 14)},
                             {str_of("X-Api-Key", 9), str_of("k-1", 3)}};
    edgeguard_request req = request_of("GET", "/", h, 3);
    uint8_t buf[256];
    size_t len = 12345;
    CHECK_CODE(edgeguard_config_record(NULL, NULL, buf, sizeof buf, &len), EDGEGUARD_RESULT_NULL_PARAMETER,
               "null request");
    CHECK_CODE(edgeguard_config_record(NULL, &req, buf, sizeof buf, NULL), EDGEGUARD_RESULT_NULL_PARAMETER,
               "null out_len");
    CHECK_CODE(edgeguard_config_record(NULL, &req, NULL, 8, &len), EDGEGUARD_RESULT_NULL_PARAMETER, "null buf");
    CHECK(len == 12345, "nothing written on a null: %zu", len);
    const char want_default[] =
        "[[\"Cookie\",\"sid=[redacted 6]; lang=[redacted 2]\"],[\"Authorization\",\"Bearer [redacted 7]\"],"
        "[\"X-Api-Key\",\"k-1\"]]";
    CHECK_CODE(edgeguard_config_record(NULL, &req, buf, sizeof buf, &len), EDGEGUARD_RESULT_OK, "default");
    CHECK(len == sizeof want_default - 1 && memcmp(buf, want_default, len) == 0, "default: %.*s", (int)len, buf);

    char err[512];
    edgeguard_config *c = NULL;
    CHECK_CODE(config_of("{\"redact\": [\"x-api-key\"]}", &c, err, sizeof err), EDGEGUARD_RESULT_OK, err);
    const char want[] =
        "[[\"Cookie\",\"sid=[redacted 6]; lang=[redacted 2]\"],[\"Authorization\",\"Bearer [redacted 7]\"],"
        "[\"X-Api-Key\",\"[redacted 3]\"]]";
    for (size_t cap = 0; cap < sizeof want - 1; cap += 7) {
        size_t need = 0;
        CHECK_CODE(edgeguard_config_record(c, &req, cap ? buf : NULL, cap, &need), EDGEGUARD_RESULT_BUFFER_TOO_SMALL,
                   "short cap");
        CHECK(need == sizeof want - 1, "cap %zu: need %zu", cap, need);
    }
    uint8_t *exact = malloc(sizeof want - 1);
    CHECK_CODE(edgeguard_config_record(c, &req, exact, sizeof want - 1, &len), EDGEGUARD_RESULT_OK, "exact cap");
    CHECK(len == sizeof want - 1 && memcmp(exact, want, len) == 0, "configured: %.*s", (int)len, exact);
    free(exact);
    edgeguard_config_free(c);
}

/* edgeguard_headers_record: nulls and impossible lengths refused with
 * nothing written; every buffer shorter than the text refused untouched with
 * the length it needs; exactly-sized heap buffers (ASan sees one byte past
 * them) on random headers holding any byte, compared with the reference. */
static void test_headers_record(void) {
    edgeguard_header one = {str_of("Host", 4), str_of("a\"b", 3)};
    uint8_t buf[64];
    size_t len = 12345;
    CHECK_CODE(edgeguard_headers_record(&one, 1, buf, sizeof buf, NULL), EDGEGUARD_RESULT_NULL_PARAMETER,
               "null out_len");
    CHECK_CODE(edgeguard_headers_record(NULL, 1, buf, sizeof buf, &len), EDGEGUARD_RESULT_NULL_PARAMETER,
               "null headers with a length");
    CHECK_CODE(edgeguard_headers_record(&one, 1, NULL, 8, &len), EDGEGUARD_RESULT_NULL_PARAMETER,
               "null buf with a cap");
    CHECK(len == 12345, "nothing written on a null: %zu", len);
    CHECK_CODE(edgeguard_headers_record(&one, SIZE_MAX, buf, sizeof buf, &len), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "headers_len SIZE_MAX");
    CHECK_CODE(edgeguard_headers_record(&one, 1, buf, SIZE_MAX, &len), EDGEGUARD_RESULT_INVALID_ARGUMENT,
               "cap SIZE_MAX");
    CHECK(len == 12345, "nothing written on a bad length: %zu", len);
    CHECK_CODE(edgeguard_headers_record(NULL, 0, buf, sizeof buf, &len), EDGEGUARD_RESULT_OK, "no headers");
    CHECK(len == 2 && memcmp(buf, "[]", 2) == 0, "no headers: %zu", len);

    /* Asking for the length only, then every cap short of it. */
    const char want[] = "[[\"Host\",\"a\\\"b\"]]";
    CHECK_CODE(edgeguard_headers_record(&one, 1, NULL, 0, &len), EDGEGUARD_RESULT_BUFFER_TOO_SMALL, "size query");
    CHECK(len == sizeof want - 1, "needed %zu, want %zu", len, sizeof want - 1);
    for (size_t cap = 0; cap < sizeof want - 1; cap++) {
        memset(buf, 0x5a, sizeof buf);
        size_t need = 0;
        CHECK_CODE(edgeguard_headers_record(&one, 1, buf, cap, &need), EDGEGUARD_RESULT_BUFFER_TOO_SMALL, "short cap");
        CHECK(need == sizeof want - 1 && buf[0] == 0x5a && buf[cap] == 0x5a, "cap %zu: need %zu, untouched", cap,
              need);
    }
    CHECK_CODE(edgeguard_headers_record(&one, 1, buf, sizeof want - 1, &len), EDGEGUARD_RESULT_OK, "exact cap");
    CHECK(len == sizeof want - 1 && memcmp(buf, want, len) == 0, "text %.*s", (int)len, buf);

    /* Null data, negative lengths: empty strings, as every other export reads them. */
    edgeguard_header odd[2] = {{{5, NULL}, {-3, (const uint8_t *)"xyz"}}, {str_of("k", 1), {INT32_MIN, NULL}}};
    CHECK_CODE(edgeguard_headers_record(odd, 2, buf, sizeof buf, &len), EDGEGUARD_RESULT_OK, "odd strings");
    CHECK(len == 18 && memcmp(buf, "[[\"\",\"\"],[\"k\",\"\"]]", 18) == 0, "odd strings: %.*s", (int)len, buf);

    for (int round = 0; round < 300; round++) {
        size_t n = rng() % 40;
        edgeguard_header *h = xmalloc(n * sizeof *h);
        uint8_t *bytes = xmalloc(n * 2 * 64);
        for (size_t i = 0; i < n * 2 * 64; i++) {
            bytes[i] = (uint8_t)(rng() % 3 == 0 ? "\"\\\x00\x1f\x7f\x80\xff"[rng() % 7] : rng());
        }
        for (size_t i = 0; i < n; i++) {
            h[i].key = str_of(bytes + i * 128, rng() % 65);
            h[i].value = str_of(bytes + i * 128 + 64, rng() % 65);
        }
        size_t expect = reference_record(h, n, NULL);
        uint8_t *ref = xmalloc(expect), *got = xmalloc(expect);
        reference_record(h, n, ref);
        size_t need = 0;
        CHECK_CODE(edgeguard_headers_record(h, n, got, expect - 1, &need), EDGEGUARD_RESULT_BUFFER_TOO_SMALL,
                   "random: one byte short");
        CHECK(need == expect, "random: need %zu, want %zu", need, expect);
        CHECK_CODE(edgeguard_headers_record(h, n, got, expect, &len), EDGEGUARD_RESULT_OK, "random");
        CHECK(len == expect && memcmp(got, ref, expect) == 0, "random round %d: text differs", round);
        free(h);
        free(bytes);
        free(ref);
        free(got);
    }
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s FIXTURE_DIR\n", argv[0]);
        return 2;
    }
    fixture_dir = argv[1];
    test_result_text();
    test_process_flag();
    test_header_list_nulls();
    test_header_list_hostile();
    test_errbuf_lengths();
    test_find_internal();
    test_extend_and_find_checked();
    test_model_load_hostile();
    test_predict_hostile();
    snprintf(bot_path, sizeof bot_path, "%s/../../../models/bot.json", fixture_dir);
    snprintf(spoof_path, sizeof spoof_path, "%s/../../../models/spoof.json", fixture_dir);
    test_scorer_new_hostile();
    test_scorer_introspection();
    test_scorer_score_hostile();
    test_config_hostile();
    test_access_hostile();
    test_metrics_hostile();
    test_challenge_hostile();
    test_tls_hostile();
    test_score_with_tls_hostile();
    test_headers_record();
    test_config_record();
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
