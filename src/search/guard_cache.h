/*
 * The rule guard's verdicts kept between runs (taso-optimize --guard-cache
 * FILE, kind taso-guard-verdicts): every relation a guard decided (a rule
 * re-proved, or refused, at shapes outside the relation it was proved
 * under), so that a later run, of any model, over rules that include the
 * same one, does not prove it again.
 *
 * A row names its rule by its text ("lhs => rhs", as taso-show prints it)
 * and the shapes of the inputs the rule reads, not by its place in a rules
 * list, which changes with the files loaded; the relation is the guard's
 * key bytes, in hex, of any length: a row's relation_first and
 * relation_chunks name its rows of /relations (255 hex digits each),
 * whose texts joined are the relation. The file records the guard's settings
 * (taso_rule_guard_settings: limits, numeric check, axioms digest); a
 * file made with other settings is left unused, with a warning, and
 * replaced by this run's verdicts when written.
 *
 * Writing merges like the cost database does: an exclusive flock on
 * FILE.lock, the file read as it is now, this run's verdicts added, the
 * whole written to FILE.tmp and renamed over FILE; so runs that finish at
 * once lose no verdict, and a reader always sees a whole file. One
 * process (MPI_COMM_SELF) does each of these.
 */
#ifndef TASO_GUARD_CACHE_H
#define TASO_GUARD_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "artifact.h"
#include "rule_guard.h"
#include "search.h"

#define TASO_KIND_GUARD_VERDICTS "taso-guard-verdicts"

/* Gives guard every verdict of path for the rules it knows (rule i of
 * rules, direction 0, as the search calls the guard). A missing file is
 * no error (*loaded 0); a file that is not a verdict file is, naming it;
 * one with other settings is skipped, *stale set. */
taso_err_t taso_guard_cache_load(const char *path, const taso_rules_t *rules,
                                 taso_rule_guard_t *guard, int64_t *loaded, bool *stale);

/* Merges guard's verdicts into path (created if absent); *rows: the
 * file's rows after. */
taso_err_t taso_guard_cache_save(const char *path, const taso_rules_t *rules,
                                 const taso_rule_guard_t *guard, const taso_provenance_t *prov,
                                 int64_t *rows);

/* Calls fn with each verdict of path, in the file's order (rule named by
 * its text and input shapes, the relation's size in bytes, whether it was
 * applied), after giving settings (SETTINGS_LEN = 512 bytes) the guard
 * settings the file was made with. For taso-show. */
typedef taso_err_t (*taso_guard_cache_fn)(void *ctx, const char *rule, size_t relation_bytes,
                                          bool applied);
taso_err_t taso_guard_cache_each(const char *path, char *settings, taso_guard_cache_fn fn,
                                 void *ctx);

#endif
