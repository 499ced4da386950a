/*
 * Job files (job.h). inih splits the text into sections and key = value
 * pairs; everything here is about checking keys and values and about
 * turning the first problem into "FILE:LINE: problem".
 *
 * inih's handler is not told the line it is called for, but ini_parse_*
 * returns the line of the first failure, whether a syntax error (which never
 * reaches the handler) or a pair the handler refused. The file is therefore
 * parsed twice: once accepting every pair, so that a nonzero result is the
 * first syntax error, and once for real, where the handler records only the
 * first problem it meets and accepts everything after it. A result of the
 * second pass other than the syntax error's line is that problem's line.
 */
#include "job.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <ini.h>

/* A job file is a page of settings; anything far larger is the wrong file. */
#define JOB_MAX_BYTES (1 << 20)
#define JOB_MAX_OPS 8
#define JOB_MAX_SIZE 16

/* ---- small value parsers ------------------------------------------------ */

/* Reads a decimal integer that starts right at s. strtol alone would also
 * accept leading blanks and signs, which in "2x -1" or "max_ops = +3" are
 * typos rather than intentions. Overflow saturates so that the caller's
 * range check rejects it. */
static bool read_digits(const char *s, const char **end, long *v) {
  if (!isdigit((unsigned char)*s)) return false;
  char *e;
  errno = 0;
  long x = strtol(s, &e, 10);
  if (errno == ERANGE) x = LONG_MAX;
  *end = e;
  *v = x;
  return true;
}

static taso_err_t parse_int_range(const char *text, long lo, long hi, int *out) {
  const char *end;
  long v;
  if (!read_digits(text, &end, &v) || *end != '\0' || v < lo || v > hi)
    return taso_error(TASO_ERR_PARSE, "expected an integer from %ld to %ld, got '%s'", lo, hi,
                      text);
  *out = (int)v;
  return TASO_OK;
}

/* ERANGE from strtoull then means exactly "does not fit a uint64_t". */
_Static_assert(sizeof(unsigned long long) == sizeof(uint64_t),
               "seed parsing assumes 64-bit long long");

static taso_err_t parse_seed(const char *text, uint64_t *out) {
  char *end = NULL;
  unsigned long long v = 0;
  errno = 0;
  /* strtoull silently negates "-1"; insisting on a digit first avoids it. */
  if (isdigit((unsigned char)text[0])) v = strtoull(text, &end, 10);
  if (!end || *end != '\0' || errno == ERANGE)
    return taso_error(TASO_ERR_PARSE, "expected an integer from 0 to %llu, got '%s'",
                      (unsigned long long)UINT64_MAX, text);
  *out = (uint64_t)v;
  return TASO_OK;
}

static taso_err_t parse_seconds(const char *text, double *out) {
  char *end;
  errno = 0;
  double v = strtod(text, &end);
  /* !(v > 0) also turns away NaN, which compares false with everything. */
  if (end == text || *end != '\0' || errno == ERANGE || !isfinite(v) || !(v > 0))
    return taso_error(TASO_ERR_PARSE, "expected a number of seconds greater than 0, got '%s'",
                      text);
  *out = v;
  return TASO_OK;
}

/* "2x4x5x5" or "scalar". Unreadable text is a parse error; readable text
 * that no tensor can have (a zero size, rank 5) is a shape error. */
static taso_err_t parse_shape(const char *text, int *rank, int32_t *dim) {
  if (strcmp(text, "scalar") == 0) {
    *rank = 0;
    return TASO_OK;
  }
  const char *p = text;
  int r = 0;
  int64_t elems = 1;
  for (;;) {
    const char *end;
    long v;
    if (!read_digits(p, &end, &v))
      return taso_error(TASO_ERR_PARSE,
                        "shape '%s': expected sizes joined by 'x' (such as 2x4) or 'scalar'", text);
    if (r == TASO_MAX_RANK)
      return taso_error(TASO_ERR_SHAPE, "shape '%s' has more than %d dimensions", text,
                        TASO_MAX_RANK);
    if (v < 1)
      return taso_error(TASO_ERR_SHAPE, "shape '%s': size %ld on axis %d; sizes must be >= 1", text,
                        v, r);
    /* Element counts are int32 further down the pipeline. */
    if (v > INT32_MAX / elems)
      return taso_error(TASO_ERR_SHAPE, "shape '%s' has more than %d elements", text, INT32_MAX);
    elems *= v;
    dim[r++] = (int32_t)v;
    if (*end == '\0') break;
    if (*end != 'x')
      return taso_error(TASO_ERR_PARSE,
                        "shape '%s': expected sizes joined by 'x' (such as 2x4) or 'scalar'", text);
    p = end + 1;
  }
  *rank = r;
  return TASO_OK;
}

