/* sched_getaffinity and CPU_COUNT; with them flock, gethostname, fsync,
 * O_CLOEXEC */
#define _GNU_SOURCE

#include "tool.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <omp.h>

#include "collective.h"
#include "replace.h"
#include "shard.h"
#include "version.h"

#define MAX_FLAGS 24
#define MAX_THREADS 4096

/* getopt_long values of the common options; flags follow OPT_FLAG. Above
 * the char range so that none can be mistaken for a short option. */
enum {
  OPT_HELP = 256,
  OPT_VERSION,
  OPT_JOB,
  OPT_IN,
  OPT_OUT,
  OPT_THREADS,
  OPT_FRESH,
  OPT_DEBUG,
  OPT_FLAG,
  OPT_OPTION = OPT_FLAG + MAX_FLAGS
};

/* Library failures that leave no way to continue end every rank at once:
 * a rank that merely exited would leave the others blocked. */
static void abort_all_ranks(void) {
  MPI_Abort(MPI_COMM_WORLD, 1);
}

static const char *current_detail(taso_err_t err) {
  const char *d = taso_error_detail();
  return d[0] ? d : taso_strerror(err);
}

/* One "NAME: LEVEL: message" line on stderr, from rank 0 only. */
static void report(const taso_tool_t *t, const char *level, const char *fmt, va_list ap) {
  if (t->rank != 0) return;
  fprintf(stderr, "%s: %s: ", t->spec->name, level);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  fflush(stderr);
}

static void release_output(taso_tool_t *t, bool remove_tmp);

/* Ends the run before any work, on every rank, with one error line. */
static void end_now(taso_tool_t *t, int status, const char *fmt, va_list ap)
    __attribute__((noreturn));
static void end_now(taso_tool_t *t, int status, const char *fmt, va_list ap) {
  report(t, "error", fmt, ap);
  release_output(t, false);
  taso_set_fatal_hook(NULL);
  MPI_Finalize();
  exit(status);
}

void taso_tool_usage_error(taso_tool_t *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  end_now(t, TASO_EXIT_USAGE, fmt, ap);
}

static void fail_now(taso_tool_t *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3), noreturn));
static void fail_now(taso_tool_t *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  end_now(t, TASO_EXIT_FAILED, fmt, ap);
}

static void print_option(const char *option, const char *help, const char *def) {
  if (def)
    printf("  %-15s %s (default: %s)\n", option, help, def);
  else
    printf("  %-15s %s\n", option, help);
}

static void print_help(const taso_tool_spec_t *s) {
  printf("Usage: %s", s->name);
  if (s->job_help) printf(s->job_required ? " --job FILE" : " [--job FILE]");
  if (s->in_help) printf(s->in_positional ? " IN" : " [--in FILE]");
  if (s->out_help) printf(s->out_positional ? " OUT" : " [--out FILE]");
  printf(" [options]\n\n%s\nOptions:\n", s->about);
  if (s->job_help) print_option("--job FILE", s->job_help, NULL);
  if (s->in_help)
    print_option(s->in_positional ? "IN, --in FILE" : "--in FILE", s->in_help, s->default_in);
  if (s->out_help)
    print_option(s->out_positional ? "OUT, --out FILE" : "--out FILE", s->out_help, s->default_out);
  if (s->threads)
    print_option("--threads N", "OpenMP threads per rank", "OMP_NUM_THREADS, else one per core");
  if (s->fresh_help) print_option("--fresh", s->fresh_help, NULL);
  print_option("--debug", "print HDF5's error stack on failures (or set TASO_DEBUG=1)", NULL);
  for (const taso_tool_flag_t *f = s->flags; f && f->name; f++) {
    char option[64];
    snprintf(option, sizeof option, "--%s", f->name);
    print_option(option, f->help, NULL);
  }
  for (const taso_tool_option_t *o = s->options; o && o->name; o++) {
    char option[64];
    snprintf(option, sizeof option, "--%s %s", o->name, o->metavar);
    print_option(option, o->help, NULL);
  }
  print_option("-h, --help", "print this help and exit", NULL);
  print_option("--version", "print the version and git commit and exit", NULL);
}

