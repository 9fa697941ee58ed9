/* enpu_err.h — the project's error codes and error report: the part of common.h that a
 * library API needs (installed beside <enpu/planstore.h> for its callers), so a serving
 * runtime gets the codes and the message buffer without the rest of common.h.
 *
 * Invariant: the codes are stable; never renumber them: they appear in stores, exit
 * summaries and the callers of libenpu_planstore. */
#ifndef ENPU_ERR_H
#define ENPU_ERR_H

enum {
  ENPU_OK = 0,
  ENPU_ERR_INVALID = -1,    /* bad argument or bad input value */
  ENPU_ERR_NOMEM = -2,      /* allocation failed */
  ENPU_ERR_IO = -3,         /* a file could not be opened, read or written */
  ENPU_ERR_PARSE = -4,      /* malformed syntax (JSON, CSV, command line) */
  ENPU_ERR_RANGE = -5,      /* a value outside its allowed range */
  ENPU_ERR_NOT_FOUND = -6,  /* lookup failed: no covering bucket, unknown op id */
  ENPU_ERR_FORMAT = -7,     /* a file of the wrong format, version, or corrupt */
  ENPU_ERR_INFEASIBLE = -8, /* no plan/bucket satisfies the constraints */
  ENPU_ERR_INTERNAL = -9,   /* a broken invariant: a bug */
  ENPU_ERR_ENV = -10,       /* the environment refused: no space, quota, I/O error,
                               read-only file system, a store locked by another writer.
                               The same command succeeds once the environment is fixed. */
  ENPU_ERR_STOPPED = -11    /* a stop signal ended a wait before anything was done; the
                               same command, rerun, does the work */
};

#define ENPU_ERR_MSG_LEN 1024

/* An error report: the code and a human-readable message naming what went wrong,
 * where (file:line:column, JSON path) and what was expected. */
typedef struct {
  int code;
  char msg[ENPU_ERR_MSG_LEN];
} enpu_err;

#endif /* ENPU_ERR_H */
