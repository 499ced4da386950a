/*
 * taso-show: a text view of any artifact, so that a person can tell what a
 * file is, how it was made and what it holds without an HDF5 tool.
 *
 * Substitutions print as "SRC => DST" in canonical text and graphs as
 * their canonical text, one per line, sorted with strcmp: the listing of a
 * file is then the same whatever rank count wrote it, and two files can be
 * compared with diff.
 */
#define _POSIX_C_SOURCE 200809L /* access */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "costdb.h"
#include "family.h"
#include "guard_cache.h"
#include "model.h"
#include "onnx.h"
#include "search.h"
#include "tool.h"

static bool list_graphs, list_nodes;
static const char *device_filter;

static const taso_tool_option_t options[] = {
    {"device", "TEXT", "cost databases: only the devices whose identity contains TEXT",
     &device_filter},
    {0},
};

static const taso_tool_flag_t flags[] = {
    {"graphs", "list the graphs too, not only the substitutions", &list_graphs},
    {"graph", "models: one line per node, \"t12 = conv2d(s=2x2, act=relu, t11, w7)\"", &list_nodes},
    {0},
};

static const taso_tool_spec_t spec = {
    .name = "taso-show",
    .about = "Prints an artifact as text: its kind and provenance, its counts, the input\n"
             "table, and one substitution per line (SRC => DST, with the verdict in a\n"
             "substitutions file), sorted. A file with graphs and no substitutions\n"
             "lists its graphs. An ONNX model (FILE.onnx) prints its opset, its nodes by\n"
             "operator and whether taso imports every node. A model (a model .h5 file,\n"
             "an .onnx file or a built-in name such as resnet50 or\n"
             "inception_v3:batch=1) prints its operators by kind, FLOPs and weight\n"
             "bytes, with --graph one line per node, and its call plan (one library call\n"
             "per step) if it carries one. A cost database (costs.h5)\n"
             "prints its rows by device: median and minimum in ms, spread (max - min)\n"
             "and IQR over the median, runs, outliers, the configuration, and the device\n"
             "unit held with its holding interval (wall-clock seconds). Runs on one rank.\n",
    .in_help = "artifact, ONNX file or built-in model to show",
    .in_positional = true,
    .single_rank = true,
    .flags = flags,
    .options = options,
};

/* The counts each kind carries, in the order the writing stage reports
 * them. */
static const char *const *kind_counts(const char *kind) {
  static const char *const candidates[] = {"graphs_enumerated", "candidate_pairs", "substitutions",
                                           NULL};
  static const char *const substitutions[] = {"proved", "unknown", "refuted", "unverified", NULL};
  static const char *const validation[] = {"combinations",
                                           "proved",
                                           "counterexamples",
                                           "skipped",
                                           "unknown",
                                           "redundancy_entailed",
                                           "redundancy_independent",
                                           "redundancy_undecided",
                                           NULL};
  static const char *const model[] = {"nodes", "weight_values", NULL};
  static const char *const costs[] = {"rows", "measured", "unavailable", NULL};
  static const char *const verdicts[] = {"rows", NULL};
  static const char *const usage[] = {"models", NULL};
  if (strcmp(kind, TASO_KIND_RULE_USAGE) == 0) return usage;
  if (strcmp(kind, TASO_KIND_COSTS) == 0) return costs;
  if (strcmp(kind, TASO_KIND_GUARD_VERDICTS) == 0) return verdicts;
  if (strcmp(kind, TASO_KIND_MODEL) == 0) return model;
  if (strcmp(kind, TASO_KIND_CANDIDATES) == 0) return candidates;
  if (strcmp(kind, TASO_KIND_SUBSTITUTIONS) == 0) return substitutions;
  if (strcmp(kind, TASO_KIND_VALIDATION) == 0) return validation;
  return NULL;
}

static const char *const verdict_names[] = {
    [TASO_VERDICT_CANDIDATE] = "unverified",
    [TASO_VERDICT_PROVED] = "proved",
    [TASO_VERDICT_UNKNOWN] = "unknown",
    [TASO_VERDICT_REFUTED] = "refuted",
};

