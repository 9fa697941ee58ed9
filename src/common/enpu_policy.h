/* enpu_policy.h — the one table of policies: each policy's code order, name, display name
 * and whether it takes variants. Header-only (macros, no code), so every module can name a
 * policy without a second list: config builds its enum, names, parsers, error and help
 * texts from ENPU_POLICY_TABLE (config_vocab.h), and the plan store's reader, which may
 * use only common and ships alone in libenpu_planstore, picks its default policy by
 * these names (planstore.c).
 *
 * A policy's name is written once, in its ENPU_POLICY_NAME_* macro, and its display name
 * once, in its ENPU_POLICY_DISPLAY_* macro: code that needs one policy's spelling uses the
 * macro (string concatenation in help texts, printf formats, report prose, titles and
 * headers) or config_policy_name() at run time, never the spelling itself
 * (tests/integration/check_source.py fails on a policy's name or display name inside a C
 * string literal anywhere else in src/). The names are part of the file formats and the
 * store layout: never renamed. The display names are for people: figure titles, axis
 * labels, table headers and the prose of reports and help texts. What a policy means is
 * its row in power/power_policy.c; the comment on the table in config/config_vocab.h says
 * what each policy is. */
#ifndef ENPU_POLICY_H
#define ENPU_POLICY_H

#define ENPU_POLICY_NAME_NODVFS "nodvfs"
#define ENPU_POLICY_NAME_DVFS_C "dvfs-c"
#define ENPU_POLICY_NAME_ENPU_C "enpu-c"
#define ENPU_POLICY_NAME_ENPU_ALL "enpu-all"
#define ENPU_POLICY_NAME_IDEAL "ideal"
#define ENPU_POLICY_NAME_DVFS_C_WALK "dvfs-c-walk"
#define ENPU_POLICY_NAME_UNIFORM "uniform"
#define ENPU_POLICY_NAME_DVFS_C_MS "dvfs-c-ms"
#define ENPU_POLICY_NAME_ENPU_MS "enpu-ms"
#define ENPU_POLICY_NAME_ENPU_3DOM "enpu-3dom"
#define ENPU_POLICY_NAME_ENPU_4DOM "enpu-4dom"

/* Display names: the paper's for the five policies it compares (§4.1), then ours for the
 * design-space variants. */
#define ENPU_POLICY_DISPLAY_NODVFS "NoDVFS"
#define ENPU_POLICY_DISPLAY_DVFS_C "DVFS-C"
#define ENPU_POLICY_DISPLAY_ENPU_C "eNPU-C"
#define ENPU_POLICY_DISPLAY_ENPU_ALL "eNPU-All"
#define ENPU_POLICY_DISPLAY_IDEAL "Ideal"
#define ENPU_POLICY_DISPLAY_DVFS_C_WALK "DVFS-C (walk)"
#define ENPU_POLICY_DISPLAY_UNIFORM "Uniform"
#define ENPU_POLICY_DISPLAY_DVFS_C_MS "DVFS-C (ms epochs)"
#define ENPU_POLICY_DISPLAY_ENPU_MS "eNPU-All (ms epochs)"
#define ENPU_POLICY_DISPLAY_ENPU_3DOM "eNPU (3 domains)"
#define ENPU_POLICY_DISPLAY_ENPU_4DOM "eNPU (4 domains)"

/* One row per policy, in code order (the code is part of every farm key and journal
 * record, so rows are only ever appended): X(id, name, display name, variants), where
 * variants says whether the policy takes pg+ and @shadow= variants and sweep points. */
#define ENPU_POLICY_TABLE(X)                                                          \
  X(NODVFS, ENPU_POLICY_NAME_NODVFS, ENPU_POLICY_DISPLAY_NODVFS, true)                \
  X(DVFS_C, ENPU_POLICY_NAME_DVFS_C, ENPU_POLICY_DISPLAY_DVFS_C, true)                \
  X(ENPU_C, ENPU_POLICY_NAME_ENPU_C, ENPU_POLICY_DISPLAY_ENPU_C, true)                \
  X(ENPU_ALL, ENPU_POLICY_NAME_ENPU_ALL, ENPU_POLICY_DISPLAY_ENPU_ALL, true)          \
  X(IDEAL, ENPU_POLICY_NAME_IDEAL, ENPU_POLICY_DISPLAY_IDEAL, true)                   \
  X(DVFS_C_WALK, ENPU_POLICY_NAME_DVFS_C_WALK, ENPU_POLICY_DISPLAY_DVFS_C_WALK, true) \
  X(UNIFORM, ENPU_POLICY_NAME_UNIFORM, ENPU_POLICY_DISPLAY_UNIFORM, false)            \
  X(DVFS_C_MS, ENPU_POLICY_NAME_DVFS_C_MS, ENPU_POLICY_DISPLAY_DVFS_C_MS, true)       \
  X(ENPU_MS, ENPU_POLICY_NAME_ENPU_MS, ENPU_POLICY_DISPLAY_ENPU_MS, true)             \
  X(ENPU_3DOM, ENPU_POLICY_NAME_ENPU_3DOM, ENPU_POLICY_DISPLAY_ENPU_3DOM, true)       \
  X(ENPU_4DOM, ENPU_POLICY_NAME_ENPU_4DOM, ENPU_POLICY_DISPLAY_ENPU_4DOM, true)

/* Power gating on a policy's schedule (§4.7): "pg+<name>", and "pg" alone for pg+nodvfs
 * (its one spelling; config_vocab.h, config_policy_spec). */
#define ENPU_POLICY_GATE_PREFIX "pg+"
#define ENPU_POLICY_GATE_ALONE "pg"

/* The prefix the store's default-policy rule prefers after eNPU-All and eNPU-C: every
 * eNPU policy's name starts with it. */
#define ENPU_POLICY_ENPU_PREFIX "enpu"

#endif /* ENPU_POLICY_H */
