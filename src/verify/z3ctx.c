#define _POSIX_C_SOURCE 200809L
#include "z3ctx.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

static _Thread_local bool pending;
static _Thread_local char message[256];
static _Thread_local Z3_error_code pending_code;

static void on_error(Z3_context ctx, Z3_error_code code) {
  pending = true;
  pending_code = code;
  snprintf(message, sizeof message, "%s", Z3_get_error_msg(ctx, code));
}

taso_err_t taso_z3_open(unsigned timeout_ms, Z3_context *out) {
  Z3_config cfg = Z3_mk_config();
  if (!cfg) return taso_error(TASO_ERR_LIB, "Z3: cannot create a configuration");
  char ms[32];
  snprintf(ms, sizeof ms, "%u", timeout_ms);
  Z3_set_param_value(cfg, "model", "true");
  if (timeout_ms) Z3_set_param_value(cfg, "timeout", ms);
  Z3_context ctx = Z3_mk_context(cfg);
  Z3_del_config(cfg);
  if (!ctx) return taso_error(TASO_ERR_LIB, "Z3: cannot create a context");
  Z3_set_error_handler(ctx, on_error);
  *out = ctx;
  return TASO_OK;
}

void taso_z3_close(Z3_context ctx) {
  if (ctx) Z3_del_context(ctx);
}

bool taso_z3_take_error(char *buf, int len) {
  bool had = pending;
  if (had && buf && len > 0) snprintf(buf, len, "%s", message);
  pending = false;
  return had;
}

unsigned taso_limits_timeout_ms(const taso_limits_t *lim) {
  double ms = lim->timeout_s * 1000.0;
  return ms < 1 ? 1 : ms > 4e9 ? 4000000000u : (unsigned)ms;
}

void taso_z3_memory_cap(unsigned mb) {
  static _Atomic unsigned memory_set;
  /* memory_max_size is global to the process: set once per value (every
   * thread of a run asks for the same). */
  if (mb && memory_set != mb) {
    char text[32];
    snprintf(text, sizeof text, "%u", mb);
    Z3_global_param_set("memory_max_size", text);
    memory_set = mb;
  }
}

void taso_limits_apply(Z3_context c, Z3_params params, const taso_limits_t *lim) {
  if (lim->timeout_s > 0)
    Z3_params_set_uint(c, params, Z3_mk_string_symbol(c, "timeout"), taso_limits_timeout_ms(lim));
  if (lim->rlimit) Z3_params_set_uint(c, params, Z3_mk_string_symbol(c, "rlimit"), lim->rlimit);
  taso_z3_memory_cap(lim->memory_mb);
}

Z3_solver taso_limited_solver(Z3_context c, const taso_limits_t *lim, bool mbqi) {
  /* The plain SMT kernel: Z3_mk_solver would run its preprocessing
   * tactics first, which ignore our patterns and can overrun the timeout
   * by many seconds. */
  Z3_solver s = Z3_mk_simple_solver(c);
  if (!s) return NULL; /* out of memory: the query says so */
  Z3_solver_inc_ref(c, s);
  Z3_params params = Z3_mk_params(c);
  if (!params) {
    Z3_solver_dec_ref(c, s);
    return NULL;
  }
  Z3_params_inc_ref(c, params);
  taso_limits_apply(c, params, lim);
  Z3_params_set_bool(c, params, Z3_mk_string_symbol(c, "smt.mbqi"), mbqi);
  Z3_solver_set_params(c, s, params);
  Z3_params_dec_ref(c, params);
  return s;
}

const char *taso_limits_reason(const char *why, double seconds, const taso_limits_t *lim) {
  if (!why || !why[0]) return "unknown";
  if (strstr(why, "resource limit") || strstr(why, "rlimit")) return "resource limit (rlimit)";
  if (strstr(why, "memory")) return "memory limit";
  if (strstr(why, "timeout")) return "timeout";
  /* "canceled" with the resource count not spent (taso_limits_check
   * looks first): the timer, or an interrupt. */
  if (strstr(why, "canceled"))
    return lim->timeout_s > 0 && seconds >= 0.9 * lim->timeout_s ? "timeout" : "canceled";
  return why;
}

/* Z3's count of resource units spent in the context so far (its
 * statistic "rlimit count", cumulative over the context's queries); -1
 * when Z3 cannot say: its memory cap is the process's, so a query of
 * another thread that runs out makes this thread's calls fail too, and a
 * failed call returns NULL, which no reference count may touch. */
static double rlimit_count(Z3_context c, Z3_solver s) {
  Z3_stats st = Z3_solver_get_statistics(c, s);
  if (!st) return -1;
  Z3_stats_inc_ref(c, st);
  double v = 0;
  for (unsigned i = 0; i < Z3_stats_size(c, st); i++)
    if (!strcmp(Z3_stats_get_key(c, st, i), "rlimit count"))
      v = Z3_stats_is_uint(c, st, i) ? (double)Z3_stats_get_uint_value(c, st, i)
                                     : Z3_stats_get_double_value(c, st, i);
  Z3_stats_dec_ref(c, st);
  return v;
}

Z3_lbool taso_limits_check(Z3_context c, Z3_solver s, const taso_limits_t *lim, char *why,
                           int len) {
  struct timespec t0, t1;
  if (!s) { /* the solver could not be made (z3ctx.h) */
    char zmsg[256];
    taso_z3_take_error(zmsg, sizeof zmsg);
    snprintf(why, (size_t)len, "memory limit (%u MiB)", lim->memory_mb);
    return Z3_L_UNDEF;
  }
  double spent = lim->rlimit ? rlimit_count(c, s) : 0;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  Z3_lbool r = Z3_solver_check(c, s);
  clock_gettime(CLOCK_MONOTONIC, &t1);
  double seconds = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
  char zmsg[256];
  if (taso_z3_peek_memout(zmsg, sizeof zmsg)) {
    snprintf(why, (size_t)len, "memory limit (%u MiB)", lim->memory_mb);
    return Z3_L_UNDEF;
  }
  /* Z3 4.8.12 reports a spent resource limit as "canceled" or plain
   * "unknown": the count of units the query spent tells. */
  double now = r == Z3_L_UNDEF && lim->rlimit && spent >= 0 ? rlimit_count(c, s) : -1;
  if (now >= 0 && now - spent >= lim->rlimit)
    snprintf(why, (size_t)len, "resource limit (rlimit %u)", lim->rlimit);
  else if (r == Z3_L_UNDEF)
    snprintf(why, (size_t)len, "%s",
             taso_limits_reason(Z3_solver_get_reason_unknown(c, s), seconds, lim));
  return r;
}

bool taso_z3_peek_memout(char *buf, int len) {
  if (!pending || (pending_code != Z3_MEMOUT_FAIL && !strstr(message, "out of memory")))
    return false;
  return taso_z3_take_error(buf, len);
}
