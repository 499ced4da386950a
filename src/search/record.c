#include "record.h"

#include <stdio.h>
#include <stdlib.h>

const char *const taso_exact_names[] = {"none within its time", "optimal",
                                        "the best within its time", "off", "not run (one pass)"};

taso_err_t taso_optimize_record_write(taso_artifact_t *a, const taso_optimize_record_t *rec,
                                      const taso_rules_t *rules, const taso_search_result_t *r) {
  int64_t n = 0;
  taso_fired_rule_t *rows = NULL;
  TASO_TRY(taso_fired_rules(rules, r, &rows, &n));
  const char *ended = r->eqsat_stop     ? r->eqsat_stop
                      : r->timed_out    ? "time limit"
                      : r->budget_spent ? "budget"
                                        : "queue empty";
  int64_t rewrites = 0; /* the steps on the path; eqsat: the applications the result uses */
  for (int i = 0; i < rules->n; i++)
    rewrites += r->fired[i];
  taso_err_t err = taso_artifact_set_string(a, "optimize_search", rec->search);
  if (err == TASO_OK)
    err = taso_artifact_set_string(a, "optimize_substitutions", rec->substitutions);
  if (err == TASO_OK) err = taso_artifact_set_string(a, "optimize_model", rec->model);
  char features[TASO_FEATURES * 26];
  taso_features_format(&rec->input_features, features, sizeof features);
  if (err == TASO_OK) err = taso_artifact_set_string(a, TASO_INPUT_NAME_ATTR, rec->input_name);
  if (err == TASO_OK) err = taso_artifact_set_string(a, TASO_INPUT_FEATURES_ATTR, features);
  if (err == TASO_OK) err = taso_artifact_set_string(a, "optimize_rules_choice", rec->rules_choice);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "rules_searched", rules->n);
  if (err == TASO_OK) err = taso_artifact_set_string(a, "optimize_backend", rec->backend);
  if (err == TASO_OK) err = taso_artifact_set_string(a, "optimize_ended_by", ended);
  if (err == TASO_OK) err = taso_artifact_set_string(a, "optimize_costs", rec->costs);
  if (err == TASO_OK) err = taso_artifact_set_string(a, "optimize_cost_of", rec->cost_of);
  if (err == TASO_OK) err = taso_artifact_set_real(a, "cost_before_ms", r->cost_before);
  if (err == TASO_OK) err = taso_artifact_set_real(a, "cost_after_ms", r->cost_after);
  if (err == TASO_OK) err = taso_artifact_set_real(a, "search_seconds", r->seconds);
  if (err == TASO_OK) err = taso_artifact_set_real(a, "search_cpu_seconds", r->cpu_seconds);
  if (err == TASO_OK) err = taso_artifact_set_real(a, "alpha", rec->opt->alpha);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "budget", rec->opt->budget);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "graphs_explored", r->explored);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "ranks", r->ranks);
  /* complete: the result is the search's own, not where the clock cut it */
  if (err == TASO_OK) err = taso_artifact_set_count(a, "search_complete", !r->timed_out);
  if (err == TASO_OK && r->rank_explored)
    err = taso_artifact_set_count(a, "search_width", rec->opt->width);
  if (err == TASO_OK && rec->opt->target > 0)
    err = taso_artifact_set_real(a, "target_seconds", r->target_seconds);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "graphs_generated", r->generated);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "graphs_queued", r->queued);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "search_chain", rec->opt->chain);
  if (err == TASO_OK && rec->opt->chain)
    err = taso_artifact_set_count(a, "chain_links", r->chained);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "rewrites_applied", rewrites);
  if (err == TASO_OK && r->eqsat_stop)
    err = taso_artifact_set_count(a, "eqsat_iterations", r->eqsat_iterations);
  if (err == TASO_OK && r->eqsat_stop) err = taso_artifact_set_count(a, "eqsat_enodes", r->enodes);
  if (err == TASO_OK && r->eqsat_stop)
    err = taso_artifact_set_count(a, "eqsat_rounds", r->eqsat_rounds_run);
  if (err == TASO_OK && r->eqsat_stop)
    err = taso_artifact_set_count(a, "eqsat_guessed", r->eqsat_guessed);
  if (err == TASO_OK && r->eqsat_stop)
    err = taso_artifact_set_count(a, "eqsat_eclasses", r->eclasses);
  if (err == TASO_OK && r->eqsat_stop)
    err = taso_artifact_set_string(a, "eqsat_exact", taso_exact_names[r->eqsat_exact]);
  if (err == TASO_OK && r->eqsat_stop &&
      (r->eqsat_exact == TASO_EXACT_OPTIMAL || r->eqsat_exact == TASO_EXACT_FOUND))
    err = taso_artifact_set_real(a, "eqsat_exact_bound_ms", r->eqsat_exact_bound);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "substitutions_proved", rec->proved);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "configs_measured", rec->measured);
  if (err == TASO_OK && rec->checked)
    err = taso_artifact_set_real(a, "check_relative_difference", rec->relative);
  if (err == TASO_OK && rec->timed)
    err = taso_artifact_set_real(a, "latency_before_ms", rec->latency_before);
  if (err == TASO_OK && rec->timed)
    err = taso_artifact_set_real(a, "latency_after_ms", rec->latency_after);
  if (err == TASO_OK && rec->timed) err = taso_artifact_set_count(a, "latency_rounds", rec->rounds);
  if (err == TASO_OK && rec->timed) err = taso_artifact_set_count(a, "latency_pairs", rec->pairs);
  if (err == TASO_OK && rec->timed)
    err = taso_artifact_set_count(a, "latency_pairs_faster", rec->pairs_faster);
  if (err == TASO_OK && rec->timed)
    err = taso_artifact_set_count(a, "latency_pairs_needed", rec->pairs_needed);
  if (err == TASO_OK) err = taso_artifact_set_count(a, "kept_input", rec->kept_input);
  if (err == TASO_OK) err = taso_artifact_write_table(a, &taso_fired_rules_table, rows, n, 0, n);
  free(rows);
  return err;
}

