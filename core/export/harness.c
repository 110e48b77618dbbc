#define _POSIX_C_SOURCE 200809L

#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef _OPENMP
#include <omp.h>
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error                                                                         \
    "the data files are little-endian; this harness needs a little-endian host"
#endif

enum { DT_F32, DT_F64, DT_I32, DT_I64, DT_BOOL, DT_U8 };

/* One argument of the kernel, in ABI order. */
typedef struct {
  const char *name; /* container name: <name>.npy / <name>.bin in the data
                       directory */
  int dtype;        /* DT_* */
  int rank;
  const int64_t *shape; /* rank entries */
  int64_t count;        /* elements */
  uint64_t id;          /* container id: generated values use seed + id */
  int output;           /* compared with <name>.expected.npy after a run */
} Arg;

/* @KERNEL@ */

static const size_t dtype_size[] = {4, 8, 4, 8, 1, 1};
static const char *const dtype_name[] = {"f32", "f64",  "i32",
                                         "i64", "bool", "u8"};
/* NumPy descr of each dtype (one-byte types also accept '<' and '=') */
static const char *const dtype_descr[] = {"<f4", "<f8", "<i4",
                                          "<i8", "|b1", "|u1"};

static size_t arg_bytes(const Arg *a) {
  return (size_t)a->count * dtype_size[a->dtype];
}

static void print_type(FILE *f, const Arg *a) {
  fprintf(f, "%s[", dtype_name[a->dtype]);
  for (int d = 0; d < a->rank; d++)
    fprintf(f, "%s%lld", d ? ", " : "", (long long)a->shape[d]);
  fprintf(f, "]");
}

/* 64-byte aligned, zero-filled; exits on failure. */
static void *xalloc(size_t n) {
  size_t size = (n + 63) / 64 * 64;
  void *p = aligned_alloc(64, size ? size : 64);
  if (!p) {
    fprintf(stderr, "harness: out of memory (%zu bytes)\n", n);
    exit(2);
  }
  memset(p, 0, size ? size : 64);
  return p;
}

/* Reads a whole file.  Returns 1 when read, 0 when it does not exist, -1
 * after printing an error. */
static int read_file(const char *path, unsigned char **data, size_t *len) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    if (errno == ENOENT)
      return 0;
    fprintf(stderr, "harness: %s: %s\n", path, strerror(errno));
    return -1;
  }
  size_t cap = 1 << 16, n = 0;
  unsigned char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap)
      break;
    unsigned char *bigger = realloc(buf, cap * 2);
    if (!bigger) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  int bad = ferror(f);
  fclose(f);
  if (!buf || bad) {
    fprintf(stderr, "harness: %s: %s\n", path,
            buf ? "read error" : "out of memory");
    free(buf);
    return -1;
  }
  *data = buf;
  *len = n;
  return 1;
}

/* The text after 'key': in a .npy header dictionary, or NULL. */
static const char *npy_field(const char *header, const char *key) {
  char quoted[32];
  snprintf(quoted, sizeof quoted, "'%s'", key);
  const char *p = strstr(header, quoted);
  if (!p)
    return NULL;
  p += strlen(quoted);
  while (*p == ' ')
    p++;
  if (*p != ':')
    return NULL;
  p++;
  while (*p == ' ')
    p++;
  return p;
}

/* Checks a .npy file against a and copies its elements into dst.  Returns 0
 * or -1 after printing the problem. */
