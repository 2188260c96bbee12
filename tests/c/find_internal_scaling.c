/*
 * Times edgeguard_header_set_find_internal on one request of N headers that
 * are all internal and all distinct (list: one prefix rule `x-p-*`, request:
 * x-p-0, x-p-1, ...). The de-duplication of names to clear compares each new
 * internal name with every earlier one, so this is the worst case a client
 * can send. Not a pass/fail test: it prints the time so growth can be seen.
 *
 *   clang -O2 -I include tests/c/find_internal_scaling.c -o /tmp/scaling \
 *       -L target/release -Wl,-rpath,$PWD/target/release -ledgeguard
 *   for n in 100 1000 4000 10000; do /tmp/scaling $n; done
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "edgeguard.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s N_HEADERS\n", argv[0]);
        return 2;
    }
    size_t n = (size_t)strtoul(argv[1], NULL, 10);
    const char list[] = "x-p-*\n";
    edgeguard_header_set *set = NULL;
    if (edgeguard_header_set_new_from_buffer((const uint8_t *)list, sizeof list - 1, NULL, &set, NULL, 0))
        return 1;
    char(*names)[24] = malloc(n * sizeof *names);
    edgeguard_header *headers = malloc(n * sizeof *headers);
    uint32_t *clear = malloc(n * sizeof *clear);
    if (!names || !headers || !clear)
        return 1;
    for (size_t i = 0; i < n; i++) {
        int len = snprintf(names[i], sizeof names[i], "x-p-%zu", i);
        headers[i].key = (edgeguard_str){len, (const uint8_t *)names[i]};
        headers[i].value = (edgeguard_str){0, NULL};
    }
    size_t distinct = 0, matched = 0;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    edgeguard_result r = edgeguard_header_set_find_internal(set, headers, n, clear, n, &distinct, &matched);
    clock_gettime(CLOCK_MONOTONIC, &b);
    printf("%zu headers: result %d, %zu distinct, %.3f ms\n", n, (int)r, distinct,
           (double)(b.tv_sec - a.tv_sec) * 1e3 + (double)(b.tv_nsec - a.tv_nsec) / 1e6);
    free(clear);
    free(headers);
    free(names);
    edgeguard_header_set_free(set);
    return r == EDGEGUARD_RESULT_OK ? 0 : 1;
}