static int parse_threads(const char *text) {
  char *end;
  errno = 0;
  long v = strtol(text, &end, 10);
  if (end == text || *end != '\0' || errno == ERANGE || v < 1 || v > MAX_THREADS) return 0;
  return (int)v;
}

/* Everything argv can get wrong is reported here, before any file is
 * touched; the ranks parse the same argv, so they all stop together. */
static void parse_options(taso_tool_t *t, int argc, char **argv) {
  const taso_tool_spec_t *s = t->spec;
  struct option opts[10 + 2 * MAX_FLAGS];
  int n = 0, nflags = 0, noptions = 0;
  opts[n++] = (struct option){"help", no_argument, NULL, OPT_HELP};
  opts[n++] = (struct option){"version", no_argument, NULL, OPT_VERSION};
  if (s->job_help) opts[n++] = (struct option){"job", required_argument, NULL, OPT_JOB};
  if (s->in_help) opts[n++] = (struct option){"in", required_argument, NULL, OPT_IN};
  if (s->out_help) opts[n++] = (struct option){"out", required_argument, NULL, OPT_OUT};
  if (s->threads) opts[n++] = (struct option){"threads", required_argument, NULL, OPT_THREADS};
  if (s->fresh_help) opts[n++] = (struct option){"fresh", no_argument, NULL, OPT_FRESH};
  opts[n++] = (struct option){"debug", no_argument, NULL, OPT_DEBUG};
  for (const taso_tool_flag_t *f = s->flags; f && f->name; f++, nflags++) {
    if (nflags == MAX_FLAGS) taso_fatal(__FILE__, __LINE__, "taso", "too many tool flags");
    opts[n++] = (struct option){f->name, no_argument, NULL, OPT_FLAG + nflags};
  }
  for (const taso_tool_option_t *o = s->options; o && o->name; o++, noptions++) {
    if (noptions == MAX_FLAGS) taso_fatal(__FILE__, __LINE__, "taso", "too many tool options");
    opts[n++] = (struct option){o->name, required_argument, NULL, OPT_OPTION + noptions};
  }
  opts[n] = (struct option){0};

  bool in_given = false, out_given = false;
  opterr = 0; /* getopt's own messages would come from every rank */
  for (;;) {
    int c = getopt_long(argc, argv, ":h", opts, NULL);
    if (c == -1) break;
    switch (c) {
    case 'h':
    case OPT_HELP:
      if (t->rank == 0) print_help(s);
      MPI_Finalize();
      exit(0);
    case OPT_VERSION:
      if (t->rank == 0)
        printf("%s (taso) %s, git %s\n", s->name, taso_version(), taso_git_commit());
      MPI_Finalize();
      exit(0);
    case OPT_JOB:
      t->job_path = optarg;
      break;
    case OPT_IN:
      t->in_path = optarg;
      in_given = true;
      break;
    case OPT_OUT:
      t->out_path = optarg;
      out_given = true;
      break;
    case OPT_FRESH:
      t->fresh = true;
      break;
    case OPT_DEBUG:
      taso_artifact_set_debug(true);
      break;
    case OPT_THREADS: {
      int k = parse_threads(optarg);
      if (k == 0)
        taso_tool_usage_error(t, "--threads: expected a whole number from 1 to %d, got '%s'",
                              MAX_THREADS, optarg);
      omp_set_num_threads(k);
      break;
    }
    case ':':
      taso_tool_usage_error(t, "option '%s' needs a value (see %s --help)", argv[optind - 1],
                            s->name);
    case '?':
      if (optopt > 0 && optopt < 256)
        taso_tool_usage_error(t, "unknown option '-%c' (see %s --help)", optopt, s->name);
      if (optopt == 0)
        taso_tool_usage_error(t, "unknown option '%s' (see %s --help)", argv[optind - 1], s->name);
      taso_tool_usage_error(t, "option '%s' takes no value (see %s --help)", argv[optind - 1],
                            s->name);
    default:
      if (c >= OPT_OPTION)
        *s->options[c - OPT_OPTION].value = optarg;
      else
        *s->flags[c - OPT_FLAG].value = true;
      break;
    }
  }

  if (optind < argc && s->in_positional && !in_given) t->in_path = argv[optind++];
  if (optind < argc && s->out_positional && !out_given) t->out_path = argv[optind++];
  if (optind < argc)
    taso_tool_usage_error(t, "unexpected argument '%s' (see %s --help)", argv[optind], s->name);
  if (s->job_required && !t->job_path)
    taso_tool_usage_error(t, "--job FILE is required (see %s --help)", s->name);
  if (s->in_help && !t->in_path && !s->in_optional)
    taso_tool_usage_error(t, "no input file given (see %s --help)", s->name);
}

