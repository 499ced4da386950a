#include "z3ctx.h"

#include <stdio.h>

static _Thread_local bool pending;
static _Thread_local char message[256];

static void on_error(Z3_context ctx, Z3_error_code code) {
  pending = true;
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