taso_err_t taso_parse_sizes(const char *text, int32_t *sizes, int *n) {
  int32_t got[TASO_MAX_SIZES];
  int count = 0;
  const char *p = text;
  /* Blanks around items are allowed because "1, 2, 3" is how people write
   * lists; everything else must be digits and commas. */
  for (;;) {
    while (*p == ' ' || *p == '\t')
      p++;
    const char *end;
    long v;
    if (!read_digits(p, &end, &v))
      return taso_error(TASO_ERR_PARSE, "size list '%s': expected a number at position %d", text,
                        (int)(p - text) + 1);
    if (v < 1 || v > JOB_MAX_SIZE)
      return taso_error(TASO_ERR_PARSE, "size list '%s': size %ld out of range 1..%d", text, v,
                        JOB_MAX_SIZE);
    for (int i = 0; i < count; i++)
      if (got[i] == v)
        return taso_error(TASO_ERR_PARSE, "size list '%s': size %ld listed twice", text, v);
    if (count == TASO_MAX_SIZES)
      return taso_error(TASO_ERR_LIMIT, "size list '%s': more than %d sizes", text, TASO_MAX_SIZES);
    got[count++] = (int32_t)v;
    p = end;
    while (*p == ' ' || *p == '\t')
      p++;
    if (*p == '\0') break;
    if (*p != ',')
      return taso_error(TASO_ERR_PARSE, "size list '%s': expected ',' at position %d", text,
                        (int)(p - text) + 1);
    p++;
  }
  memcpy(sizes, got, sizeof got[0] * count);
  *n = count;
  return TASO_OK;
}

/* ---- key setters -------------------------------------------------------- */

typedef taso_err_t (*setter_t)(taso_job_t *job, const char *value);

static taso_err_t set_name(taso_job_t *job, const char *value) {
  size_t len = strlen(value);
  if (len == 0 || len >= sizeof job->name)
    return taso_error(TASO_ERR_LIMIT, "name must have 1 to %d characters",
                      (int)sizeof job->name - 1);
  /* The name ends up in output file names and shell command lines. */
  for (size_t i = 0; i < len; i++) {
    unsigned char c = (unsigned char)value[i];
    if (!isalnum(c) && c != '_' && c != '-' && c != '.')
      return taso_error(TASO_ERR_PARSE, "name '%s' may hold only letters, digits, '_', '-' and '.'",
                        value);
  }
  memcpy(job->name, value, len + 1);
  return TASO_OK;
}

static taso_err_t set_seed(taso_job_t *job, const char *value) {
  return parse_seed(value, &job->seed);
}

static taso_err_t set_max_ops(taso_job_t *job, const char *value) {
  return parse_int_range(value, 1, JOB_MAX_OPS, &job->max_ops);
}

static taso_err_t set_method(taso_job_t *job, const char *value) {
  if (strcmp(value, "representatives") && strcmp(value, "exhaustive"))
    return taso_error(TASO_ERR_UNKNOWN, "unknown method '%s' (known: representatives, exhaustive)",
                      value);
  snprintf(job->method, sizeof job->method, "%s", value);
  return TASO_OK;
}

/* Input names, checked against [inputs] by the generator (the sections
 * may come in any order). */
static taso_err_t set_weights(taso_job_t *job, const char *value) {
  size_t at = strlen(job->weights);
  if (at + strlen(value) + 2 > sizeof job->weights)
    return taso_error(TASO_ERR_LIMIT, "weights: more than %d characters",
                      (int)sizeof job->weights - 2);
  snprintf(job->weights + at, sizeof job->weights - at, "%s%s", at ? " " : "", value);
  return TASO_OK;
}

static taso_err_t set_identities(taso_job_t *job, const char *value) {
  if (strcmp(value, "skip") && strcmp(value, "keep"))
    return taso_error(TASO_ERR_UNKNOWN, "identities must be skip or keep, not '%s'", value);
  job->keep_identities = !strcmp(value, "keep");
  return TASO_OK;
}

static taso_err_t set_derive_steps(taso_job_t *job, const char *value) {
  return parse_int_range(value, 1, TASO_MAX_DERIVE_STEPS, &job->derive_steps);
}