/* Collective. The cores this rank may use: its CPU affinity, divided among
 * the ranks of its node bound to the same cores (mpirun --bind-to none or an
 * unbound srun gives every rank the whole node). *sharing receives how many
 * ranks share them. */
static int usable_cores(const taso_tool_t *t, int *sharing) {
  cpu_set_t mine, *all = NULL;
  int cores = 0;
  if (sched_getaffinity(0, sizeof mine, &mine) == 0) {
    cores = CPU_COUNT(&mine);
  } else {
    CPU_ZERO(&mine);
    cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
  }
  MPI_Comm node;
  int n = 1;
  MPI_Comm_split_type(t->comm, MPI_COMM_TYPE_SHARED, t->rank, MPI_INFO_NULL, &node);
  MPI_Comm_size(node, &n);
  if (!(all = malloc(sizeof *all * (size_t)n))) taso_fatal(__FILE__, __LINE__, "taso", "no memory");
  MPI_Allgather(&mine, sizeof mine, MPI_BYTE, all, sizeof mine, MPI_BYTE, node);
  *sharing = 0;
  for (int i = 0; i < n; i++)
    *sharing += CPU_EQUAL(&all[i], &mine);
  free(all);
  MPI_Comm_free(&node);
  cores /= *sharing;
  return cores > 0 ? cores : 1;
}

/* Collective. More OpenMP threads than usable cores only slow a rank down
 * (and each verifier thread holds a Z3 context of its own), so the thread
 * count is capped there, and rank 0 says so when any rank was capped. */
static void cap_threads(taso_tool_t *t) {
  int sharing = 1, cores = usable_cores(t, &sharing), asked = omp_get_max_threads();
  int capped = asked > cores;
  if (capped) omp_set_num_threads(cores);
  MPI_Allreduce(MPI_IN_PLACE, &capped, 1, MPI_INT, MPI_LOR, t->comm);
  if (capped && t->rank == 0) {
    fprintf(stderr,
            "%s: note: %d OpenMP threads per rank asked (--threads, OMP_NUM_THREADS or one per "
            "core), but rank 0 may use %d core%s (its CPU affinity, divided among the %d "
            "rank%s of the node bound alike): using %d\n",
            t->spec->name, asked, cores, cores == 1 ? "" : "s", sharing, sharing == 1 ? "" : "s",
            omp_get_max_threads());
    fflush(stderr);
  }
}

void taso_tool_init(taso_tool_t *t, const taso_tool_spec_t *spec, int *argc, char ***argv) {
  memset(t, 0, sizeof *t);
  t->spec = spec;
  MPI_Init(argc, argv);
  /* MPI's default error handler already aborts every rank on an MPI
   * failure, so MPI calls here need no return checks. */
  t->comm = MPI_COMM_WORLD;
  MPI_Comm_rank(t->comm, &t->rank);
  MPI_Comm_size(t->comm, &t->size);
  taso_set_fatal_hook(abort_all_ranks);
  t->start = MPI_Wtime();
  taso_now_iso8601(t->start_time);
  t->in_path = spec->default_in;
  t->out_path = spec->default_out;
  t->lock_fd = -1;

  parse_options(t, *argc, *argv);
  if (spec->single_rank && t->size > 1)
    taso_tool_usage_error(t, "runs on one rank, not %d: start it without mpirun", t->size);
  if (spec->threads) cap_threads(t);
  /* Provenance attributes must be equal on every rank, and a rank's
   * thread count can differ (binding, environment): rank 0's is recorded. */
  t->threads = omp_get_max_threads();
  MPI_Bcast(&t->threads, 1, MPI_INT, 0, t->comm);
}

