/*
 * Rewritten graphs of a model against the model: whether they compute
 * what it does, and whether they run faster.
 *
 * Every rule applies only where it is proved, so a rewritten graph should
 * compute what the model does; the optimizer still checks it, end to end,
 * before writing anything. This runs graphs of a model on seeded inputs
 * and weights (as taso-run --compare does) and, when a search's result
 * differs, finds the first rewrite on its path that changed the outputs,
 * to name its rule and shapes. Then it times the two models side by side
 * and says how many paired runs a faster result must win (a sign test).
 */
#ifndef TASO_AGREE_H
#define TASO_AGREE_H

#include "model.h"
#include "runtime.h"

/* The first rewrite on a path of graphs (path[0], m's graph, then steps
 * rewrites, path[steps] the result) whose graph differs from m by more
 * than tolerance: *step (1 to steps), or 0 when the result agrees;
 * *relative is that graph's largest relative output difference (max
 * |a - b| over max |b|, per output; the result's when it agrees), all run
 * on be on m's seeded inputs and weights (made here if m has none). */
taso_err_t taso_path_first_difference(const taso_backend_t *be, taso_rt_ctx_t *ctx, taso_model_t *m,
                                      const taso_graph_t *path, int steps, double tolerance,
                                      int *step, double *relative);

/* End-to-end latencies of models a and b (*a_ms, *b_ms) on be, with a's
 * seeded run-time inputs (b must take the same ones, in the same order)
 * and each one's weights (seeded where absent): after 3 warm-up runs each,
 * `rounds` rounds (1 to 15) of `runs` single runs of each, alternated run
 * by run (a b, then b a, and so on); each is the median of its rounds'
 * medians. *b_faster (unless NULL) counts the pairs of runs (runs x
 * rounds, each pair timed back to back) in which b was faster: a paired
 * comparison in which a change of load weighs on both alike, where
 * medians still carry it. Time models as they will run: a rewritten
 * graph's weight-only nodes folded (taso_model_fold_weights). */
taso_err_t taso_model_latencies(const taso_backend_t *be, taso_rt_ctx_t *ctx, taso_model_t *a,
                                taso_model_t *b, int runs, int rounds, double *a_ms, double *b_ms,
                                int *b_faster);

/* The fewest pairs of n that b must win for a one-sided sign test at
 * level alpha: the smallest k with P(X >= k) <= alpha for X binomial (n,
 * 1/2), what a b no faster than a would reach by chance; n + 1 when not
 * even all n do. */
int taso_sign_test_needed(int n, double alpha);

/* What a rewrite of parent (a graph over m's inputs) into child made that
 * the parent lacks: one line per new operator configuration,
 * "conv2d(...) in=... out=...", to buf. */
void taso_graph_describe_change(const taso_model_t *m, const taso_graph_t *parent,
                                const taso_graph_t *child, char *buf, int len);

#endif
