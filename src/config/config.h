/* config.h — job, model, chip and cluster descriptions: loaded from JSON (jansson),
 * validated once, with derived constant tables computed at load; const afterwards.
 *
 * Every input error names file:line:column, the JSON path ($.phases.prefill.batch[3])
 * and what was expected ("expected a positive integer, got -4"). Unknown keys are
 * errors. A job references its model/chip/cluster files by path relative to the job
 * file; a chip references its CSV power tables relative to the chip file.
 *
 * The JSON layout of each file is written next to its struct, in the header of its
 * concern (the includes below), and formally in schemas/<kind>.schema.json. Units are
 * in the key names. */
#ifndef ENPU_CONFIG_H
#define ENPU_CONFIG_H

/* By concern, each with its JSON layout beside its structs: */
#include "config_vocab.h"   /* phases, components, policies, budget modes */
#include "config_model.h"   /* jobs/models/, the Hugging Face importer */
#include "config_chip.h"    /* jobs/chips/ */
#include "config_cluster.h" /* jobs/clusters/ */
#include "config_job.h"     /* jobs/, sweeps, the input-file set */

#endif /* ENPU_CONFIG_H */
