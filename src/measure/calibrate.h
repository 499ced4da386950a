/*
 * The cost model against the run: each model's cost as taso-optimize sums
 * it from the cost database (its planned steps' figures and the device's
 * per-step term), against its end-to-end median on the same device.
 * bench/calibrate.sh keeps the table (taso-measure --calibrate).
 */
#ifndef TASO_CALIBRATE_H
#define TASO_CALIBRATE_H

#include "measure.h"

/* Rank 0, after measuring on the device p (open). Without table: a line
 * per model of o->models, its cost from o->db_path. With table: those
 * costs against the models' end-to-end medians of o->calibrate_runs runs
 * (in rounds over the models, holding the device), their fastest runs,
 * and each model's steps timed alone between its runs; with
 * o->calibrate_steps also each step against its time inside whole runs.
 * The plans make the calls the database's rows were measured with. */
taso_err_t taso_calibrate(const taso_measure_opts_t *o, taso_place_t *p, bool table);

#endif