static taso_err_t set_derive_extra_ops(taso_job_t *job, const char *value) {
  return parse_int_range(value, 0, JOB_MAX_OPS, &job->derive_extra_ops);
}

static taso_err_t set_derive_nodes(taso_job_t *job, const char *value) {
  return parse_int_range(value, 1, 100000000, &job->derive_nodes);
}

static bool same_template(const taso_op_template_t *a, const taso_op_template_t *b) {
  /* Unused parameter fields are zeroed, so memcmp is exact. */
  return a->kind == b->kind && memcmp(&a->p, &b->p, sizeof a->p) == 0;
}

static taso_err_t add_template(taso_job_t *job, const char *text) {
  taso_op_template_t t;
  taso_err_t err = taso_op_template_parse(text, &t.kind, &t.p);
  if (err != TASO_OK) return taso_error_prefix(err, "'%s': ", text);
  if (taso_op_is_model_only(t.kind))
    return taso_error(TASO_ERR_UNKNOWN,
                      "'%s': %s is a model operator, outside the substitution language", text,
                      taso_ops[t.kind].name);
  /* A template listed twice would make the generator enumerate every graph
   * that uses it twice over; "conv2d" and "conv2d(act=none)" count as twice. */
  for (int i = 0; i < job->nops; i++)
    if (same_template(&job->ops[i], &t))
      return taso_error(TASO_ERR_PARSE, "'%s' repeats an operator listed before", text);
  if (job->nops == TASO_MAX_TEMPLATES)
    return taso_error(TASO_ERR_LIMIT, "more than %d operators", TASO_MAX_TEMPLATES);
  job->ops[job->nops++] = t;
  return TASO_OK;
}

/* Called once for the key's line and once per indented continuation line,
 * so each call appends. Templates hold blanks and commas inside their
 * parentheses, so only blanks outside parentheses separate them; a template
 * must therefore close on the line it opens on. */
static taso_err_t set_operators(taso_job_t *job, const char *value) {
  const char *p = value;
  for (;;) {
    while (isspace((unsigned char)*p))
      p++;
    if (*p == '\0') return TASO_OK;
    const char *start = p;
    int depth = 0;
    for (; *p != '\0' && (depth > 0 || !isspace((unsigned char)*p)); p++) {
      if (*p == '(') depth++;
      if (*p == ')' && --depth < 0) break;
    }
    if (depth != 0)
      return taso_error(TASO_ERR_PARSE,
                        "unbalanced parentheses in '%s' (a template must close on its line)",
                        start);
    char buf[INI_MAX_LINE + 1];
    size_t len = (size_t)(p - start);
    if (len >= sizeof buf) /* cannot happen: a line is shorter than inih's buffer */
      return taso_error(TASO_ERR_LIMIT, "operator template longer than %d characters",
                        (int)sizeof buf - 1);
    memcpy(buf, start, len);
    buf[len] = '\0';
    TASO_TRY(add_template(job, buf));
  }
}

static taso_err_t set_axioms(taso_job_t *job, const char *value) {
  size_t len = strlen(value);
  if (len == 0 || len >= sizeof job->axioms)
    return taso_error(TASO_ERR_LIMIT, "path must have 1 to %d characters",
                      (int)sizeof job->axioms - 1);
  memcpy(job->axioms, value, len + 1);
  return TASO_OK;
}

static taso_err_t set_verify_timeout(taso_job_t *job, const char *value) {
  return parse_seconds(value, &job->verify_timeout);
}

static taso_err_t set_sizes(taso_job_t *job, const char *value) {
  return taso_parse_sizes(value, job->sizes, &job->nsizes);
}

static taso_err_t set_validate_timeout(taso_job_t *job, const char *value) {
  return parse_seconds(value, &job->validate_timeout);
}

static taso_err_t set_redundancy_timeout(taso_job_t *job, const char *value) {
  return parse_seconds(value, &job->redundancy_timeout);
}

/* Z3's resource limit per query (0: none) and its memory cap (MiB; 0:
 * none): counts, not seconds, so 0 is allowed. */
static taso_err_t set_verify_rlimit(taso_job_t *job, const char *value) {
  return parse_int_range(value, 0, 2000000000, &job->verify_rlimit);
}

/* 0 (no cap) or at least 256 MiB: under that Z3 cannot even create a
 * context, and every query would fail instead of ending at the cap. */