taso_err_t taso_tool_agree(taso_tool_t *t, taso_err_t err) {
  return taso_agree(t->comm, err);
}

static bool same_file(const char *a, const char *b);

static taso_err_t load_job(taso_tool_t *t, const char *path, const char *text);

taso_err_t taso_tool_load_job(taso_tool_t *t, const char *path) {
  return load_job(t, path, NULL);
}

taso_err_t taso_tool_load_recorded_job(taso_tool_t *t, const char *path, const char *text) {
  return load_job(t, path, text);
}

static taso_err_t load_job(taso_tool_t *t, const char *path, const char *text) {
  if (t->have_job) {
    taso_job_free(&t->job);
    t->have_job = false;
  }
  /* A job file found only now (the one a candidates file records) is an
   * input like --job, and never an output. */
  taso_err_t err = TASO_OK;
  if (t->rank == 0 && t->lock_path && same_file(path, t->out_path))
    err = taso_error(TASO_ERR_ARG,
                     "%s: is this run's job file, not an output to replace "
                     "(choose another --out)",
                     path);
  if ((err = taso_tool_agree(t, err)) != TASO_OK) return err;
  err =
      taso_tool_agree(t, text ? taso_job_parse(path, text, &t->job) : taso_job_load(path, &t->job));
  /* A rank that loaded it while another failed still owns the memory. */
  t->have_job = t->job.path != NULL;
  /* Outputs record where the job is, whatever the directory a later stage
   * runs in; a recorded path that no longer exists stays as it was. */
  char abs[PATH_MAX];
  snprintf(t->job_abs, sizeof t->job_abs, "%s", realpath(path, abs) ? abs : path);
  return err;
}

taso_err_t taso_tool_close(taso_tool_t *t, taso_artifact_t **a, taso_err_t err) {
  if (!*a) return err;
  /* The first failure is the one worth reading; a failing close would
   * overwrite its detail. */
  char first[1024];
  snprintf(first, sizeof first, "%s", taso_error_detail());
  taso_err_t cerr = taso_tool_agree(t, taso_artifact_close(*a));
  *a = NULL;
  if (err == TASO_OK) return cerr;
  return taso_error(err, "%s", first);
}

/* ------------------------------------------------------------------------ */
/* Outputs: checked before the work, locked, written beside, renamed        */
/* ------------------------------------------------------------------------ */

static bool same_file(const char *a, const char *b) {
  struct stat x, y;
  return a && b && stat(a, &x) == 0 && stat(b, &y) == 0 && x.st_dev == y.st_dev &&
         x.st_ino == y.st_ino;
}

static char *beside(const char *path, const char *suffix) {
  size_t n = strlen(path) + strlen(suffix) + 1;
  char *s = malloc(n);
  if (s) snprintf(s, n, "%s%s", path, suffix);
  return s;
}

/* The folder of path exists and this process may create files in it. */
/* What the holder of a lock wrote into it: "host H, pid P, since T". */
static void lock_holder(int fd, char *buf, size_t len) {
  ssize_t n = pread(fd, buf, len - 1, 0);
  buf[n > 0 ? n : 0] = '\0';
  buf[strcspn(buf, "\n")] = '\0';
  if (!buf[0]) snprintf(buf, len, "holder unknown");
}

/* Rank 0. flock() on OUT.lock, not waiting: the kernel drops the lock of a
 * process that dies, so a lock left by a crash is free. The file is removed
 * when released; a run that opened it just before then holds a lock on a
 * removed file, so the lock counts only if the path still names the file
 * locked, and otherwise it is taken again. */
