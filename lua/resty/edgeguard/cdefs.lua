-- The C declarations of include/edgeguard.h, for LuaJIT's ffi.cdef.
--
-- Mirrors the generated header: types and prototypes in the same order, with
-- the comments and preprocessor lines left out. tests/lua/test_cdefs.lua fails
-- when the two differ. Do not edit it by hand: change the Rust source and run
-- `make header`, which regenerates the header and this block (scripts/gen-cdefs.lua).

local ffi = require "ffi"

-- ffi.cdef declarations are global to the LuaJIT VM; a second module (or a
-- second copy of this one) must not declare them again.
if pcall(ffi.typeof, "edgeguard_header_set") then
    return true
end

ffi.cdef[[
typedef enum {

  EDGEGUARD_OUTCOME_PASS = 0,

  EDGEGUARD_OUTCOME_ALLOW = 1,

  EDGEGUARD_OUTCOME_LOG = 2,

  EDGEGUARD_OUTCOME_BLOCK = 3,

  EDGEGUARD_OUTCOME_UNAVAILABLE = 4,

  EDGEGUARD_OUTCOME_ERROR = 5,

  EDGEGUARD_OUTCOME_REFUSED = 6,

  EDGEGUARD_OUTCOME_CLEARED = 7,

  EDGEGUARD_OUTCOME_CHALLENGE = 8,

  EDGEGUARD_OUTCOME_VERIFIED = 9,

  EDGEGUARD_OUTCOME_ANSWER = 10,

  EDGEGUARD_OUTCOME_CHALLENGE_REQUIRED = 11,
} edgeguard_outcome;

typedef enum {

  EDGEGUARD_JOB_ACCESS = 0,

  EDGEGUARD_JOB_STRIP = 1,

  EDGEGUARD_JOB_STRIP_LIST = 2,

  EDGEGUARD_JOB_RECORD = 3,

  EDGEGUARD_JOB_SCORE = 4,
} edgeguard_job;

typedef enum {

  EDGEGUARD_ENGINE_KIND_RUST = 0,

  EDGEGUARD_ENGINE_KIND_LUA = 1,

  EDGEGUARD_ENGINE_KIND_SHADOW = 2,
} edgeguard_engine_kind;

typedef enum {

  EDGEGUARD_DISAGREEMENT_SCORE = 0,

  EDGEGUARD_DISAGREEMENT_DECISION = 1,

  EDGEGUARD_DISAGREEMENT_HEADERS = 2,
} edgeguard_disagreement;

typedef enum {

  EDGEGUARD_PREDICTION_TYPE_RAW = 0,

  EDGEGUARD_PREDICTION_TYPE_PROBABILITY = 1,

  EDGEGUARD_PREDICTION_TYPE_CLASS = 2,
} edgeguard_prediction_type;

static const int EDGEGUARD_ABI_VERSION = 2;

static const int EDGEGUARD_VERSION_MAJOR = 0;

static const int EDGEGUARD_VERSION_MINOR = 1;

static const int EDGEGUARD_VERSION_PATCH = 0;

static const int EDGEGUARD_ERRBUF_LEN = 512;

static const int EDGEGUARD_MAX_MODELS = 64;

static const int EDGEGUARD_MAX_VARS = 84;

static const int EDGEGUARD_DETECTION_COUNT = 24;

static const int EDGEGUARD_MAX_RESPONSE_HEADERS = 5;

static const int EDGEGUARD_JA4_LEN = 36;

static const int EDGEGUARD_ALPN_MAX = 16;

typedef enum {

  EDGEGUARD_RESULT_OK = 0,

  EDGEGUARD_RESULT_NULL_PARAMETER = 1,

  EDGEGUARD_RESULT_PANIC = 2,

  EDGEGUARD_RESULT_INVALID_ARGUMENT = 3,

  EDGEGUARD_RESULT_IO = 4,

  EDGEGUARD_RESULT_HEADER_LIST_INVALID = 5,

  EDGEGUARD_RESULT_MODEL_INVALID = 6,

  EDGEGUARD_RESULT_FEATURE_COUNT = 7,

  EDGEGUARD_RESULT_BUFFER_TOO_SMALL = 8,

  EDGEGUARD_RESULT_CONFIG_INVALID = 9,

  EDGEGUARD_RESULT_TLS_UNAVAILABLE = 10,
} edgeguard_result;

typedef enum {

  EDGEGUARD_EXIT_CONTINUE = 0,

  EDGEGUARD_EXIT_STATUS = 1,

  EDGEGUARD_EXIT_BODY = 2,

  EDGEGUARD_EXIT_REDIRECT = 3,
} edgeguard_exit;

typedef enum {

  EDGEGUARD_BOT_NONE = 0,

  EDGEGUARD_BOT_VERIFIED = 1,

  EDGEGUARD_BOT_FAKE = 2,
} edgeguard_bot;

typedef enum {

  EDGEGUARD_CLEARANCE_ABSENT = 0,

  EDGEGUARD_CLEARANCE_ACCEPTED = 1,

  EDGEGUARD_CLEARANCE_MALFORMED = 2,

  EDGEGUARD_CLEARANCE_MAC = 3,

  EDGEGUARD_CLEARANCE_EXPIRED = 4,

  EDGEGUARD_CLEARANCE_ADDRESS = 5,

  EDGEGUARD_CLEARANCE_USER_AGENT = 6,

  EDGEGUARD_CLEARANCE_WORK = 7,

  EDGEGUARD_CLEARANCE_TLS = 8,

  EDGEGUARD_CLEARANCE_EARLY = 9,

  EDGEGUARD_CLEARANCE_ACCEPTED_WAIT = 10,
} edgeguard_clearance;

typedef enum {

  EDGEGUARD_GRADE_NONE = 0,

  EDGEGUARD_GRADE_AMBIGUOUS = 1,

  EDGEGUARD_GRADE_CERTAIN = 2,
} edgeguard_grade;

typedef enum {

  EDGEGUARD_VALUE_STRING = 0,

  EDGEGUARD_VALUE_NUMBER = 1,

  EDGEGUARD_VALUE_BOOLEAN = 2,

  EDGEGUARD_VALUE_OBJECT = 3,

  EDGEGUARD_VALUE_ARRAY = 4,

  EDGEGUARD_VALUE_OTHER = 5,
} edgeguard_value;

typedef struct edgeguard_config edgeguard_config;

typedef struct edgeguard_engine edgeguard_engine;

typedef struct edgeguard_header_set edgeguard_header_set;

typedef struct edgeguard_location edgeguard_location;

typedef struct edgeguard_metrics edgeguard_metrics;

typedef struct edgeguard_model edgeguard_model;

typedef struct edgeguard_options edgeguard_options;

typedef struct edgeguard_scorer edgeguard_scorer;

typedef struct edgeguard_scratch edgeguard_scratch;

typedef struct {

  int len;

  const uint8_t *data;
} edgeguard_str;

typedef struct {

  edgeguard_str key;

  edgeguard_str value;
} edgeguard_header;

typedef struct {

  uint8_t present;

  uint8_t grease;

  uint8_t family;

  uint8_t alpn_len;

  uint8_t source;

  uint16_t version;

  uint16_t ciphers;

  uint16_t extensions;

  char ja4[EDGEGUARD_JA4_LEN];

  uint8_t alpn[EDGEGUARD_ALPN_MAX];
} edgeguard_tls_info;

typedef struct {

  edgeguard_str method;

  edgeguard_str uri;

  edgeguard_str client_addr;

  int http_version;

  const edgeguard_header *headers;

  size_t headers_len;

  const edgeguard_tls_info *tls;

  edgeguard_str request_id;

  edgeguard_str peer_addr;
} edgeguard_request;

typedef struct {

  const double *scores;

  size_t scores_len;

  size_t removed;

  size_t unremovable;
} edgeguard_given;

typedef edgeguard_header edgeguard_var;

typedef struct {

  edgeguard_outcome action;

  edgeguard_exit exit;

  int32_t status;

  int32_t log_level;

  const uint32_t *clear;

  size_t clear_len;

  size_t matched;

  size_t removed;

  size_t unremovable;

  edgeguard_header set_header;

  edgeguard_str line;

  edgeguard_str body;

  edgeguard_str location;

  edgeguard_header response_headers[EDGEGUARD_MAX_RESPONSE_HEADERS];

  size_t response_headers_len;

  edgeguard_var vars[EDGEGUARD_MAX_VARS];

  size_t vars_len;

  const double *scores;

  size_t scores_len;

  edgeguard_result score_result;

  int32_t model;

  double threshold;

  edgeguard_bot bot;

  edgeguard_clearance clearance;

  edgeguard_str bot_name;

  edgeguard_str warning;

  edgeguard_grade grade;

  uint32_t reasons;

  size_t line_request_id_at;

  size_t body_request_id_at;

  edgeguard_str action_name;
} edgeguard_effects;

uint32_t edgeguard_abi_version(void);

const char *edgeguard_version(void);

const char *edgeguard_result_text(int result);

edgeguard_result edgeguard_config_new(const uint8_t *json,
                                      size_t len,
                                      const char *source_name,
                                      const char *base_dir,
                                      edgeguard_config **out,
                                      char *errbuf,
                                      size_t errbuf_len);

edgeguard_result edgeguard_config_new_for_location(const edgeguard_config *base,
                                                   const uint8_t *json,
                                                   size_t len,
                                                   const char *source_name,
                                                   edgeguard_config **out,
                                                   char *errbuf,
                                                   size_t errbuf_len);

void edgeguard_config_free(edgeguard_config *config);

const char *edgeguard_config_json(const edgeguard_config *config);

edgeguard_result edgeguard_config_start_signals(const edgeguard_config *config);

edgeguard_result edgeguard_options_new(edgeguard_options **out);

void edgeguard_options_free(edgeguard_options *options);

edgeguard_result edgeguard_options_put(edgeguard_options *options,
                                       size_t depth,
                                       const uint8_t *key,
                                       size_t key_len,
                                       int kind,
                                       double number,
                                       const uint8_t *text,
                                       size_t text_len);

edgeguard_result edgeguard_options_json(edgeguard_options *options,
                                        const uint8_t **out,
                                        size_t *out_len,
                                        char *errbuf,
                                        size_t errbuf_len);

edgeguard_result edgeguard_engine_new(edgeguard_options *options,
                                      const char *source_name,
                                      edgeguard_engine **out,
                                      char *errbuf,
                                      size_t errbuf_len);

void edgeguard_engine_free(edgeguard_engine *engine);

const char *edgeguard_engine_report(const edgeguard_engine *engine);

const edgeguard_config *edgeguard_engine_config(const edgeguard_engine *engine);

const edgeguard_location *edgeguard_engine_location(const edgeguard_engine *engine);

const edgeguard_scorer *edgeguard_engine_scorer(const edgeguard_engine *engine);

const edgeguard_header_set *edgeguard_engine_header_set(const edgeguard_engine *engine);

edgeguard_result edgeguard_engine_location_new(const edgeguard_engine *engine,
                                               edgeguard_options *options,
                                               const char *source_name,
                                               edgeguard_location **out,
                                               edgeguard_config **config_out,
                                               char *errbuf,
                                               size_t errbuf_len);

edgeguard_result edgeguard_header_set_new_from_file(const char *path,
                                                    edgeguard_header_set **out,
                                                    char *errbuf,
                                                    size_t errbuf_len);

edgeguard_result edgeguard_header_set_new_from_buffer(const uint8_t *buf,
                                                      size_t len,
                                                      const char *source_name,
                                                      edgeguard_header_set **out,
                                                      char *errbuf,
                                                      size_t errbuf_len);

void edgeguard_header_set_free(edgeguard_header_set *set);

size_t edgeguard_header_set_len(const edgeguard_header_set *set);

edgeguard_result edgeguard_header_set_extend(const edgeguard_header_set *set,
                                             const uint8_t *buf,
                                             size_t len,
                                             const char *source_name,
                                             edgeguard_header_set **out,
                                             char *errbuf,
                                             size_t errbuf_len);

edgeguard_result edgeguard_header_set_find_internal(const edgeguard_header_set *set,
                                                    const edgeguard_header *headers,
                                                    size_t headers_len,
                                                    uint32_t *out_clear,
                                                    size_t out_clear_cap,
                                                    size_t *out_clear_len,
                                                    size_t *out_matched);

edgeguard_result edgeguard_header_set_find_checked(const edgeguard_header_set *set,
                                                   const edgeguard_header *headers,
                                                   size_t headers_len,
                                                   uint32_t *out_clear,
                                                   size_t out_clear_cap,
                                                   size_t *out_clear_len,
                                                   size_t *out_matched,
                                                   size_t *out_unremovable);

edgeguard_result edgeguard_location_new(const edgeguard_config *config,
                                        const edgeguard_scorer *scorer,
                                        const char *const *names,
                                        const double *own_thresholds,
                                        size_t n,
                                        const edgeguard_header_set *headers,
                                        edgeguard_location **out,
                                        char *errbuf,
                                        size_t errbuf_len);

void edgeguard_location_free(edgeguard_location *location);

size_t edgeguard_location_model_count(const edgeguard_location *location);

edgeguard_result edgeguard_scratch_new(edgeguard_scratch **out);

void edgeguard_scratch_free(edgeguard_scratch *scratch);

edgeguard_result edgeguard_location_run(const edgeguard_location *location,
                                        const edgeguard_metrics *metrics,
                                        const edgeguard_request *request,
                                        const edgeguard_given *given,
                                        int job,
                                        int64_t now,
                                        edgeguard_scratch *scratch,
                                        edgeguard_effects *out);

const char *edgeguard_outcome_name(int outcome);

const char *edgeguard_detection_name(size_t index);

const char *edgeguard_clearance_name(int clearance);

edgeguard_result edgeguard_metrics_new(const edgeguard_config *config,
                                       const char *const *rust_models,
                                       size_t n_rust,
                                       const char *const *lua_models,
                                       size_t n_lua,
                                       edgeguard_metrics **out,
                                       char *errbuf,
                                       size_t errbuf_len);

void edgeguard_metrics_free(edgeguard_metrics *metrics);

size_t edgeguard_metrics_len(const edgeguard_metrics *metrics);

edgeguard_result edgeguard_metrics_key(const edgeguard_metrics *metrics,
                                       size_t slot,
                                       edgeguard_str *out);

edgeguard_result edgeguard_metrics_drain(const edgeguard_metrics *metrics,
                                         uint32_t *slots,
                                         double *deltas,
                                         size_t cap,
                                         size_t *out_len);

edgeguard_result edgeguard_metrics_restore(const edgeguard_metrics *metrics,
                                           size_t slot,
                                           double delta);

size_t edgeguard_metrics_text_room(const edgeguard_metrics *metrics);

edgeguard_result edgeguard_metrics_text(const edgeguard_metrics *metrics,
                                        const double *values,
                                        size_t n,
                                        uint8_t *buf,
                                        size_t cap,
                                        size_t *out_len);

edgeguard_result edgeguard_metrics_request(const edgeguard_metrics *metrics,
                                           int engine,
                                           int outcome,
                                           size_t removed,
                                           const edgeguard_effects *out);

edgeguard_result edgeguard_metrics_scores(const edgeguard_metrics *metrics,
                                          int engine,
                                          const double *scores,
                                          size_t n);

edgeguard_result edgeguard_metrics_engine_time(const edgeguard_metrics *metrics,
                                               int engine,
                                               double seconds);

edgeguard_result edgeguard_metrics_disagreement(const edgeguard_metrics *metrics, int kind);

edgeguard_result edgeguard_metrics_load_errors(const edgeguard_metrics *metrics, size_t n);

edgeguard_result edgeguard_model_new_from_file(const char *path,
                                               edgeguard_model **out,
                                               char *errbuf,
                                               size_t errbuf_len);

edgeguard_result edgeguard_model_new_from_buffer(const uint8_t *buf,
                                                 size_t len,
                                                 const char *source_name,
                                                 edgeguard_model **out,
                                                 char *errbuf,
                                                 size_t errbuf_len);

void edgeguard_model_free(edgeguard_model *model);

size_t edgeguard_model_float_feature_count(const edgeguard_model *model);

size_t edgeguard_model_cat_feature_count(const edgeguard_model *model);

size_t edgeguard_model_dimension(const edgeguard_model *model);

edgeguard_result edgeguard_model_predict(const edgeguard_model *model,
                                         const float *floats,
                                         size_t n_floats,
                                         const int32_t *cat_hashes,
                                         size_t n_cats,
                                         int prediction_type,
                                         double *out,
                                         size_t out_len);

edgeguard_result edgeguard_model_predict_strings(const edgeguard_model *model,
                                                 const float *floats,
                                                 size_t n_floats,
                                                 const edgeguard_str *cats,
                                                 size_t n_cats,
                                                 int prediction_type,
                                                 double *out,
                                                 size_t out_len);

int32_t edgeguard_cat_hash(const uint8_t *data, size_t len);

void edgeguard_process_set_models_in_force(int in_force);

int edgeguard_process_models_in_force(void);

edgeguard_result edgeguard_config_record(const edgeguard_config *config,
                                         const edgeguard_request *request,
                                         uint8_t *buf,
                                         size_t cap,
                                         size_t *out_len);

edgeguard_result edgeguard_headers_record(const edgeguard_header *headers,
                                          size_t headers_len,
                                          uint8_t *buf,
                                          size_t cap,
                                          size_t *out_len);

edgeguard_result edgeguard_scorer_new(const char *const *names,
                                      const char *const *paths,
                                      size_t n,
                                      edgeguard_scorer **out,
                                      char *errbuf,
                                      size_t errbuf_len);

void edgeguard_scorer_free(edgeguard_scorer *scorer);

size_t edgeguard_scorer_model_count(const edgeguard_scorer *scorer);

const char *edgeguard_scorer_model_name(const edgeguard_scorer *scorer, size_t i);

double edgeguard_scorer_model_threshold(const edgeguard_scorer *scorer, size_t i);

edgeguard_result edgeguard_scorer_score(const edgeguard_scorer *scorer,
                                        const edgeguard_request *request,
                                        double *out_scores,
                                        size_t n);

edgeguard_result edgeguard_tls_parse(const uint8_t *hello,
                                     size_t hello_len,
                                     edgeguard_tls_info *out,
                                     char *errbuf,
                                     size_t errbuf_len);

edgeguard_result edgeguard_tls_client_hello(void *ssl, char *errbuf, size_t errbuf_len);

edgeguard_result edgeguard_tls_get(const void *ssl, edgeguard_tls_info *out);

const char *edgeguard_tls_family_name(int family);
]]

return true