static taso_err_t parse_memory(const char *value, int *out) {
  TASO_TRY(parse_int_range(value, 0, 1048576, out));
  if (*out > 0 && *out < 256)
    return taso_error(TASO_ERR_PARSE, "expected 0 (no cap) or 256 to 1048576 MiB, got '%s'", value);
  return TASO_OK;
}

static taso_err_t set_verify_memory(taso_job_t *job, const char *value) {
  return parse_memory(value, &job->verify_memory_mb);
}

static taso_err_t set_redundancy_rlimit(taso_job_t *job, const char *value) {
  return parse_int_range(value, 0, 2000000000, &job->redundancy_rlimit);
}

static taso_err_t set_redundancy(taso_job_t *job, const char *value) {
  if (strcmp(value, "on") && strcmp(value, "off"))
    return taso_error(TASO_ERR_PARSE, "redundancy must be on or off, not '%s'", value);
  job->redundancy = !strcmp(value, "on");
  return TASO_OK;
}

static taso_err_t set_validate_memory(taso_job_t *job, const char *value) {
  return parse_memory(value, &job->validate_memory_mb);
}

/* [measure]: model specs hold ':' and ',' but never blanks, so blanks
 * separate them; continuation lines append. */
static taso_err_t set_measure_models(taso_job_t *job, const char *value) {
  size_t have = strlen(job->measure_models), add = strlen(value);
  if (have + add + 2 > sizeof job->measure_models)
    return taso_error(TASO_ERR_LIMIT, "model list longer than %d characters",
                      (int)sizeof job->measure_models - 1);
  if (have && add) job->measure_models[have++] = ' ';
  memcpy(job->measure_models + have, value, add + 1);
  return TASO_OK;
}

static taso_err_t set_measure_warmup(taso_job_t *job, const char *value) {
  return parse_int_range(value, 0, 10000, &job->measure_warmup);
}

static taso_err_t set_measure_min_runs(taso_job_t *job, const char *value) {
  return parse_int_range(value, 1, 100000, &job->measure_min_runs);
}

static taso_err_t set_measure_max_runs(taso_job_t *job, const char *value) {
  return parse_int_range(value, 1, 100000, &job->measure_max_runs);
}

/* A fraction of the median: 0.05 is 5 %. */
static taso_err_t set_measure_spread(taso_job_t *job, const char *value) {
  char *end;
  errno = 0;
  double v = strtod(value, &end);
  if (end == value || *end != '\0' || errno == ERANGE || !(v >= 0 && v <= 10))
    return taso_error(TASO_ERR_PARSE, "expected a fraction of the median from 0 to 10, got '%s'",
                      value);
  job->measure_spread = v;
  return TASO_OK;
}

static taso_err_t set_measure_cores(taso_job_t *job, const char *value) {
  return parse_int_range(value, 0, 65536, &job->measure_cores_per_device);
}

static taso_err_t set_measure_lock_dir(taso_job_t *job, const char *value) {
  size_t len = strlen(value);
  if (len == 0 || len >= sizeof job->measure_lock_dir)
    return taso_error(TASO_ERR_LIMIT, "path must have 1 to %d characters",
                      (int)sizeof job->measure_lock_dir - 1);
  memcpy(job->measure_lock_dir, value, len + 1);
  return TASO_OK;
}

static taso_err_t set_measure_batch(taso_job_t *job, const char *value) {
  return parse_seconds(value, &job->measure_batch_seconds);
}

/* The search algorithms taso-optimize knows; the baseline is the
 * original's. */
static taso_err_t set_search(taso_job_t *job, const char *value) {
  static const char *const known[] = {"backtracking", "parallel", "eqsat"};
  for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
    if (strcmp(value, known[i]) == 0) {
      snprintf(job->search, sizeof job->search, "%s", value);
      return TASO_OK;
    }
  return taso_error(TASO_ERR_UNKNOWN, "unknown search '%s' (known: backtracking, parallel, eqsat)",
                    value);
}

/* Below 1 the search would drop graphs cheaper than the best. */
static taso_err_t set_alpha(taso_job_t *job, const char *value) {
  char *end;
  errno = 0;
  double v = strtod(value, &end);
  if (end == value || *end != '\0' || errno == ERANGE || !isfinite(v) || !(v >= 1.0) || v > 100)
    return taso_error(TASO_ERR_PARSE, "expected a number from 1 to 100, got '%s'", value);
  job->alpha = v;
  return TASO_OK;
}