static taso_err_t take_lock(taso_tool_t *t) {
  for (int attempt = 0; attempt < 100; attempt++) {
    int fd = open(t->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    struct stat held, named;
    char holder[256];
    if (fd < 0)
      return taso_error(TASO_ERR_IO, "%s: cannot create the lock file: %s", t->lock_path,
                        strerror(errno));
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
      int e = errno;
      if (e == EWOULDBLOCK) lock_holder(fd, holder, sizeof holder);
      close(fd);
      if (e == EWOULDBLOCK)
        return taso_error(TASO_ERR_IO, "%s: in use by another run (%s; lock file %s)", t->out_path,
                          holder, t->lock_path);
      if (e == ENOLCK || e == EOPNOTSUPP || e == ENOSYS || e == EINVAL) {
        /* A file system mounted without locks: refusing would make the
         * tools unusable there. */
        taso_tool_warn(t, "%s: cannot lock it here (%s): a second run on %s would not be stopped",
                       t->lock_path, strerror(e), t->out_path);
        return TASO_OK;
      }
      return taso_error(TASO_ERR_IO, "%s: cannot lock it: %s", t->lock_path, strerror(e));
    }
    if (fstat(fd, &held) == 0 && stat(t->lock_path, &named) == 0 && held.st_dev == named.st_dev &&
        held.st_ino == named.st_ino) {
      char host[256] = "unknown host", when[32];
      gethostname(host, sizeof host - 1);
      taso_now_iso8601(when);
      int n = snprintf(holder, sizeof holder, "host %s, pid %ld, since %s\n", host, (long)getpid(),
                       when);
      /* Who holds it is for the message of a refused run; a disk too full
       * to say it must not stop this one. */
      bool said = ftruncate(fd, 0) == 0 && pwrite(fd, holder, (size_t)n, 0) == n;
      (void)said;
      t->lock_fd = fd;
      return TASO_OK;
    }
    close(fd);
  }
  return taso_error(TASO_ERR_IO, "%s: cannot take the lock: it keeps being replaced", t->lock_path);
}

/* Rank 0: what the checks of taso_tool_claim_output find. */
static taso_err_t claim(taso_tool_t *t) {
  const char *out = t->out_path;
  struct stat st;
  TASO_TRY(taso_output_folder_ok(out));
  if (stat(out, &st) == 0 && S_ISDIR(st.st_mode))
    return taso_error(TASO_ERR_IO, "%s: is a folder", out);
  if (same_file(out, t->in_path))
    return taso_error(TASO_ERR_ARG, "%s: is this run's input (--in), not an output to replace",
                      out);
  if (same_file(out, t->job_path))
    return taso_error(TASO_ERR_ARG, "%s: is this run's job file (--job), not an output to replace",
                      out);
  TASO_TRY(take_lock(t));
  /* replace.h's rule; a stage judges a file of its own kind itself (the
   * same plan is resumed, another refused) */
  return taso_may_write("--out", out, t->spec->out_kind, t->fresh, !t->spec->replace_needs_fresh);
}

taso_err_t taso_tool_claim_output(taso_tool_t *t) {
  taso_err_t err = TASO_OK;
  if (!t->out_path || !t->spec->out_kind)
    err = taso_error(TASO_ERR_ARG, "%s: no output to claim", t->spec->name);
  else if (!(t->lock_path = beside(t->out_path, ".lock")) ||
           !(t->tmp_path = beside(t->out_path, ".tmp")) ||
           !(t->resume_path = beside(t->out_path, ".resume")))
    err = taso_error(TASO_ERR_NOMEM, "no memory for file names");
  if ((err = taso_tool_agree(t, err)) != TASO_OK) return err;
  err = taso_tool_agree(t, t->rank == 0 ? claim(t) : TASO_OK);
  t->claimed = err == TASO_OK;
  return err;
}

taso_err_t taso_tool_refuse(const taso_tool_t *t, const char *path, const char *fmt, ...) {
  char what[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  (void)t;
  return taso_error(TASO_ERR_IO, "%s holds %s: not replacing it (--fresh replaces it)", path, what);
}

/* fsync() of a file or folder by name: the data must be on disk before
 * the rename makes it the output, or a crash could leave an empty file. */
static int sync_path(const char *path, int flags) {
  int fd = open(path, flags | O_CLOEXEC);
  if (fd < 0) return -1;
  int rc = fsync(fd);
  int e = errno;
  close(fd);
  errno = e;
  return rc;
}

static taso_err_t commit(const taso_tool_t *t) {
  char dir[4096];
  const char *slash = strrchr(t->out_path, '/');
  if (!slash)
    snprintf(dir, sizeof dir, ".");
  else
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - t->out_path) + (slash == t->out_path),
             t->out_path);
  if (sync_path(t->tmp_path, O_RDONLY) != 0)
    return taso_error(TASO_ERR_IO, "%s: cannot write: %s", t->tmp_path, strerror(errno));
  if (rename(t->tmp_path, t->out_path) != 0)
    return taso_error(TASO_ERR_IO, "%s: cannot put %s in its place: %s", t->out_path, t->tmp_path,
                      strerror(errno));
  /* The rename itself is durable only once the folder is; a folder that
   * cannot be synced (some network file systems) still holds the file. */
  sync_path(dir, O_RDONLY | O_DIRECTORY);
  if (unlink(t->resume_path) != 0 && errno != ENOENT)
    fprintf(stderr, "%s: warning: %s: cannot remove it: %s\n", t->spec->name, t->resume_path,
            strerror(errno));
  return TASO_OK;
}