/* A provenance string, or "?" where the file lacks it: a header is still
 * worth printing for a file whose writer was killed before the end. */
static void print_string(taso_artifact_t *a, const char *label, const char *name) {
  char *value = NULL;
  bool ok = taso_artifact_get_string(a, name, &value) == TASO_OK;
  printf("  %-10s %s\n", label, ok ? value : "?");
  free(value);
}

static void print_header(taso_artifact_t *a, const char *path, const char *kind) {
  char *tool = NULL, *version = NULL, *commit = NULL;
  int64_t ranks = 0, threads = 0, seed = 0;
  printf("%s: %s\n", path, kind);
  taso_artifact_get_string(a, "tool", &tool);
  taso_artifact_get_string(a, "version", &version);
  taso_artifact_get_string(a, "git_commit", &commit);
  printf("  %-10s %s %s, git %s\n", "tool", tool ? tool : "?", version ? version : "?",
         commit ? commit : "?");
  free(tool);
  free(version);
  free(commit);
  if (taso_artifact_get_count(a, "ranks", &ranks) == TASO_OK &&
      taso_artifact_get_count(a, "threads", &threads) == TASO_OK)
    printf("  %-10s %lld rank%s x %lld thread%s\n", "run", (long long)ranks, ranks == 1 ? "" : "s",
           (long long)threads, threads == 1 ? "" : "s");
  print_string(a, "job", "job_path");
  if (taso_artifact_get_count(a, "seed", &seed) == TASO_OK)
    printf("  %-10s %lld\n", "seed", (long long)seed);
  print_string(a, "started", "start_time");
  print_string(a, "finished", "end_time");

  const char *const *names = kind_counts(kind);
  printf("  %-10s", "counts");
  for (int i = 0; names && names[i]; i++) {
    int64_t v;
    if (taso_artifact_get_count(a, names[i], &v) == TASO_OK)
      printf("%s %s %lld", i ? "," : "", names[i], (long long)v);
    else
      printf("%s %s ?", i ? "," : "", names[i]);
  }
  printf(names ? "\n" : " (unknown for this kind)\n");
}