static int load_npy(const char *path, const unsigned char *buf, size_t len,
                    const Arg *a, void *dst) {
  if (len < 10 || memcmp(buf, "\x93NUMPY", 6) != 0) {
    fprintf(stderr, "harness: %s: not a .npy file\n", path);
    return -1;
  }
  size_t hlen, start;
  if (buf[6] == 1) {
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8;
    start = 10;
  } else if ((buf[6] == 2 || buf[6] == 3) && len >= 12) {
    hlen = (size_t)buf[8] | (size_t)buf[9] << 8 | (size_t)buf[10] << 16 |
           (size_t)buf[11] << 24;
    start = 12;
  } else {
    fprintf(stderr, "harness: %s: unsupported .npy version %d\n", path, buf[6]);
    return -1;
  }
  if (start + hlen > len) {
    fprintf(stderr, "harness: %s: truncated header\n", path);
    return -1;
  }
  char *header = malloc(hlen + 1);
  if (!header) {
    fprintf(stderr, "harness: out of memory\n");
    return -1;
  }
  memcpy(header, buf + start, hlen);
  header[hlen] = '\0';
  int status = -1;
  const char *descr = npy_field(header, "descr");
  const char *fortran = npy_field(header, "fortran_order");
  const char *shape = npy_field(header, "shape");
  const char *want = dtype_descr[a->dtype];
  int descr_ok = 0;
  if (descr && descr[0] == '\'') {
    descr_ok = strncmp(descr + 1, want, 3) == 0 && descr[4] == '\'';
    if (!descr_ok && dtype_size[a->dtype] == 1)
      descr_ok = (descr[1] == '<' || descr[1] == '=') &&
                 strncmp(descr + 2, want + 1, 2) == 0 && descr[4] == '\'';
  }
  if (!descr || !fortran || !shape || *shape != '(') {
    fprintf(stderr, "harness: %s: malformed header\n", path);
    goto out;
  }
  if (!descr_ok) {
    fprintf(stderr, "harness: %s: descr %.6s, but '%s' is %s ('%s')\n", path,
            descr, a->name, dtype_name[a->dtype], want);
    goto out;
  }
  if (strncmp(fortran, "False", 5) != 0) {
    fprintf(stderr, "harness: %s: Fortran order is not supported\n", path);
    goto out;
  }
  int64_t dims[32];
  int rank = 0;
  const char *p = shape + 1;
  for (;;) {
    while (*p == ' ' || *p == ',')
      p++;
    if (*p == ')')
      break;
    char *end;
    long long v = strtoll(p, &end, 10);
    if (end == p || rank == 32) {
      fprintf(stderr, "harness: %s: malformed shape\n", path);
      goto out;
    }
    dims[rank++] = (int64_t)v;
    p = end;
  }
  int same = rank == a->rank;
  for (int d = 0; same && d < rank; d++)
    same = dims[d] == a->shape[d];
  if (!same) {
    fprintf(stderr, "harness: %s: shape (", path);
    for (int d = 0; d < rank; d++)
      fprintf(stderr, "%s%lld", d ? ", " : "", (long long)dims[d]);
    fprintf(stderr, "), but '%s' is ", a->name);
    print_type(stderr, a);
    fprintf(stderr, "\n");
    goto out;
  }
  if (len - start - hlen != arg_bytes(a)) {
    fprintf(stderr, "harness: %s: %zu bytes of data, expected %zu\n", path,
            len - start - hlen, arg_bytes(a));
    goto out;
  }
  memcpy(dst, buf + start + hlen, arg_bytes(a));
  status = 0;
out:
  free(header);
  return status;
}

/* Loads <dir>/<name><suffix>.npy, else <dir>/<name><suffix>.bin (raw
 * little-endian elements in row-major order) into dst.  Returns 1 when
 * loaded (*used receives the path), 0 when neither exists, -1 on error. */
static int load_tensor(const char *dir, const Arg *a, const char *suffix,
                       void *dst, char *used, size_t used_size) {
  static const char *const ext[] = {".npy", ".bin"};
  for (int e = 0; e < 2; e++) {
    snprintf(used, used_size, "%s/%s%s%s", dir, a->name, suffix, ext[e]);
    unsigned char *buf = NULL;
    size_t len = 0;
    int r = read_file(used, &buf, &len);
    if (r <= 0) {
      if (r < 0)
        return -1;
      continue;
    }
    int status = 0;
    if (e == 0) {
      status = load_npy(used, buf, len, a, dst);
    } else if (len != arg_bytes(a)) {
      fprintf(stderr, "harness: %s: %zu bytes, but '%s' (", used, len, a->name);
      print_type(stderr, a);
      fprintf(stderr, ") takes %zu\n", arg_bytes(a));
      status = -1;
    } else {
      memcpy(dst, buf, len);
    }
    free(buf);
    return status < 0 ? -1 : 1;
  }
  return 0;
}