taso_err_t taso_tool_commit_output(taso_tool_t *t) {
  return taso_tool_agree(t, t->rank == 0 ? commit(t) : TASO_OK);
}

/* Rank 0, at the end: an OUT.tmp that was not renamed is incomplete. The
 * lock file is removed while still locked (see take_lock). */
static void release_output(taso_tool_t *t, bool remove_tmp) {
  if (t->rank == 0 && remove_tmp && t->claimed) unlink(t->tmp_path);
  if (t->rank == 0 && t->lock_fd >= 0) {
    unlink(t->lock_path);
    close(t->lock_fd);
  }
  t->lock_fd = -1;
  t->claimed = false;
  free(t->lock_path);
  free(t->tmp_path);
  free(t->resume_path);
  t->lock_path = t->tmp_path = t->resume_path = NULL;
}

static bool path_exists(const char *path) {
  struct stat st;
  return stat(path, &st) == 0;
}

void taso_tool_job_relative(const taso_tool_t *t, const char *rel, char *path, size_t len) {
  snprintf(path, len, "%s", rel);
  if (path_exists(path) || rel[0] == '/' || !t->have_job) return;
  char dir[512];
  snprintf(dir, sizeof dir, "%s", t->job.path);
  char *slash = strrchr(dir, '/');
  if (slash)
    *slash = '\0';
  else
    snprintf(dir, sizeof dir, ".");
  snprintf(path, len, "%s/%s", dir, rel);
  if (!path_exists(path)) snprintf(path, len, "%s/../%s", dir, rel);
  if (!path_exists(path)) snprintf(path, len, "%s", rel);
}

void taso_tool_provenance(const taso_tool_t *t, taso_provenance_t *prov) {
  memset(prov, 0, sizeof *prov);
  prov->tool = t->spec->name;
  prov->job_path = t->have_job ? t->job_abs : "";
  prov->job_text = t->have_job ? t->job.text : "";
  prov->ranks = t->size;
  prov->threads = t->threads;
  prov->seed = t->have_job ? t->job.seed : 0;
  memcpy(prov->start_time, t->start_time, sizeof prov->start_time);
}

void taso_tool_block(const taso_tool_t *t, int64_t n, int64_t *lo, int64_t *hi) {
  taso_shard_range(n, t->size, t->rank, lo, hi);
}