static taso_err_t set_eqsat_iterations(taso_job_t *job, const char *value) {
  return parse_int_range(value, 1, 10000, &job->eqsat_iterations);
}

static taso_err_t set_eqsat_nodes(taso_job_t *job, const char *value) {
  return parse_int_range(value, 1, 100000000, &job->eqsat_nodes);
}

static taso_err_t set_eqsat_proofs(taso_job_t *job, const char *value) {
  if (strcmp(value, "used") && strcmp(value, "all"))
    return taso_error(TASO_ERR_UNKNOWN, "unknown eqsat_proofs '%s' (known: used, all)", value);
  job->eqsat_prove_all = strcmp(value, "all") == 0;
  return TASO_OK;
}

static taso_err_t set_eqsat_rounds(taso_job_t *job, const char *value) {
  return parse_int_range(value, 1, 100, &job->eqsat_rounds);
}

static taso_err_t set_eqsat_measure(taso_job_t *job, const char *value) {
  if (strcmp(value, "chosen") && strcmp(value, "all"))
    return taso_error(TASO_ERR_UNKNOWN, "unknown eqsat_measure '%s' (known: chosen, all)", value);
  job->eqsat_measure_all = strcmp(value, "all") == 0;
  return TASO_OK;
}

static taso_err_t set_eqsat_exact_seconds(taso_job_t *job, const char *value) {
  return parse_int_range(value, 0, 86400, &job->eqsat_exact_seconds);
}

static taso_err_t set_budget(taso_job_t *job, const char *value) {
  return parse_int_range(value, 0, 1000000000, &job->budget);
}

static taso_err_t set_optimize_time_limit(taso_job_t *job, const char *value) {
  return parse_seconds(value, &job->optimize_time_limit);
}

static taso_err_t set_chain(taso_job_t *job, const char *value) {
  if (strcmp(value, "on") && strcmp(value, "off"))
    return taso_error(TASO_ERR_PARSE, "chain must be on or off, not '%s'", value);
  job->chain = !strcmp(value, "on");
  return TASO_OK;
}

typedef struct {
  const char *section;
  const char *key;
  setter_t set;
  bool appends;    /* continuation lines add to the value instead of repeating it */
  const char *def; /* the value when the file does not set it; NULL: none, or derived */
} key_spec_t;

#define STR2(x) #x
#define STR(x) STR2(x) /* a default macro's value, as text */

static const key_spec_t key_specs[] = {
    {"job", "name", set_name, false, NULL}, /* the file's base name: default_name */
    {"job", "seed", set_seed, false, "1"},
    {"generate", "max_ops", set_max_ops, false, "3"},
    {"generate", "operators", set_operators, true, NULL},
    {"generate", "method", set_method, false, "exhaustive"},
    {"generate", "weights", set_weights, true, NULL}, /* derived: every input */
    {"generate", "identities", set_identities, false, "skip"},
    {"generate", "derive_steps", set_derive_steps, false, STR(TASO_DEFAULT_DERIVE_STEPS)},
    {"generate", "derive_extra_ops", set_derive_extra_ops, false,
     STR(TASO_DEFAULT_DERIVE_EXTRA_OPS)},
    {"generate", "derive_nodes", set_derive_nodes, false, STR(TASO_DEFAULT_DERIVE_NODES)},
    {"verify", "axioms", set_axioms, false, "data/axioms"},
    {"verify", "timeout", set_verify_timeout, false, "5"},
    {"verify", "rlimit", set_verify_rlimit, false, STR(TASO_DEFAULT_VERIFY_RLIMIT)},
    {"verify", "memory_mb", set_verify_memory, false, STR(TASO_DEFAULT_MEMORY_MB)},
    {"validate", "sizes", set_sizes, false, "1,2,3,4"},
    {"validate", "timeout", set_validate_timeout, false, "10"},
    {"validate", "redundancy", set_redundancy, false, "on"},
    {"validate", "redundancy_timeout", set_redundancy_timeout, false, "10"},
    {"validate", "redundancy_rlimit", set_redundancy_rlimit, false,
     STR(TASO_DEFAULT_REDUNDANCY_RLIMIT)},
    {"validate", "memory_mb", set_validate_memory, false, STR(TASO_DEFAULT_MEMORY_MB)},
    {"measure", "models", set_measure_models, true, NULL},
    {"measure", "warmup", set_measure_warmup, false, "3"},
    {"measure", "min_runs", set_measure_min_runs, false, "5"},
    {"measure", "max_runs", set_measure_max_runs, false, "50"},
    {"measure", "spread", set_measure_spread, false, "0.05"},
    {"measure", "cores_per_device", set_measure_cores, false, "0"},
    {"measure", "lock_dir", set_measure_lock_dir, false, NULL}, /* derived: $TMPDIR */
    {"measure", "batch_seconds", set_measure_batch, false, "10"},
    /* the paper's settings (optimizer.md, "Search defaults") */
    {"optimize", "search", set_search, false, "backtracking"},
    {"optimize", "alpha", set_alpha, false, "1.05"},
    {"optimize", "budget", set_budget, false, "1000"},
    {"optimize", "time_limit", set_optimize_time_limit, false, "600"},
    {"optimize", "chain", set_chain, false, "off"}, /* ours: rule chains (search.h) */
    /* equality saturation's bounds: Tensat's (MLSys'21) */
    {"optimize", "eqsat_iterations", set_eqsat_iterations, false, "15"},
    {"optimize", "eqsat_nodes", set_eqsat_nodes, false, "50000"},
    /* ours: the exact extraction's time (seconds, 0: none) */
    {"optimize", "eqsat_exact_seconds", set_eqsat_exact_seconds, false, "0"},
    {"optimize", "eqsat_proofs", set_eqsat_proofs, false, "used"},
    {"optimize", "eqsat_measure", set_eqsat_measure, false, "chosen"},
    {"optimize", "eqsat_rounds", set_eqsat_rounds, false, "3"},
};
_Static_assert(sizeof key_specs / sizeof key_specs[0] <= 64, "taso_job_t.given has 64 bits");
#define NKEYS ((int)(sizeof key_specs / sizeof key_specs[0]))