void taso_search_report(const taso_search_result_t *r, int width, bool chain, char *buf,
                        size_t len) {
  size_t n = 0;
  buf[0] = '\0';
#define ADD(...) (n += n < len ? (size_t)snprintf(buf + n, len - n, __VA_ARGS__) : 0)
  if (r->rank_explored) { /* the balance: graphs each rank expanded */
    ADD("taso-optimize: parallel search: %lld rounds of width %d; graphs expanded per rank:",
        (long long)r->rounds, width);
    for (int i = 0; i < r->ranks && n + 24 < len; i++)
      ADD(" %lld", (long long)r->rank_explored[i]);
    ADD("\n");
  }
  if (chain) ADD("taso-optimize: rule chains: %lld links\n", (long long)r->chained);
  if (r->eqsat_stop && r->eqsat_rounds_run > 1)
    ADD("taso-optimize: eqsat: %d rounds, each from the result of the one before, %d of them "
        "cheaper (the figures below are the last cheaper one's)\n",
        r->eqsat_rounds_run, r->steps);
  if (r->eqsat_stop)
    ADD("taso-optimize: eqsat: %d iterations, %lld e-nodes in %lld e-classes, %lld matches "
        "(%lld not typed, %lld refused), %lld applied, %lld bans; extraction %.2f s (%d "
        "rounds, %lld moves)\n",
        r->eqsat_iterations, (long long)r->enodes, (long long)r->eclasses, (long long)r->generated,
        (long long)r->invalid, (long long)r->refused, (long long)r->queued,
        (long long)r->eqsat_bans, r->extract_seconds, r->eqsat_rounds, (long long)r->eqsat_moves);
  if (r->eqsat_stop && r->eqsat_optimistic_ms > 0 && r->eqsat_one_pass)
    ADD("taso-optimize: eqsat: first pass, unproved: result %.4g ms, no cheaper than the input: "
        "nothing decided, no second pass (the figures above are the first pass's)\n",
        r->eqsat_optimistic_ms);
  else if (r->eqsat_stop && r->eqsat_optimistic_ms > 0)
    ADD("taso-optimize: eqsat: first pass, unproved: result %.4g ms; the relations of %lld of "
        "its applications decided for the second\n",
        r->eqsat_optimistic_ms, (long long)r->eqsat_asked);
  if (r->eqsat_stop && r->eqsat_optimistic_ms > 0 && !r->eqsat_one_pass && r->eqsat_replayed >= 0)
    ADD("taso-optimize: eqsat: the second pass replayed %lld of the first's applications (proved, "
        "at matches): the first's result is among them, no second saturation (the figures "
        "above are the first pass's)\n",
        (long long)r->eqsat_replayed);
  if (r->eqsat_stop && r->eqsat_third_pass)
    ADD("taso-optimize: eqsat: the second pass fell short of the first's result: a third "
        "decided the relations below it and saturated again\n");
  if (r->eqsat_stop && (r->eqsat_guessed || r->eqsat_remeasured))
    ADD("taso-optimize: eqsat: %lld configurations guessed, not measured; the result's guesses "
        "measured and the extraction made again %d times\n",
        (long long)r->eqsat_guessed, r->eqsat_remeasured);
  if (r->eqsat_stop) {
    ADD("taso-optimize: eqsat: exact extraction: %s", taso_exact_names[r->eqsat_exact]);
    if (r->eqsat_exact == TASO_EXACT_OPTIMAL || r->eqsat_exact == TASO_EXACT_FOUND)
      ADD(", node costs %.4g ms (at least %.4g)%s", r->eqsat_exact_ms, r->eqsat_exact_bound,
          r->eqsat_extraction == 0 ? ", kept" : "");
    ADD("\n");
  }
#undef ADD
}
