/* weir-hw.h — the hardware profile: what the machine's CPU can do, detected
 * (vector ISA, cores, cache sizes) and measured (peak FLOP/s, memory
 * bandwidth).  The kernels of core/kernels/ take their ISA and blocking
 * sizes from the detected part; the measured part is what benchmarks and
 * rooflines compare against (docs/hardware.md).
 *
 * Detection is cheap and done on every call.  Measurement takes about two
 * seconds, so it is done once and cached as JSON in
 * g_get_user_cache_dir()/weir/hw.json (or $WEIR_HW_PROFILE), keyed by the
 * CPU model, its flags and the number of logical cores: a cached profile
 * whose key differs from the machine's is measured again.
 *
 * $WEIR_ISA (avx512f, avx2+fma or generic) lowers the ISA that detection
 * reports (and so what kernels are emitted for); it never raises it above
 * what the CPU supports, and an unknown value is ignored.
 * $WEIR_HW_CACHES ("L1D,L2,L3" in bytes) replaces the detected cache sizes
 * (tests pin the generated code with it and WEIR_ISA=generic).
 * $WEIR_HW_VNNI=0 hides AVX512_VNNI (int8_dot) from the kernels.
 */
#ifndef WEIR_HW_H
#define WEIR_HW_H

#include "weir-types.h"

G_BEGIN_DECLS

typedef enum {
  WEIR_HW_ISA_GENERIC = 0, /* portable C, whatever the compiler makes of it */
  WEIR_HW_ISA_AVX2 = 1,    /* AVX2 and FMA: 8 floats per vector */
  WEIR_HW_ISA_AVX512 = 2,  /* AVX-512F (with FMA): 16 floats per vector */
} WeirHwIsa;

typedef struct {
  char *key;       /* owned: hex SHA-256 of model, flags and logical cores */
  char *cpu_model; /* owned: "model name" of /proc/cpuinfo, or "unknown" */
  WeirHwIsa isa;
  guint vector_floats;  /* f32 lanes of one vector register of isa */
  guint logical_cores;  /* online logical CPUs */
  guint physical_cores; /* distinct (package, core) pairs; logical if unknown */
  gint64 l1d_bytes;     /* per core, 0 when unknown (as for the others) */
  gint64 l2_bytes;
  gint64 l3_bytes;
  /* Measured (all 0 when measured is FALSE). */
  gboolean measured;
  double peak_gflops_1t;  /* f32 FMA throughput of one thread, GFLOP/s */
  double peak_gflops_all; /* the same on logical_cores threads at once */
  double bandwidth_gbs;   /* triad over buffers far larger than the caches */
  /* The 1-minute load average when it was measured (/proc/loadavg; -1
   * when unknown): a busy machine gives low figures (docs/hardware.md). */
  double load_average;
  /* Measured: the largest working set (bytes, of a one-thread triad over
   * sizes doubling from 256 KiB) still served at half or more of the
   * best bandwidth seen: the cache a program effectively has, which is
   * far below l3_bytes on a virtual machine reporting the host's whole L3
   * (0 when unknown, e.g. a profile cached before it was measured). */
  gint64 cache_knee_bytes;
  /* Detected (not stored in the JSON): the dot-product instructions of
   * AVX-512 that Weir's int8 and bf16 kernels use, only when isa is
   * avx512f.  int8_dot: AVX512_VNNI with AVX512BW (vpdpbusd, four u8 x s8
   * products into an int32 lane); bf16_dot: AVX512_BF16 (vdpbf16ps).
   * $WEIR_HW_VNNI=0 turns int8_dot off (the int8 kernel then takes its
   * AVX2 path; docs/native.md). */
  gboolean int8_dot;
  gboolean bf16_dot;
} WeirHwProfile;

/* Canonical name of an ISA ("avx512f", "avx2+fma", "generic"). (borrowed) */
WEIR_API const char *weir_hw_isa_name(WeirHwIsa isa);
/* The ISA named name; FALSE for an unknown name. */
WEIR_API gboolean weir_hw_isa_from_name(const char *name, WeirHwIsa *out);

/* The detected part of the profile (measured = FALSE); never fails: what
 * cannot be read is 0 / "unknown".  Honours $WEIR_ISA. (transfer full) */
/**
 * weir_hw_detect: (skip)
 */
WEIR_API WeirHwProfile *weir_hw_detect(void);

/* The full profile: detection plus the measurements cached at path (NULL:
 * weir_hw_profile_path()).  The measurements are taken, and the file
 * (re)written, when remeasure is TRUE, when the file is missing or
 * unreadable, or when its key is not this machine's.  A file that cannot
 * be written is an error naming it (the measurement is lost). (transfer
 * full) */
/**
 * weir_hw_profile_load: (skip)
 */
WEIR_API WeirHwProfile *
weir_hw_profile_load(const char *path, gboolean remeasure, GError **error);
/* weir_hw_profile_load(NULL, remeasure, error). */
/**
 * weir_hw_profile_get: (skip)
 */
WEIR_API WeirHwProfile *weir_hw_profile_get(gboolean remeasure, GError **error);
/* $WEIR_HW_PROFILE when set, else g_get_user_cache_dir()/weir/hw.json.
 * (transfer full) */
WEIR_API char *weir_hw_profile_path(void);

/* The detected part plus the cached measurement when the cache file
 * (weir_hw_profile_path()) holds one for this machine; never measures
 * (measured is FALSE without it).  For figures that are cheap to print
 * and need no measurement of their own. (transfer full) */
/**
 * weir_hw_profile_cached: (skip)
 */
WEIR_API WeirHwProfile *weir_hw_profile_cached(void);

/* The cache size the modeled memory traffic assumes
 * (weir_analysis_compute_traffic, docs/analysis.md): the measured knee
 * (cache_knee_bytes) when known, else the private L2s plus a 2 MiB share
 * of the L3 per physical core; never more than the last-level cache
 * detected (or set by $WEIR_HW_CACHES).  0 when no cache is known. */
WEIR_API gint64 weir_hw_model_cache_bytes(const WeirHwProfile *p);

/* Takes the measurements now, filling the measured fields of p. */
WEIR_API void weir_hw_measure(WeirHwProfile *p);
/* How many times this process has run weir_hw_measure (for tests). */
WEIR_API guint weir_hw_measure_count(void);

/* JSON text of p (deterministic: fixed field order). (transfer full) */
WEIR_API char *weir_hw_profile_to_json(const WeirHwProfile *p);
/* The profile in JSON text; errors name what is missing or wrong, with
 * where (a file name, or "JSON") in front. (transfer full) */
/**
 * weir_hw_profile_from_json: (skip)
 */
WEIR_API WeirHwProfile *
weir_hw_profile_from_json(const char *text, const char *where, GError **error);

/**
 * weir_hw_profile_copy: (skip)
 */
WEIR_API WeirHwProfile *weir_hw_profile_copy(const WeirHwProfile *p);
WEIR_API void weir_hw_profile_free(WeirHwProfile *p);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(WeirHwProfile, weir_hw_profile_free)

G_END_DECLS

#endif
