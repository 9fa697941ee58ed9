/* enpu_policy.h — the one table of policies: each policy's code order, name, display name
 * and whether it takes variants. Header-only (macros, no code), so every module can name a
 * policy without a second list: config builds its enum, names, parsers, error and help
 * texts from ENPU_POLICY_TABLE (config_vocab.h), and the plan store's reader, which may
 * use only common and ships alone in libenpu_planstore, picks its default policy by
 * these names (planstore.c).
 *
 * A policy's name is written once, in its ENPU_POLICY_NAME_* macro: code that needs one
 * policy's spelling uses the macro (string concatenation in option help texts) or
 * config_policy_name() at run time, never the spelling itself
 * (tests/integration/check_source.py fails on a policy name inside a C string literal
 * anywhere else in src/). The names are part of the file formats and the store layout:
 * never renamed. The display names are the paper's, for figure titles, axis labels and
 * table headers. What a policy means is its row in power/power_policy.c; the comment on
 * the table in config/config_vocab.h says what each policy is. */
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

/* The paper's display names of the policies it compares (§4.1); the others are ours. */
#define ENPU_POLICY_DISPLAY_NODVFS "NoDVFS"
#define ENPU_POLICY_DISPLAY_DVFS_C "DVFS-C"
#define ENPU_POLICY_DISPLAY_ENPU_C "eNPU-C"
#define ENPU_POLICY_DISPLAY_ENPU_ALL "eNPU-All"
#define ENPU_POLICY_DISPLAY_IDEAL "Ideal"

/* One row per policy, in code order (the code is part of every farm key and journal
 * record, so rows are only ever appended): X(id, name, display name, variants), where
 * variants says whether the policy takes pg+ and @shadow= variants and sweep points. */
#define ENPU_POLICY_TABLE(X)                                                 \
  X(NODVFS, ENPU_POLICY_NAME_NODVFS, ENPU_POLICY_DISPLAY_NODVFS, true)       \
  X(DVFS_C, ENPU_POLICY_NAME_DVFS_C, ENPU_POLICY_DISPLAY_DVFS_C, true)       \
  X(ENPU_C, ENPU_POLICY_NAME_ENPU_C, ENPU_POLICY_DISPLAY_ENPU_C, true)       \
  X(ENPU_ALL, ENPU_POLICY_NAME_ENPU_ALL, ENPU_POLICY_DISPLAY_ENPU_ALL, true) \
  X(IDEAL, ENPU_POLICY_NAME_IDEAL, ENPU_POLICY_DISPLAY_IDEAL, true)          \
  X(DVFS_C_WALK, ENPU_POLICY_NAME_DVFS_C_WALK, "DVFS-C (walk)", true)        \
  X(UNIFORM, ENPU_POLICY_NAME_UNIFORM, "Uniform", false)                     \
  X(DVFS_C_MS, ENPU_POLICY_NAME_DVFS_C_MS, "DVFS-C (ms epochs)", true)       \
  X(ENPU_MS, ENPU_POLICY_NAME_ENPU_MS, "eNPU-All (ms epochs)", true)         \
  X(ENPU_3DOM, ENPU_POLICY_NAME_ENPU_3DOM, "eNPU (3 domains)", true)         \
  X(ENPU_4DOM, ENPU_POLICY_NAME_ENPU_4DOM, "eNPU (4 domains)", true)

/* Power gating on a policy's schedule (§4.7): "pg+<name>", and "pg" alone for pg+nodvfs
 * (its one spelling; config_vocab.h, config_policy_spec). */
#define ENPU_POLICY_GATE_PREFIX "pg+"
#define ENPU_POLICY_GATE_ALONE "pg"

/* The prefix the store's default-policy rule prefers after eNPU-All and eNPU-C: every
 * eNPU policy's name starts with it. */
#define ENPU_POLICY_ENPU_PREFIX "enpu"

#endif /* ENPU_POLICY_H */