bool taso_job_given(const taso_job_t *job, const char *section, const char *key) {
  for (int i = 0; i < NKEYS; i++)
    if (!strcmp(key_specs[i].section, section) && !strcmp(key_specs[i].key, key))
      return job->given & ((uint64_t)1 << i);
  return false;
}

/* ---- the inih handler --------------------------------------------------- */

typedef struct {
  taso_job_t *job;
  uint64_t seen;  /* key_specs entries already given, one bit each */
  taso_err_t err; /* the first problem; TASO_OK while there is none */
  char msg[768];  /* its message, without the FILE:LINE prefix */
} load_state_t;

static bool is_identifier(const char *s) {
  if (!isalpha((unsigned char)s[0])) return false;
  for (; *s; s++)
    if (!isalnum((unsigned char)*s) && *s != '_') return false;
  return true;
}

static taso_err_t add_input(taso_job_t *job, const char *name, const char *value) {
  /* Graph text refers to inputs by name, so names must read as words. */
  if (!is_identifier(name))
    return taso_error(TASO_ERR_PARSE,
                      "input name '%s' must be a letter followed by letters, digits or '_'", name);
  if (taso_inputs_find(&job->inputs, name) >= 0)
    return taso_error(TASO_ERR_PARSE,
                      "input '%s' defined twice (an indented line continues the line above)", name);
  int rank = 0;
  int32_t dim[TASO_MAX_RANK] = {0};
  TASO_TRY(parse_shape(value, &rank, dim));
  taso_err_t err = taso_inputs_add(&job->inputs, name, rank, dim);
  /* What taso_inputs_add calls a bad argument (an operator's name, an
   * overlong name) is, coming from a file, a bad value in that file. */
  if (err == TASO_ERR_ARG) err = TASO_ERR_PARSE;
  return err;
}

static taso_err_t apply_pair(load_state_t *st, const char *section, const char *key,
                             const char *value) {
  if (section[0] == '\0')
    return taso_error(TASO_ERR_PARSE, "key '%s' comes before any [section]", key);
  if (strcmp(section, "inputs") == 0) {
    taso_err_t err = add_input(st->job, key, value);
    return err == TASO_OK ? err : taso_error_prefix(err, "[inputs] %s: ", key);
  }
  bool known_section = false;
  for (int i = 0; i < NKEYS; i++) {
    const key_spec_t *ks = &key_specs[i];
    if (strcmp(ks->section, section) != 0) continue;
    known_section = true;
    if (strcmp(ks->key, key) != 0) continue;
    if (!ks->appends) {
      if (st->seen & ((uint64_t)1 << i))
        return taso_error(TASO_ERR_PARSE,
                          "second value for '%s' in section [%s] (an indented line continues "
                          "the line above)",
                          key, section);
      st->seen |= (uint64_t)1 << i;
    }
    taso_err_t err = ks->set(st->job, value);
    if (err != TASO_OK) return taso_error_prefix(err, "[%s] %s: ", section, key);
    st->job->given |= (uint64_t)1 << i;
    return TASO_OK;
  }
  /* inih calls the handler only for pairs, so an unknown section is noticed
   * at its first key, and an empty one not at all (it does no harm). */
  if (!known_section)
    return taso_error(TASO_ERR_UNKNOWN, "unknown section [%s] (key '%s')", section, key);
  return taso_error(TASO_ERR_UNKNOWN, "unknown key '%s' in section [%s]", key, section);
}

