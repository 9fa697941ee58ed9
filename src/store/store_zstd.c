/* store_zstd.c — the Zstandard HDF5 filter, registered id 32015 (cd_values[0] = level).
 * The same file is compiled into the store library (registered in-process by
 * store_zstd_register) and, with STORE_ZSTD_PLUGIN defined, into the HDF5 plugin
 * libh5zstd.so that stock h5dump and h5py load through HDF5_PLUGIN_PATH.
 *
 * Invariants: every zstd return code is checked; a chunk read from a file is trusted
 * for nothing — its frame must be a single frame that fills the whole chunk, declare its
 * content size, and that size must equal cd_values[1] (the chunk's uncompressed bytes
 * recorded at dataset creation) or, for files written by other tools without it, not
 * exceed STORE_ZSTD_MAX_BYTES. On any failure the filter returns 0 and leaves *buf as it
 * was, which is how HDF5 expects a filter to fail. */
#include <limits.h>
#include <stdlib.h>
#include <zstd.h>

#include "store_internal.h"

/* HDF5 chunks are limited to 4 GiB; a frame claiming more than 1 GiB without a recorded
 * chunk size is treated as corrupt rather than allocated. */
#define STORE_ZSTD_MAX_BYTES ((size_t)1 << 30)

static size_t zstd_decompress_chunk(size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t *buf_size,
                                    void **buf) {
  size_t bound = cd_nelmts >= 2 ? (size_t)cd_values[1] : STORE_ZSTD_MAX_BYTES;
  if (ZSTD_findFrameCompressedSize(*buf, nbytes) != nbytes) return 0; /* error or trailing bytes */
  unsigned long long size = ZSTD_getFrameContentSize(*buf, nbytes);
  if (size == ZSTD_CONTENTSIZE_UNKNOWN || size == ZSTD_CONTENTSIZE_ERROR) return 0;
  /* HDF5 filters whole chunks, and copies a chunk's size out of whatever comes back: a
   * frame of any other size than the recorded chunk is corrupt. */
  if (size == 0 || size > bound || (cd_nelmts >= 2 && size != bound)) return 0;
  void *out = malloc((size_t)size);
  if (!out) return 0;
  size_t got = ZSTD_decompress(out, (size_t)size, *buf, nbytes);
  if (ZSTD_isError(got) || got != size) {
    free(out);
    return 0;
  }
  free(*buf);
  *buf = out;
  *buf_size = (size_t)size;
  return got;
}

static size_t zstd_compress_chunk(size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t *buf_size,
                                  void **buf) {
  int level = cd_nelmts >= 1 ? (int)cd_values[0] : 0; /* negative levels travel as unsigned */
  if (level < ZSTD_minCLevel() || level > ZSTD_maxCLevel()) return 0;
  size_t cap = ZSTD_compressBound(nbytes);
  if (ZSTD_isError(cap)) return 0;
  void *out = malloc(cap);
  if (!out) return 0;
  size_t got = ZSTD_compress(out, cap, *buf, nbytes, level);
  if (ZSTD_isError(got)) {
    free(out);
    return 0;
  }
  free(*buf);
  *buf = out;
  *buf_size = cap;
  return got;
}

static size_t zstd_filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes,
                          size_t *buf_size, void **buf) {
  if (flags & H5Z_FLAG_REVERSE) return zstd_decompress_chunk(cd_nelmts, cd_values, nbytes, buf_size, buf);
  return zstd_compress_chunk(cd_nelmts, cd_values, nbytes, buf_size, buf);
}

/* Record the chunk's uncompressed size beside the level, so the reader can bound every
 * decompressed chunk. Readers that know only cd_values[0] ignore the extra value. */
static herr_t zstd_set_local(hid_t dcpl, hid_t type, hid_t space) {
  unsigned flags = 0, values[8] = {0};
  size_t nvalues = 8;
  if (H5Pget_filter_by_id2(dcpl, STORE_ZSTD_FILTER_ID, &flags, &nvalues, values, 0, NULL, NULL) < 0) return -1;
  hsize_t dims[H5S_MAX_RANK];
  int rank = H5Pget_chunk(dcpl, H5S_MAX_RANK, dims);
  size_t bytes = H5Tget_size(type);
  if (rank <= 0 || bytes == 0) return -1;
  for (int i = 0; i < rank; i++) {
    if (dims[i] == 0 || bytes > UINT_MAX / dims[i]) return -1;
    bytes *= (size_t)dims[i];
  }
  unsigned out[2] = {nvalues >= 1 ? values[0] : 0, (unsigned)bytes};
  return H5Pmodify_filter(dcpl, STORE_ZSTD_FILTER_ID, flags, 2, out);
}

const H5Z_class2_t store_zstd_class = {
    .version = H5Z_CLASS_T_VERS,
    .id = STORE_ZSTD_FILTER_ID,
    .encoder_present = 1,
    .decoder_present = 1,
    .name = "Zstandard (enpu-farm)",
    .can_apply = NULL,
    .set_local = zstd_set_local,
    .filter = zstd_filter,
};

#ifdef STORE_ZSTD_PLUGIN
#include <H5PLextern.h>

H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }
const void *H5PLget_plugin_info(void) { return &store_zstd_class; }
#else
int store_zstd_register(enpu_err *err) {
  htri_t avail = H5Zfilter_avail(STORE_ZSTD_FILTER_ID);
  ENPU_RETURN_IF(avail < 0, err, ENPU_ERR_INTERNAL, "HDF5: cannot query filter %d", STORE_ZSTD_FILTER_ID);
  if (avail > 0) return ENPU_OK;
  ENPU_RETURN_IF(H5Zregister(&store_zstd_class) < 0, err, ENPU_ERR_INTERNAL,
                 "HDF5: cannot register the zstd filter (id %d)", STORE_ZSTD_FILTER_ID);
  return ENPU_OK;
}
#endif