static int compare_lines(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

static void print_sorted(const char *title, char **lines, int64_t n) {
  qsort(lines, (size_t)n, sizeof *lines, compare_lines);
  printf("%s (%lld)\n", title, (long long)n);
  for (int64_t i = 0; i < n; i++)
    printf("  %s\n", lines[i]);
}

static void free_lines(char **lines, int64_t n) {
  for (int64_t i = 0; lines && i < n; i++)
    free(lines[i]);
  free(lines);
}

static char *format_graph(const taso_graph_t *g, const taso_inputs_t *in) {
  int len = taso_graph_format(g, in, NULL, 0) + 1;
  char *s = malloc((size_t)len);
  if (s) taso_graph_format(g, in, s, len);
  return s;
}

/* a + b + c + d in a new string, or NULL. */
static char *join4(const char *a, const char *sep, const char *b, const char *tail) {
  size_t la = strlen(a), ls = strlen(sep), lb = strlen(b), lt = strlen(tail);
  char *s = malloc(la + ls + lb + lt + 1);
  if (!s) return NULL;
  memcpy(s, a, la);
  memcpy(s + la, sep, ls);
  memcpy(s + la + ls, b, lb);
  memcpy(s + la + ls + lb, tail, lt + 1);
  return s;
}

static taso_err_t show_graphs(const char *path, const taso_graph_t *graphs, int64_t n,
                              const taso_inputs_t *in) {
  char **lines = calloc(n > 0 ? (size_t)n : 1, sizeof *lines);
  if (!lines)
    return taso_error(TASO_ERR_NOMEM, "%s: no memory to list %lld graphs", path, (long long)n);
  for (int64_t i = 0; i < n; i++) {
    if (!(lines[i] = format_graph(&graphs[i], in))) {
      free_lines(lines, i);
      return taso_error(TASO_ERR_NOMEM, "%s: no memory to list %lld graphs", path, (long long)n);
    }
  }
  print_sorted("graphs", lines, n);
  free_lines(lines, n);
  return TASO_OK;
}

/* The reason taso-verify gave for row i, or "" (decisions[k].row is the
 * row each one is about; a finished file has them in row order). */
static const char *reason_of(const taso_decision_t *dec, int64_t ndec, int64_t i) {
  if (i < ndec && dec[i].row == i) return dec[i].reason;
  for (int64_t k = 0; k < ndec; k++)
    if (dec[k].row == i) return dec[k].reason;
  return "";
}

static taso_err_t show_substs(const char *path, const taso_subst_t *rows, int64_t n,
                              const taso_graph_t *graphs, int64_t ngraphs, const taso_inputs_t *in,
                              bool verdicts, const taso_decision_t *dec, int64_t ndec) {
  char **lines = calloc(n > 0 ? (size_t)n : 1, sizeof *lines);
  if (!lines)
    return taso_error(TASO_ERR_NOMEM, "%s: no memory to list %lld rows", path, (long long)n);
  for (int64_t i = 0; i < n; i++) {
    const taso_subst_t *r = &rows[i];
    if (r->src < 0 || r->src >= ngraphs || r->dst < 0 || r->dst >= ngraphs) {
      free_lines(lines, i);
      return taso_error(TASO_ERR_FORMAT,
                        "%s: /substitutions row %lld names graphs %lld and %lld, but the file "
                        "has %lld",
                        path, (long long)i, (long long)r->src, (long long)r->dst,
                        (long long)ngraphs);
    }
    char marker[TASO_REASON_LEN + 32] = "";
    const char *why = verdicts ? reason_of(dec, ndec, i) : "";
    if (verdicts)
      snprintf(marker, sizeof marker, "  [%s%s%s]", verdict_names[r->verdict], why[0] ? ": " : "",
               why);
    char *src = format_graph(&graphs[r->src], in), *dst = format_graph(&graphs[r->dst], in);
    lines[i] = src && dst ? join4(src, " => ", dst, marker) : NULL;
    free(src);
    free(dst);
    if (!lines[i]) {
      free_lines(lines, i);
      return taso_error(TASO_ERR_NOMEM, "%s: no memory to list %lld rows", path, (long long)n);
    }
  }
  print_sorted("substitutions", lines, n);
  free_lines(lines, n);
  return TASO_OK;
}

static void show_inputs(const taso_inputs_t *in) {
  printf("inputs (%d)\n", in->n);
  for (int i = 0; i < in->n; i++) {
    char shape[64];
    taso_shape_format(&in->v[i].type, shape, sizeof shape);
    printf("  %-6s %s\n", in->v[i].name, shape);
  }
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* A model's call plan: per step its call, the nodes it computes (a fused
 * chain's head to its last), the layout and the operand it writes over. */
static void show_plan(const taso_model_t *m) {
  static const char *const layouts[] = {"nchw", "nhwc", "blocked"};
  int width = 4;
  for (int i = 0; i < m->ncalls; i++)
    if ((int)strlen(m->calls[i].call) > width) width = (int)strlen(m->calls[i].call);
  printf("plan: %d step%s selected from %s\n", m->ncalls, m->ncalls == 1 ? "" : "s",
         m->library[0] ? m->library : "?");
  for (int i = 0; i < m->ncalls; i++) {
    const taso_call_t *c = &m->calls[i];
    char nodes[64];
    int len = c->first_node == c->node
                  ? snprintf(nodes, sizeof nodes, "t%d", (int)c->node)
                  : snprintf(nodes, sizeof nodes, "t%d..t%d", (int)c->first_node, (int)c->node);
    if (c->fused > 1 && len > 0 && len < (int)sizeof nodes)
      snprintf(nodes + len, sizeof nodes - (size_t)len, " (%d fused)", (int)c->fused);
    printf("  %4d  %-*s  %-18s  %s", i, width, c->call, nodes,
           c->layout >= 0 && c->layout <= 2 ? layouts[c->layout] : "?");
    if (c->in_place > 0) printf(", in place over operand %d", (int)c->in_place - 1);
    if (c->in_place == TASO_CALL_PLACED) printf(", operands placed in its result (runs nothing)");
    printf("\n");
  }
}

/* A model: its tensors, operators by kind, FLOPs and weight bytes; with
 * --graph, every node; its call plan, if it has one. */
static void show_model(const taso_model_t *m) {
  int64_t counts[TASO_OP_COUNT], bytes;
  double flops;
  int weights = 0;
  taso_model_stats(m, counts, &flops, &bytes);
  for (int i = 0; i < m->inputs.n; i++)
    weights += m->is_weight[i];
  int64_t ops = 0;
  for (int k = TASO_OP_INPUT + 1; k < TASO_OP_COUNT; k++)
    ops += counts[k];
  printf("model %s: %lld operators, %.3f GFLOP, %d weights (%.1f MiB), seed %llu\n", m->name,
         (long long)ops, flops / 1e9, weights, (double)bytes / (1 << 20),
         (unsigned long long)m->seed);
  for (int i = 0; i < m->inputs.n; i++)
    if (!m->is_weight[i]) {
      char shape[64];
      taso_shape_format(&m->inputs.v[i].type, shape, sizeof shape);
      printf("input  %-6s %-16s %s\n", m->inputs.v[i].name, shape, m->names[i]);
    }
  for (int i = 0; i < m->graph.noutputs; i++) {
    char shape[64];
    taso_shape_format(taso_model_type(m, m->graph.outputs[i]), shape, sizeof shape);
    printf("output %-6s %-16s %s\n", "", shape, m->output_names[i]);
  }
  printf("operators:");
  for (int k = TASO_OP_INPUT + 1; k < TASO_OP_COUNT; k++)
    if (counts[k]) printf(" %s %lld", taso_ops[k].name, (long long)counts[k]);
  printf("\n");
  taso_features_t f;
  taso_model_features(m, &f);
  printf("family %s (taso-optimize --rules auto searches with its subset)\n", taso_family_of(&f));
  if (list_nodes) taso_model_print(m, stdout);
  if (m->ncalls > 0) show_plan(m);
}

/* What taso-optimize did to a model, when it made this file: its costs,
 * its search and the rules applied, most often first. */
static taso_err_t show_optimization(taso_artifact_t *a) {
  double before, after, seconds, alpha;
  if (taso_artifact_get_real(a, "cost_before_ms", &before) != TASO_OK) return TASO_OK;
  char *search = NULL, *backend = NULL, *subst = NULL, *ended = NULL;
  int64_t explored = 0, budget = 0, steps = 0, n = 0;
  taso_artifact_get_real(a, "cost_after_ms", &after);
  taso_artifact_get_real(a, "search_seconds", &seconds);
  taso_artifact_get_real(a, "alpha", &alpha);
  taso_artifact_get_count(a, "graphs_explored", &explored);
  taso_artifact_get_count(a, "budget", &budget);
  taso_artifact_get_count(a, "rewrites_applied", &steps);
  taso_artifact_get_string(a, "optimize_search", &search);
  taso_artifact_get_string(a, "optimize_backend", &backend);
  taso_artifact_get_string(a, "optimize_substitutions", &subst);
  taso_artifact_get_string(a, "optimize_ended_by", &ended);
  printf("optimized: %s search, alpha %g, budget %lld, costs on %s, rules from %s\n",
         search ? search : "?", alpha, (long long)budget, backend ? backend : "?",
         subst ? subst : "?");
  printf("  cost %.4g -> %.4g ms (x%.3f); %lld graphs explored in %.1f s, ended by %s\n", before,
         after, after > 0 ? before / after : 0.0, (long long)explored, seconds,
         ended ? ended : "?");
  double lat_before, lat_after;
  int64_t kept = 0, rounds = 0, pairs = 0, won = 0, needed = 0;
  taso_artifact_get_count(a, "kept_input", &kept);
  char paired[80] = "";
  if (taso_artifact_get_count(a, "latency_pairs", &pairs) == TASO_OK &&
      taso_artifact_get_count(a, "latency_pairs_faster", &won) == TASO_OK &&
      taso_artifact_get_count(a, "latency_pairs_needed", &needed) == TASO_OK)
    snprintf(paired, sizeof paired, ", faster in %lld of %lld pairs of runs, %lld needed",
             (long long)won, (long long)pairs, (long long)needed);
  else if (taso_artifact_get_count(a, "latency_rounds", &rounds) == TASO_OK &&
           taso_artifact_get_count(a, "latency_rounds_faster", &won) == TASO_OK)
    snprintf(paired, sizeof paired, ", faster in %lld of %lld rounds", (long long)won,
             (long long)rounds); /* files of 2026-11-26 */
  if (taso_artifact_get_real(a, "latency_before_ms", &lat_before) == TASO_OK &&
      taso_artifact_get_real(a, "latency_after_ms", &lat_after) == TASO_OK)
    printf("  measured end to end %.4g -> %.4g ms (x%.3f%s)%s\n", lat_before, lat_after,
           lat_after > 0 ? lat_before / lat_after : 0.0, paired,
           kept ? ": not faster, so this file holds the input graph" : "");
  free(search);
  free(backend);
  free(subst);
  free(ended);
  taso_fired_rule_t *rows = NULL;
  taso_err_t err = taso_artifact_table_length(a, &taso_fired_rules_table, &n);
  if (err == TASO_OK)
    err = taso_artifact_read_table(a, &taso_fired_rules_table, 0, n, (void **)&rows);
  if (err == TASO_OK)
    printf("%s rules (%lld rewrites by %lld rules):\n",
           kept ? "the search's (not kept)" : "applied", (long long)steps, (long long)n);
  for (int64_t i = 0; err == TASO_OK && i < n; i++) {
    rows[i].text[TASO_RULE_TEXT - 1] = '\0';
    printf("  %4lld x  %s  [row %lld]\n", (long long)rows[i].count, rows[i].text,
           (long long)rows[i].row);
  }
  free(rows);
  return err;
}

static taso_err_t load_and_show(const char *spec) {
  taso_model_t m;
  taso_err_t err = taso_model_load(spec, &m);
  if (err == TASO_OK) show_model(&m);
  taso_model_free(&m);
  return err;
}

/* An ONNX model: what it is, its operators (sorted, with counts) and
 * whether taso imports it; an unsupported model is shown, not an error. */
static taso_err_t show_onnx(const char *path) {
  Onnx__ModelProto *m;
  TASO_TRY(taso_onnx_load(path, &m));
  const Onnx__GraphProto *g = m->graph;
  printf("%s: ONNX model, ir version %lld, opset %lld, producer \"%s\"\n", path,
         (long long)m->ir_version, (long long)taso_onnx_opset(m),
         m->producer_name ? m->producer_name : "");
  printf("graph \"%s\": %zu nodes, %zu inputs, %zu outputs, %zu initializers\n",
         g->name ? g->name : "", g->n_node, g->n_input, g->n_output, g->n_initializer);
  const char **ops = malloc(sizeof *ops * (g->n_node + 1));
  if (!ops) {
    taso_onnx_free(m);
    return taso_error(TASO_ERR_NOMEM, "%s: no memory", path);
  }
  for (size_t i = 0; i < g->n_node; i++)
    ops[i] = g->node[i]->op_type ? g->node[i]->op_type : "";
  qsort(ops, g->n_node, sizeof *ops, by_name);
  printf("operators:");
  for (size_t i = 0, run = 1; i < g->n_node; i++, run++)
    if (i + 1 == g->n_node || strcmp(ops[i], ops[i + 1])) {
      printf(" %s %zu", ops[i], run);
      run = 0;
    }
  printf("\n");
  free(ops);
  bool ok = taso_onnx_check(m, path) == TASO_OK;
  if (ok)
    printf("import: every node is supported\n");
  else
    printf("import: %s\n", taso_error_detail());
  taso_onnx_free(m);
  return ok ? load_and_show(path) : TASO_OK;
}

static void show_cost_row(const taso_cost_row_t *r) {
  if (r->status == TASO_COST_MEASURED)
    printf("  %10.4f %10.4f %6.1f%% %6.1f%% %5d %3d  %s", r->median, r->min, 100 * r->spread,
           100 * r->iqr_spread, (int)r->runs, (int)r->outliers, r->key);
  else
    printf("  %-51s  %s (%s)", "unavailable", r->key, r->message);
  printf("  unit=%s held=%.6f-%.6f when=%s algorithm=%s\n", r->unit, r->held_from, r->held_to,
         r->when, r->algorithm[0] ? r->algorithm : "-");
}

static taso_err_t show_verdict(void *ctx, const char *rule, size_t relation_bytes, bool applied) {
  (void)ctx;
  printf("  %-7s %s  (relation %zu bytes)\n", applied ? "applied" : "refused", rule,
         relation_bytes);
  return TASO_OK;
}

/* A --guard-cache file: the settings its verdicts hold under, then each
 * re-proved (applied) or refused relation by rule. */
static taso_err_t show_verdicts(const char *path) {
  char settings[512];
  printf("re-proof verdicts (rule @ the shapes of its inputs):\n");
  TASO_TRY(taso_guard_cache_each(path, settings, show_verdict, NULL));
  printf("guard settings: %s\n", settings);
  return TASO_OK;
}

/* Rows by device (the file's order), with a heading per device. */
static taso_err_t show_costs(const char *path) {
  taso_costdb_t db;
  TASO_TRY(taso_costdb_read(path, false, &db));
  int64_t shown = 0;
  for (int64_t i = 0; i < db.n; i++) {
    const taso_cost_row_t *r = &db.rows[i];
    if (device_filter && !strstr(r->device, device_filter)) continue;
    if (i == 0 || strcmp(r->device, db.rows[i - 1].device) != 0 || shown == 0) {
      int64_t n = 0, unavailable = 0;
      for (int64_t j = i; j < db.n && strcmp(db.rows[j].device, r->device) == 0; j++, n++)
        unavailable += db.rows[j].status != TASO_COST_MEASURED;
      printf("device %s: %lld configurations, %lld unavailable\n", r->device, (long long)n,
             (long long)unavailable);
      printf("  %10s %10s %7s %7s %5s %3s  %s\n", "median ms", "min ms", "spread", "iqr", "runs",
             "out", "configuration");
    }
    show_cost_row(r);
    shown++;
  }
  if (device_filter && shown == 0) printf("no device matches '%s'\n", device_filter);
  taso_costdb_free(&db);
  return TASO_OK;
}

/* A rule-usage file: each model's family and the rules that fired on its
 * search's path, then each family's subset size. */
static taso_err_t show_usage(const char *path) {
  taso_usage_t u;
  TASO_TRY(taso_usage_read(path, &u));
  printf("rule usage of %d models (searches with %s)\n", u.nmodels, u.substitutions);
  for (int i = 0; i < u.nmodels; i++) {
    printf("model %s (%s), family %s\n", u.models[i].name, u.models[i].spec, u.models[i].family);
    for (int64_t r = 0; r < u.nrules; r++)
      if (u.rules[r].model == i)
        printf("  %4lld x  %s\n", (long long)u.rules[r].count, u.rules[r].text);
  }
  taso_err_t err = TASO_OK;
  for (int i = 0; i < u.nmodels && err == TASO_OK; i++) {
    bool first = true;
    for (int j = 0; j < i; j++)
      first &= strcmp(u.models[j].family, u.models[i].family) != 0;
    if (!first) continue;
    char(*texts)[TASO_RULE_TEXT] = NULL;
    int n = 0;
    const char *from = NULL;
    err = taso_usage_subset(&u, u.models[i].family, NULL, &texts, &n, &from);
    if (err == TASO_OK) printf("family %-12s subset of %d rules\n", u.models[i].family, n);
    free(texts);
  }
  taso_usage_free(&u);
  return err;
}

static bool ends_with(const char *s, const char *tail) {
  size_t n = strlen(s), k = strlen(tail);
  return n >= k && strcmp(s + n - k, tail) == 0;
}

int main(int argc, char **argv) {
  taso_tool_t t;
  taso_tool_init(&t, &spec, &argc, &argv);
  if (ends_with(t.in_path, ".onnx")) return taso_tool_finish(&t, show_onnx(t.in_path));
  /* A model in the built-ins' language, or not a file and not named like
   * one: a built-in model. */
  if (ends_with(t.in_path, ".model") ||
      (access(t.in_path, F_OK) != 0 && !ends_with(t.in_path, ".h5")))
    return taso_tool_finish(&t, load_and_show(t.in_path));

  taso_artifact_t *a = NULL;
  char *kind = NULL;
  taso_inputs_t inputs = {0};
  taso_graph_t *graphs = NULL;
  taso_subst_t *rows = NULL;
  taso_decision_t *decisions = NULL; /* taso-verify's reasons, if any */
  int64_t ngraphs = 0, nrows = 0, ndecisions = 0;
  taso_err_t err = TASO_OK;

  TASO_TOOL_STEP(&t, err, taso_artifact_open(t.comm, t.in_path, NULL, &a));
  TASO_TOOL_STEP(&t, err, taso_artifact_get_string(a, "kind", &kind));
  /* Only these two kinds hold an input table and a graph set. */
  bool has_graphs = err == TASO_OK && (strcmp(kind, TASO_KIND_CANDIDATES) == 0 ||
                                       strcmp(kind, TASO_KIND_SUBSTITUTIONS) == 0);
  if (has_graphs) {
    TASO_TOOL_STEP(&t, err, taso_artifact_read_inputs(a, &inputs));
    TASO_TOOL_STEP(&t, err, taso_artifact_read_graphs(a, &graphs, &ngraphs));
    TASO_TOOL_STEP(&t, err, taso_artifact_read_substs(a, &rows, &nrows));
    if (strcmp(kind, TASO_KIND_SUBSTITUTIONS) == 0)
      TASO_TOOL_STEP(&t, err, taso_artifact_read_decisions(a, &decisions, &ndecisions));
  }
  if (err == TASO_OK) {
    print_header(a, t.in_path, kind);
    if (strcmp(kind, TASO_KIND_MODEL) == 0) err = show_optimization(a);
    if (has_graphs) {
      show_inputs(&inputs);
      err = show_substs(t.in_path, rows, nrows, graphs, ngraphs, &inputs,
                        strcmp(kind, TASO_KIND_SUBSTITUTIONS) == 0, decisions, ndecisions);
      if (err == TASO_OK && (list_graphs || (nrows == 0 && ngraphs > 0)))
        err = show_graphs(t.in_path, graphs, ngraphs, &inputs);
    }
  }
  err = taso_tool_close(&t, &a, err);
  /* A model reads back through its own reader, which checks every node. */
  if (err == TASO_OK && strcmp(kind, TASO_KIND_MODEL) == 0) err = load_and_show(t.in_path);
  if (err == TASO_OK && strcmp(kind, TASO_KIND_COSTS) == 0) err = show_costs(t.in_path);
  if (err == TASO_OK && strcmp(kind, TASO_KIND_GUARD_VERDICTS) == 0) err = show_verdicts(t.in_path);
  if (err == TASO_OK && strcmp(kind, TASO_KIND_RULE_USAGE) == 0) err = show_usage(t.in_path);
  free(decisions);
  free(rows);
  taso_graphs_free(graphs, ngraphs);
  taso_inputs_free(&inputs);
  free(kind);
  return taso_tool_finish(&t, err);
}