static int on_pair(void *user, const char *section, const char *key, const char *value) {
  load_state_t *st = user;
  if (st->err != TASO_OK) return 1; /* keep inih's line pointing at the first problem */
  taso_err_t err = apply_pair(st, section, key, value);
  if (err == TASO_OK) return 1;
  st->err = err;
  snprintf(st->msg, sizeof st->msg, "%s", taso_error_detail());
  return 0;
}

static int accept_pair(void *user, const char *section, const char *key, const char *value) {
  (void)user, (void)section, (void)key, (void)value;
  return 1;
}

/* ---- loading ------------------------------------------------------------ */

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *d = malloc(n);
  if (d) memcpy(d, s, n);
  return d;
}

static taso_err_t read_text(const char *path, char **out, size_t *out_len) {
  FILE *f = fopen(path, "rb");
  if (!f) return taso_error(TASO_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
  size_t cap = 4096, len = 0;
  char *buf = malloc(cap);
  if (!buf) {
    fclose(f);
    return taso_error(TASO_ERR_NOMEM, "%s: reading", path);
  }
  for (;;) {
    if (len + 1 == cap) {
      if (cap >= JOB_MAX_BYTES) {
        free(buf);
        fclose(f);
        return taso_error(TASO_ERR_LIMIT, "%s: larger than %d bytes; not a job file", path,
                          JOB_MAX_BYTES);
      }
      char *bigger = realloc(buf, cap * 2);
      if (!bigger) {
        free(buf);
        fclose(f);
        return taso_error(TASO_ERR_NOMEM, "%s: reading", path);
      }
      buf = bigger;
      cap *= 2;
    }
    size_t got = fread(buf + len, 1, cap - 1 - len, f);
    len += got;
    if (got == 0) break;
  }
  if (ferror(f)) {
    int e = errno;
    free(buf);
    fclose(f);
    return taso_error(TASO_ERR_IO, "%s: cannot read: %s", path, strerror(e));
  }
  fclose(f);
  buf[len] = '\0';
  *out = buf;
  *out_len = len;
  return TASO_OK;
}

/* Lines inih cannot hold whole it silently cuts short (keeping the line
 * count right), which would drop operators without a word; NUL bytes would
 * end the text early. Both are caught here, before inih sees the text. */
static taso_err_t check_lines(const char *path, const char *text, size_t len) {
  const size_t max = INI_MAX_LINE - 3; /* inih's room for "\r\n\0" */
  size_t start = 0;
  int line = 1;
  for (size_t i = 0; i <= len; i++) {
    if (i < len && text[i] == '\0')
      return taso_error(TASO_ERR_PARSE, "%s:%d: NUL byte; not a text file", path, line);
    if (i < len && text[i] != '\n') continue;
    size_t n = i - start;
    if (n > 0 && text[i - 1] == '\r') n--;
    if (n > max)
      return taso_error(TASO_ERR_PARSE,
                        "%s:%d: line of %zu characters; at most %zu fit (continue a long "
                        "value on indented lines)",
                        path, line, n, max);
    start = i + 1;
    line++;
  }
  return TASO_OK;
}

/* inih reports two kinds of syntax error; the line's first character says
 * which one it was. */
static taso_err_t syntax_error(const char *path, const char *text, int line) {
  const char *p = text;
  for (int l = 1; l < line && *p; l++) {
    p = strchr(p, '\n');
    if (!p) break;
    p++;
  }
  if (!p) p = "";
  while (*p == ' ' || *p == '\t')
    p++;
  int n = (int)strcspn(p, "\r\n");
  if (n > 40) n = 40;
  if (*p == '[')
    return taso_error(TASO_ERR_PARSE, "%s:%d: section header '%.*s' has no closing ']'", path, line,
                      n, p);
  return taso_error(TASO_ERR_PARSE,
                    "%s:%d: expected 'key = value', '[section]' or a comment, got '%.*s'", path,
                    line, n, p);
}

/* The default name is the file's base name without ".ini", so that a job
 * file without [job] name still gives distinct output names. */
static void default_name(taso_job_t *job, const char *path) {
  const char *base = strrchr(path, '/');
  base = base ? base + 1 : path;
  size_t len = strlen(base);
  if (len > 4 && strcmp(base + len - 4, ".ini") == 0) len -= 4;
  if (len >= sizeof job->name) len = sizeof job->name - 1;
  memcpy(job->name, base, len);
  job->name[len] = '\0';
}

/* Each default goes through its key's own parser, so the table above is
 * the one place that states it. */
static void set_defaults(taso_job_t *job, const char *path) {
  default_name(job, path);
  for (int i = 0; i < NKEYS; i++)
    if (key_specs[i].def && key_specs[i].set(job, key_specs[i].def) != TASO_OK)
      taso_fatal(__FILE__, __LINE__, "taso", "a default in job.c's key table does not parse");
}

int taso_job_defaults(const taso_job_t *job, const char *section, const char *const *skip,
                      char *buf, size_t len) {
  int n = 0;
  size_t at = strlen(buf);
  for (int i = 0; i < NKEYS; i++) {
    const key_spec_t *ks = &key_specs[i];
    if (!ks->def || strcmp(ks->section, section) || (job->given & ((uint64_t)1 << i))) continue;
    bool skipped = false;
    for (int k = 0; skip && skip[k]; k++)
      skipped = skipped || !strcmp(skip[k], ks->key);
    if (skipped) continue;
    int w = snprintf(buf + at, at < len ? len - at : 0, "%s[%s] %s = %s", at ? ", " : "", section,
                     ks->key, ks->def);
    if (w > 0) at += (size_t)w;
    n++;
  }
  if (at >= len && len > 0) buf[len - 1] = '\0';
  return n;
}

/* Parses job->text (len bytes), read from path or recorded as path's. */
static taso_err_t parse_job(const char *path, taso_job_t *job, size_t len);

taso_err_t taso_job_load(const char *path, taso_job_t *job) {
  taso_err_t err;
  size_t len = 0;
  memset(job, 0, sizeof *job);
  set_defaults(job, path);
  job->path = dup_string(path);
  if (!job->path) {
    err = taso_error(TASO_ERR_NOMEM, "%s: loading", path);
    goto fail;
  }
  err = read_text(path, &job->text, &len);
  if (err != TASO_OK) goto fail;
  return parse_job(path, job, len);
fail:
  taso_job_free(job);
  return err;
}

taso_err_t taso_job_parse(const char *path, const char *text, taso_job_t *job) {
  memset(job, 0, sizeof *job);
  set_defaults(job, path);
  job->path = dup_string(path);
  job->text = dup_string(text);
  if (!job->path || !job->text) {
    taso_job_free(job);
    return taso_error(TASO_ERR_NOMEM, "%s: loading", path);
  }
  return parse_job(path, job, strlen(text));
}

static taso_err_t parse_job(const char *path, taso_job_t *job, size_t len) {
  taso_err_t err;
  int line, syntax_line;
  load_state_t st = {.job = job, .err = TASO_OK};
  err = check_lines(path, job->text, len);
  if (err != TASO_OK) goto fail;

  syntax_line = ini_parse_string(job->text, accept_pair, NULL);
  line = syntax_line < 0 ? syntax_line : ini_parse_string(job->text, on_pair, &st);
  if (line < 0) { /* parsing a string fails only for want of memory */
    err = taso_error(TASO_ERR_NOMEM, "%s: parsing", path);
    goto fail;
  }
  /* inih returns the earlier of the first syntax error and the first
   * refused pair; whichever it is, that is the problem to report. */
  if (syntax_line > 0 && line == syntax_line) {
    err = syntax_error(path, job->text, line);
    goto fail;
  }
  if (st.err != TASO_OK) {
    err = taso_error(st.err, "%s:%d: %s", path, line, st.msg);
    goto fail;
  }
  return TASO_OK;

fail:
  taso_job_free(job);
  return err;
}

void taso_job_free(taso_job_t *job) {
  free(job->path);
  free(job->text);
  taso_inputs_free(&job->inputs);
  memset(job, 0, sizeof *job);
}