void taso_tool_print(const taso_tool_t *t, const char *fmt, ...) {
  if (t->rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  vprintf(fmt, ap);
  va_end(ap);
  fflush(stdout); /* a batch job's log shows each line as it happens */
}

void taso_tool_warn(const taso_tool_t *t, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  report(t, "warning", fmt, ap);
  va_end(ap);
}

void taso_tool_summary(const taso_tool_t *t, const char *fmt, ...) {
  if (t->rank != 0) return;
  va_list ap;
  va_start(ap, fmt);
  printf("%s: ", t->spec->name);
  vprintf(fmt, ap);
  printf(" (%.1f s, %d rank%s)\n", MPI_Wtime() - t->start, t->size, t->size == 1 ? "" : "s");
  if (t->defaults[0]) printf("%s: job defaults used: %s\n", t->spec->name, t->defaults);
  va_end(ap);
  fflush(stdout);
}

void taso_tool_note_defaults(taso_tool_t *t, const char *section, const char *const *skip) {
  if (t->have_job) taso_job_defaults(&t->job, section, skip, t->defaults, sizeof t->defaults);
}

int taso_tool_finish(taso_tool_t *t, taso_err_t err) {
  err = taso_tool_agree(t, err);
  if (err != TASO_OK && t->rank == 0) {
    fprintf(stderr, "%s: error: %s\n", t->spec->name, current_detail(err));
    fflush(stderr);
  }
  /* Rank 0 holds the totals; every rank must return the same status. */
  int findings = err == TASO_OK && t->findings[0];
  MPI_Bcast(&findings, 1, MPI_INT, 0, t->comm);
  if (findings && t->rank == 0) {
    fprintf(stderr, "%s: findings: %s (exit status %d)\n", t->spec->name, t->findings,
            TASO_EXIT_FINDINGS);
    fflush(stderr);
  }
  release_output(t, true);
  if (t->have_job) taso_job_free(&t->job);
  t->have_job = false;
  fflush(stdout);
  taso_set_fatal_hook(NULL); /* MPI_Abort is not allowed after MPI_Finalize */
  MPI_Finalize();
  return err != TASO_OK ? TASO_EXIT_FAILED : findings ? TASO_EXIT_FINDINGS : TASO_EXIT_OK;
}

void taso_progress_begin(taso_progress_t *p, const taso_tool_t *t, const char *what,
                         int64_t total) {
  taso_progress_start(p, t->spec->name, t->rank, what, total);
}

/* The absolute path a tool would open for path: its folder resolved (links,
 * "..", relative to the working folder), its last name as given; path as
 * given where the folder does not exist. */
static void absolute_path(const char *path, char *out, size_t len) {
  char dir_copy[PATH_MAX], base_copy[PATH_MAX], dir[PATH_MAX];
  snprintf(dir_copy, sizeof dir_copy, "%s", path);
  snprintf(base_copy, sizeof base_copy, "%s", path);
  if (realpath(dirname(dir_copy), dir))
    snprintf(out, len, "%s/%s", dir, basename(base_copy));
  else
    snprintf(out, len, "%s", path);
}

bool taso_tool_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  bool ea = stat(a, &sa) == 0, eb = stat(b, &sb) == 0;
  if (ea && eb) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (ea != eb) return false;
  char pa[2 * PATH_MAX], pb[2 * PATH_MAX];
  absolute_path(a, pa, sizeof pa);
  absolute_path(b, pb, sizeof pb);
  return strcmp(pa, pb) == 0;
}

void taso_tool_check_files(taso_tool_t *t, const taso_tool_file_t *files, int n) {
  char msg[1024] = "";
  int usage = 1; /* arguments that conflict: 2; a file that may not be written: 1 */
  if (t->rank == 0) {
    for (int i = 0; i < n && !msg[0]; i++) {
      const taso_tool_file_t *o = &files[i];
      if (!o->path || !o->kind) continue; /* not given, or an input */
      for (int j = 0; j < n && !msg[0]; j++) {
        const taso_tool_file_t *x = &files[j];
        /* two outputs are compared once */
        if (j == i || (x->kind && j < i) || !x->path || !taso_tool_same_file(o->path, x->path))
          continue;
        snprintf(msg, sizeof msg, "%s %s and %s %s name one file: %s", o->option, o->path,
                 x->option, x->path,
                 x->kind ? "two outputs would take its lock twice"
                         : "an output may not replace an input");
      }
    }
    /* --out is taso_tool_claim_output's to check, with its lock */
    for (int i = 0; i < n && !msg[0]; i++) {
      const taso_tool_file_t *o = &files[i];
      if (!o->path || !o->kind || o->path == t->out_path) continue;
      if (taso_may_write(o->option, o->path, o->kind, t->fresh, o->updates) != TASO_OK) {
        snprintf(msg, sizeof msg, "%s", taso_error_detail());
        usage = 0;
      }
    }
  }
  /* rank 0 decides: on a cluster another node may see other files */
  MPI_Bcast(msg, (int)sizeof msg, MPI_CHAR, 0, t->comm);
  MPI_Bcast(&usage, 1, MPI_INT, 0, t->comm);
  if (msg[0] && usage) taso_tool_usage_error(t, "%s", msg);
  if (msg[0]) fail_now(t, "%s", msg);
}