/* splitmix64, as weir_tensor_fill_random: the same seed gives the same
 * values as `weir run --seed`. */
static uint64_t mix64(uint64_t *state) {
  uint64_t z = (*state += UINT64_C(0x9e3779b97f4a7c15));
  z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

/* Floats uniform in [-1, 1), integers in [0, 10), bool 0/1. */
static void generate(const Arg *a, uint64_t seed, void *dst) {
  uint64_t state = seed + a->id;
  for (int64_t i = 0; i < a->count; i++) {
    uint64_t r = mix64(&state);
    double u = (double)(r >> 11) / 9007199254740992.0;
    switch (a->dtype) {
    case DT_F32:
      ((float *)dst)[i] = (float)(2.0 * u - 1.0);
      break;
    case DT_F64:
      ((double *)dst)[i] = 2.0 * u - 1.0;
      break;
    case DT_I32:
      ((int32_t *)dst)[i] = (int32_t)(r % 10);
      break;
    case DT_I64:
      ((int64_t *)dst)[i] = (int64_t)(r % 10);
      break;
    case DT_BOOL:
      ((uint8_t *)dst)[i] = (uint8_t)(r & 1);
      break;
    default:
      ((uint8_t *)dst)[i] = (uint8_t)(r % 10);
      break;
    }
  }
}

static double element(const Arg *a, const void *p, int64_t i) {
  switch (a->dtype) {
  case DT_F32:
    return ((const float *)p)[i];
  case DT_F64:
    return ((const double *)p)[i];
  case DT_I32:
    return ((const int32_t *)p)[i];
  case DT_I64:
    return (double)((const int64_t *)p)[i];
  default:
    return ((const uint8_t *)p)[i];
  }
}

/* Compares got with want: floats |got - want| <= atol + rtol * |want| (NaN
 * equals NaN), integers exactly.  Returns the number of mismatches. */
static int64_t compare(const Arg *a, const void *got, const void *want,
                       double rtol, double atol, double *max_abs,
                       double *max_rel, int64_t *first) {
  int is_float = a->dtype == DT_F32 || a->dtype == DT_F64;
  int64_t bad = 0;
  *max_abs = *max_rel = 0;
  *first = -1;
  for (int64_t i = 0; i < a->count; i++) {
    int ok;
    double x = element(a, got, i), y = element(a, want, i);
    if (is_float && (isnan(x) || isnan(y))) {
      ok = isnan(x) && isnan(y);
    } else if (is_float && (isinf(x) || isinf(y))) {
      ok = x == y;
    } else {
      double d = fabs(x - y);
      if (d > *max_abs)
        *max_abs = d;
      if (y != 0 && d / fabs(y) > *max_rel)
        *max_rel = d / fabs(y);
      else if (y == 0 && d > 0)
        *max_rel = INFINITY;
      ok = is_float ? d <= atol + rtol * fabs(y) : x == y;
    }
    if (!ok && bad++ == 0)
      *first = i;
  }
  return bad;
}

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int compare_doubles(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

static void print_seconds(double s) {
  if (s < 1e-3)
    printf("%.2f us", s * 1e6);
  else if (s < 1.0)
    printf("%.3f ms", s * 1e3);
  else
    printf("%.3f s", s);
}

/* Reads the kernel's weights file (written by weir export; format in the
 * README): "WEIRCST1", the number of constants (u64), then per constant
 * its offset and size in bytes (u64 each), then the data, each constant at
 * a 64-byte aligned offset.  The whole file goes into one 64-byte aligned
 * block, so every consts[k] is aligned too.  Exits on a bad file. */
static void *load_weights(const char *path, const void **consts) {
  if (N_CONSTS == 0)
    return NULL;
  FILE *f = fopen(path, "rb");
  if (!f) {
    fprintf(stderr, "harness: %s: %s\n", path, strerror(errno));
    exit(2);
  }
  if (fseek(f, 0, SEEK_END) != 0) {
    fprintf(stderr, "harness: %s: cannot seek\n", path);
    exit(2);
  }
  long size = ftell(f);
  rewind(f);
  unsigned char *data = size > 0 ? xalloc((size_t)size) : NULL;
  if (!data || fread(data, 1, (size_t)size, f) != (size_t)size) {
    fprintf(stderr, "harness: %s: cannot read\n", path);
    exit(2);
  }
  fclose(f);
  uint64_t n = 0;
  if (size < 16 || memcmp(data, "WEIRCST1", 8) != 0 ||
      (memcpy(&n, data + 8, 8), n != N_CONSTS) ||
      (uint64_t)size < 16 + 16 * n) {
    fprintf(stderr,
            "harness: %s is not the weights file of this kernel (%d "
            "constants)\n",
            path, N_CONSTS);
    exit(2);
  }
  for (int k = 0; k < N_CONSTS; k++) {
    uint64_t at, bytes;
    memcpy(&at, data + 16 + 16 * k, 8);
    memcpy(&bytes, data + 24 + 16 * k, 8);
    if (bytes != CONST_BYTES[k] || at % 64 || at > (uint64_t)size ||
        bytes > (uint64_t)size - at) {
      fprintf(stderr, "harness: %s: constant %d (%s) has a bad entry\n", path,
              k, CONST_NAMES[k]);
      exit(2);
    }
    consts[k] = data + at;
  }
  return data;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: ./harness [--reps N] [--warmup N] [--threads N] "
          "[--seed N]\n"
          "                 [--data DIR] [--weights FILE] [--rtol R] "
          "[--atol A]\n"
          "Runs kernel '%s' once on the inputs (DIR/<name>.npy or .bin, "
          "else\n"
          "generated from the seed), compares its outputs with "
          "DIR/<name>.expected.npy,\n"
          "then times --reps runs after --warmup runs.  Exit status: 0 "
          "PASS, 1 FAIL,\n"
          "2 bad usage or data.\n"
          "  --reps N     timed runs (default 10; 0: no timing)\n"
          "  --warmup N   untimed runs before them (default 3)\n"
          "  --threads N  OpenMP threads (default: OMP_NUM_THREADS)\n"
          "  --seed N     seed of generated inputs (default %llu; others "
          "skip the check)\n"
          "  --data DIR   data directory (default: data)\n"
          "  --weights FILE  the kernel's constants (default: %s)\n"
          "  --rtol R     relative tolerance for floats (default %g)\n"
          "  --atol A     absolute tolerance for floats (default %g)\n",
          KERNEL_NAME, (unsigned long long)DEFAULT_SEED, WEIGHTS_FILE,
          DEFAULT_RTOL, DEFAULT_ATOL);
}

/* Parses a non-negative integer option value; exits on bad input. */
static long long number(const char *opt, const char *text) {
  char *end;
  errno = 0;
  long long v = strtoll(text, &end, 10);
  if (errno || end == text || *end || v < 0) {
    fprintf(stderr, "harness: %s %s: expected a non-negative integer\n", opt,
            text);
    exit(2);
  }
  return v;
}

static double real(const char *opt, const char *text) {
  char *end;
  double v = strtod(text, &end);
  if (end == text || *end || !(v >= 0)) {
    fprintf(stderr, "harness: %s %s: expected a non-negative number\n", opt,
            text);
    exit(2);
  }
  return v;
}

int main(int argc, char **argv) {
  long long reps = 10, warmup = 3, threads = 0;
  uint64_t seed = DEFAULT_SEED;
  const char *dir = "data", *weights = WEIGHTS_FILE;
  double rtol = DEFAULT_RTOL, atol = DEFAULT_ATOL;
  for (int i = 1; i < argc; i++) {
    const char *opt = argv[i];
    if (strcmp(opt, "--help") == 0 || strcmp(opt, "-h") == 0) {
      usage(stdout);
      return 0;
    }
    if (i + 1 >= argc) {
      fprintf(stderr, "harness: unknown option or missing value: %s\n", opt);
      usage(stderr);
      return 2;
    }
    const char *val = argv[++i];
    if (strcmp(opt, "--reps") == 0)
      reps = number(opt, val);
    else if (strcmp(opt, "--warmup") == 0)
      warmup = number(opt, val);
    else if (strcmp(opt, "--threads") == 0)
      threads = number(opt, val);
    else if (strcmp(opt, "--seed") == 0)
      seed = (uint64_t)number(opt, val);
    else if (strcmp(opt, "--data") == 0)
      dir = val;
    else if (strcmp(opt, "--weights") == 0)
      weights = val;
    else if (strcmp(opt, "--rtol") == 0)
      rtol = real(opt, val);
    else if (strcmp(opt, "--atol") == 0)
      atol = real(opt, val);
    else {
      fprintf(stderr, "harness: unknown option %s\n", opt);
      usage(stderr);
      return 2;
    }
  }
#ifdef _OPENMP
  if (threads > 0)
    omp_set_num_threads((int)threads);
  int nthreads = omp_get_max_threads();
#else
  int nthreads = 1;
  if (threads > 1)
    fprintf(stderr, "harness: built without OpenMP: --threads ignored\n");
#endif

  printf("kernel '%s': %d arguments, %d symbols, %d thread%s\n", KERNEL_NAME,
         N_ARGS, N_SYMBOLS, nthreads, nthreads == 1 ? "" : "s");
  for (int k = 0; k < N_SYMBOLS; k++)
    printf("  symbol %s = %lld\n", SYMBOL_NAMES[k], (long long)SYMBOLS[k]);

  void *args[N_ARGS]; /* what the kernel works on */
  void *init[N_ARGS]; /* the inputs, restored before every run */
  void *want[N_ARGS]; /* expected outputs, NULL when none */
  int generated = 0, checked = 0;
  char path[4096];
  for (int k = 0; k < N_ARGS; k++) {
    const Arg *a = &ARGS[k];
    args[k] = xalloc(arg_bytes(a));
    init[k] = xalloc(arg_bytes(a));
    want[k] = NULL;
    printf("  %-12s ", a->name);
    print_type(stdout, a);
    int r = load_tensor(dir, a, "", init[k], path, sizeof path);
    if (r < 0)
      return 2;
    if (r == 0) {
      generate(a, seed, init[k]);
      generated++;
      printf("  generated (seed %llu)", (unsigned long long)seed);
    } else {
      printf("  %s", path);
    }
    if (a->output) {
      want[k] = xalloc(arg_bytes(a));
      r = load_tensor(dir, a, ".expected", want[k], path, sizeof path);
      if (r < 0)
        return 2;
      if (r == 0) {
        free(want[k]);
        want[k] = NULL;
        printf("  output (no expected file)");
      } else {
        printf("  output, expected %s", path);
        checked++;
      }
    }
    printf("\n");
  }
  int skip = generated && seed != DEFAULT_SEED;
  if (skip)
    printf("note: the expected outputs hold for inputs generated with seed "
           "%llu: not checked\n",
           (unsigned long long)DEFAULT_SEED);

  /* the constants, bound once; the workspace, allocated once and reused by
   * every run */
  const void *consts[N_CONSTS + 1] = {0};
  void *weight_data = load_weights(weights, consts);
  if (N_CONSTS)
    printf("  %d constants from %s\n", N_CONSTS, weights);
  size_t ws_bytes = KERNEL_WORKSPACE_SIZE(SYMBOLS);
  void *workspace = ws_bytes ? xalloc(ws_bytes) : NULL;

  /* one run to check */
  for (int k = 0; k < N_ARGS; k++)
    memcpy(args[k], init[k], arg_bytes(&ARGS[k]));
  if (KERNEL_RUN(args, SYMBOLS, consts, workspace) != 0) {
    fprintf(stderr, "harness: the kernel failed (out of memory for its "
                    "transients)\n");
    return 2;
  }
  int failed = 0;
  if (!skip && checked) {
    printf("check (rtol %g, atol %g; integers exact):\n", rtol, atol);
    for (int k = 0; k < N_ARGS; k++) {
      const Arg *a = &ARGS[k];
      if (!want[k])
        continue;
      double max_abs, max_rel;
      int64_t first;
      int64_t bad =
          compare(a, args[k], want[k], rtol, atol, &max_abs, &max_rel, &first);
      printf("  %-12s max abs error %.3g  max rel error %.3g  %s\n", a->name,
             max_abs, max_rel, bad ? "MISMATCH" : "ok");
      if (bad) {
        printf("    %lld of %lld elements differ; first at index %lld: got "
               "%.9g, expected %.9g\n",
               (long long)bad, (long long)a->count, (long long)first,
               element(a, args[k], first), element(a, want[k], first));
        failed = 1;
      }
    }
  }

  if (reps > 0) {
    double *times = malloc((size_t)reps * sizeof(double));
    if (!times) {
      fprintf(stderr, "harness: out of memory\n");
      return 2;
    }
    for (long long r = 0; r < warmup + reps; r++) {
      for (int k = 0; k < N_ARGS; k++)
        memcpy(args[k], init[k], arg_bytes(&ARGS[k]));
      double t0 = now();
      int status = KERNEL_RUN(args, SYMBOLS, consts, workspace);
      double t1 = now();
      if (status != 0) {
        fprintf(stderr, "harness: the kernel failed\n");
        return 2;
      }
      if (r >= warmup)
        times[r - warmup] = t1 - t0;
    }
    qsort(times, (size_t)reps, sizeof(double), compare_doubles);
    double median = reps % 2 ? times[reps / 2]
                             : (times[reps / 2 - 1] + times[reps / 2]) / 2;
    printf("time: median ");
    print_seconds(median);
    printf("  min ");
    print_seconds(times[0]);
    printf("  max ");
    print_seconds(times[reps - 1]);
    printf("  (%lld runs after %lld warm-up)\n", reps, warmup);
    if (median > 0 && (FLOPS >= 0 || TRAFFIC_BYTES >= 0)) {
      printf("     ");
      if (FLOPS >= 0)
        printf(" %.4g GFLOP/s", FLOPS / median * 1e-9);
      if (TRAFFIC_BYTES >= 0)
        printf(" %.4g GB/s of modeled memory traffic (%.0f B with a %.0f B "
               "cache)",
               TRAFFIC_BYTES / median * 1e-9, TRAFFIC_BYTES, TRAFFIC_CACHE);
      printf("\n");
    }
    if (LOGICAL_BYTES >= 0)
      printf("      logical volume %.0f B (what the memlets name, cache hits "
             "included: not memory traffic, so no rate)\n",
             LOGICAL_BYTES);
    free(times);
  }

  for (int k = 0; k < N_ARGS; k++) {
    free(args[k]);
    free(init[k]);
    free(want[k]);
  }
  free(workspace);
  free(weight_data);
  if (skip || !checked) {
    printf("result: NOT CHECKED\n");
    return 0;
  }
  printf("result: %s\n", failed ? "FAIL" : "PASS");
  return failed;
}
