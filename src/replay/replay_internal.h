/* replay_internal.h — the result of a run as the simulator fills it and the output code
 * reads it. Private to src/replay. */
#ifndef ENPU_REPLAY_INTERNAL_H
#define ENPU_REPLAY_INTERNAL_H

#include "replay.h"

struct replay_result {
  replay_summary summary;
  replay_request_result *requests; /* summary.requests entries, trace order */
  replay_window *windows;
  size_t nwindows, windows_cap;
  const config_cluster *cluster;   /* class names for the CSV (owned by the caller) */
};

#endif /* ENPU_REPLAY_INTERNAL_H */
