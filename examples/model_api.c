/*
 * The model C API (edgeguard_model_*): one CatBoost JSON model, scored
 * without the request scorer, from C. docs/c-api.md shows this program;
 * scripts/c-abi-test.sh builds and runs it under ASan + UBSan.
 *
 *   model_api MODEL.json     prints the probability of a document whose
 *                            floats are all missing (NaN) and whose
 *                            categorical values are all "curl"
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edgeguard.h"

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: %s MODEL.json\n", argv[0]);
        return 2;
    }
    char err[512];
    edgeguard_model *model = NULL;
    edgeguard_result rc = edgeguard_model_new_from_file(argv[1], &model, err, sizeof err);
    if (rc != EDGEGUARD_RESULT_OK) {
        fprintf(stderr, "%s: %s\n", edgeguard_result_text(rc), err);
        return 1;
    }
    size_t n_floats = edgeguard_model_float_feature_count(model);
    size_t n_cats = edgeguard_model_cat_feature_count(model);
    float *floats = malloc((n_floats ? n_floats : 1) * sizeof *floats);
    int32_t *hashes = malloc((n_cats ? n_cats : 1) * sizeof *hashes);
    for (size_t i = 0; i < n_floats; i++)
        floats[i] = NAN;
    /* Hash each categorical value once; every model takes the same hashes. */
    int32_t curl = edgeguard_cat_hash((const uint8_t *)"curl", strlen("curl"));
    for (size_t i = 0; i < n_cats; i++)
        hashes[i] = curl;

    double p;
    rc = edgeguard_model_predict(model, floats, n_floats, hashes, n_cats,
                                 EDGEGUARD_PREDICTION_TYPE_PROBABILITY, &p, 1);
    if (rc != EDGEGUARD_RESULT_OK) {
        fprintf(stderr, "predict: %s\n", edgeguard_result_text(rc));
    } else {
        printf("%zu floats, %zu categorical: p = %.6f\n", n_floats, n_cats, p);
    }
    free(floats);
    free(hashes);
    edgeguard_model_free(model);
    return rc == EDGEGUARD_RESULT_OK ? 0 : 1;
}
