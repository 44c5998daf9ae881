/* robotrain/safetensors.h: reading and writing safetensors files.
 *
 * safetensors is the tensor file format of the Hugging Face ecosystem (LeRobot's
 * model.safetensors checkpoints, backbone weights, the golden reference tensors). A file is
 *
 *     u64 little-endian N | N bytes of UTF-8 JSON | data
 *
 * where the JSON is one object {"name": {"dtype": "F32", "shape": [2, 3],
 * "data_offsets": [begin, end]}, ..., "__metadata__": {"key": "value", ...}} and the data are the
 * tensors' raw little-endian, row-major bytes; offsets count from the end of the header.
 *
 * Reading maps the file and checks the header as strictly as the reference (Rust) library does:
 * known dtypes, element count x dtype size == end - begin, offsets inside the data, and the
 * tensors tile the data region exactly (no overlap, no hole, no trailing bytes). Any violation is
 * a RT_ERROR_FORMAT error naming the file, the tensor or key, and the problem. An open file is
 * read-only and may be used from several threads at once.
 *
 * Writing produces the same bytes as the reference writer (Python's safetensors.torch.save_file):
 * tensors ordered by descending dtype alignment, then by name (so every tensor's data is aligned
 * to its element size), compact JSON with "__metadata__" first (its keys sorted here), header
 * padded with spaces to a multiple of 8. The file is written to a temporary file beside the
 * target, synced and renamed over it, so the target path holds either the old or the new file.
 */
#ifndef ROBOTRAIN_SAFETENSORS_H
#define ROBOTRAIN_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

G_BEGIN_DECLS

/* ---- element types ---------------------------------------------------------------------- */

/* The safetensors dtypes robotrain knows, in the reference library's order of increasing
 * alignment (its writer sorts by this order; so does ours). */
typedef enum rt_st_dtype {
    RT_ST_BOOL, /* 1 byte, 0 or 1 */
    RT_ST_U8,
    RT_ST_I8,
    RT_ST_F8_E5M2, /* 1-byte floats: stored and copied, not converted */
    RT_ST_F8_E4M3,
    RT_ST_I16,
    RT_ST_U16,
    RT_ST_F16,  /* IEEE 754 binary16 */
    RT_ST_BF16, /* bfloat16: the top half of a float32 */
    RT_ST_I32,
    RT_ST_U32,
    RT_ST_F32,
    RT_ST_F64,
    RT_ST_I64,
    RT_ST_U64,
    RT_ST_N_DTYPES
} rt_st_dtype;

/* The dtype's name as the header spells it ("F32"), or NULL when dtype is not a rt_st_dtype. */
const char *rt_st_dtype_name(rt_st_dtype dtype);
/* Looks up a header name ("BF16"); FALSE (and *dtype untouched) when it is unknown. Exact and
 * case-sensitive, as in the format. */
gboolean rt_st_dtype_from_name(const char *name, rt_st_dtype *dtype);
/* Bytes per element (1, 2, 4 or 8), or 0 when dtype is not a rt_st_dtype. */
size_t rt_st_dtype_size(rt_st_dtype dtype);

/* ---- float16 / bfloat16 ----------------------------------------------------------------- */

/* Widening is exact. Narrowing rounds to nearest, ties to even (as PyTorch's .half() and
 * .bfloat16() do); values beyond the range become infinities, NaNs stay NaNs (quiet, sign
 * kept). The bits are the values' little-endian storage as a host integer. */
float rt_st_f16_to_f32(uint16_t bits);
uint16_t rt_st_f32_to_f16(float value);
float rt_st_bf16_to_f32(uint16_t bits);
uint16_t rt_st_f32_to_bf16(float value);
/* Array forms; src and dst must not overlap. */
void rt_st_f16_to_f32_n(const uint16_t *src, float *dst, size_t n);
void rt_st_f32_to_f16_n(const float *src, uint16_t *dst, size_t n);
void rt_st_bf16_to_f32_n(const uint16_t *src, float *dst, size_t n);
void rt_st_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n);

/* ---- reading ---------------------------------------------------------------------------- */

/* Headers longer than this are refused (the reference library's limit). */
#define RT_SAFETENSORS_MAX_HEADER 100000000u

/* One tensor of an open file. Everything it points to is owned by the file and valid until
 * rt_safetensors_close(). */
typedef struct rt_st_tensor {
    const char *name; /* UTF-8; any string but "__metadata__" */
    rt_st_dtype dtype;
    int rank;             /* 0 for a scalar */
    const int64_t *shape; /* rank dimensions, each >= 0 (NULL when rank is 0) */
    int64_t n_elements;   /* product of shape; 1 for a scalar, 0 for an empty tensor */
    size_t n_bytes;       /* n_elements * rt_st_dtype_size(dtype) */
    uint64_t offset;      /* data_offsets[0]: byte offset in the data region */
    /* The raw little-endian bytes, read-only. Aligned to the element size when the file's
     * writer aligned it (the reference writer and ours do; other writers may not): read
     * through memcpy or rt_safetensors_copy_f32() when in doubt. */
    const void *data;
} rt_st_tensor;

typedef struct rt_safetensors rt_safetensors;

/* Maps and checks a file. Returns (transfer full) the open file, freed with
 * rt_safetensors_close(); NULL with error set (RT_ERROR_NOT_FOUND when path does not exist,
 * RT_ERROR_IO when it cannot be read, RT_ERROR_FORMAT when it is not a valid safetensors file).
 * The file must not be truncated by someone else while it is open (the mapping would fault);
 * rt_safetensors_writer_write() replaces files by rename, which is safe. */
rt_safetensors *rt_safetensors_open(const char *path, GError **error);
/* Checks a file already in memory: bytes is referenced (not copied) until close; name is what
 * error messages call it. Returns (transfer full) as rt_safetensors_open(). */
rt_safetensors *rt_safetensors_open_bytes(GBytes *bytes, const char *name, GError **error);
/* Frees the file and everything obtained from it. NULL is allowed. */
void rt_safetensors_close(rt_safetensors *st);

/* The path (or name) it was opened with. */
const char *rt_safetensors_path(const rt_safetensors *st);
/* Number of tensors; index order is the order of their data in the file (ascending
 * data_offsets; empty tensors sharing an offset keep their header order). */
size_t rt_safetensors_n_tensors(const rt_safetensors *st);
/* The tensor at index (< rt_safetensors_n_tensors()), or NULL when out of range. */
const rt_st_tensor *rt_safetensors_tensor_at(const rt_safetensors *st, size_t index);
/* The tensor called name, or NULL when there is none. */
const rt_st_tensor *rt_safetensors_find(const rt_safetensors *st, const char *name);
/* As rt_safetensors_find(), but also checks its dtype and, when rank >= 0, its shape (rank
 * dimensions); a missing tensor is RT_ERROR_NOT_FOUND, a mismatch RT_ERROR_FORMAT, both naming
 * the file, the tensor, what was expected and what was found. */
const rt_st_tensor *rt_safetensors_expect(const rt_safetensors *st, const char *name, rt_st_dtype dtype,
                                          int rank, const int64_t *shape, GError **error);
/* Copies a floating-point tensor (F32, F16, BF16 or F64) into dst as float32, converting; F64
 * rounds to nearest. n must equal its element count. Works whatever the data's alignment. */
gboolean rt_safetensors_copy_f32(const rt_safetensors *st, const rt_st_tensor *tensor, float *dst, size_t n,
                                 GError **error);

/* The "__metadata__" value for key, or NULL when absent. Owned by the file. */
const char *rt_safetensors_metadata(const rt_safetensors *st, const char *key);
/* The metadata keys in header order, NULL-terminated (empty when there is no metadata). Owned by
 * the file. */
const char *const *rt_safetensors_metadata_keys(const rt_safetensors *st);

/* ---- writing ---------------------------------------------------------------------------- */

typedef struct rt_safetensors_writer rt_safetensors_writer;

/* Returns (transfer full) an empty list of tensors, freed with rt_safetensors_writer_free(). */
rt_safetensors_writer *rt_safetensors_writer_new(void);
/* Frees the writer (not the tensors' data, which it borrows). NULL is allowed. */
void rt_safetensors_writer_free(rt_safetensors_writer *writer);

/* Adds a tensor. name and shape are copied; data (n_elements * dtype size bytes, row-major,
 * little-endian) is borrowed and must stay valid and unchanged until the last
 * rt_safetensors_writer_write(). data may be NULL only for an empty tensor. Fails with
 * RT_ERROR_INVALID_ARG on a name that is not UTF-8, is "__metadata__" or is already added, on an
 * unknown dtype, a negative dimension or a size that overflows. */
gboolean rt_safetensors_writer_add(rt_safetensors_writer *writer, const char *name, rt_st_dtype dtype,
                                   int rank, const int64_t *shape, const void *data, GError **error);
/* Sets (or replaces) a "__metadata__" entry; both strings are copied and must be UTF-8
 * (RT_ERROR_INVALID_ARG otherwise). Metadata is written only when some key is set. */
gboolean rt_safetensors_writer_set_metadata(rt_safetensors_writer *writer, const char *key, const char *value,
                                            GError **error);
/* Writes the file at path: to a temporary file in the same folder, flushed to disk, renamed
 * over path, then the folder synced. On failure (RT_ERROR_IO, or RT_ERROR_INVALID_ARG when the
 * header would exceed RT_SAFETENSORS_MAX_HEADER) the temporary file is removed and whatever was
 * at path before is untouched; a process killed mid-write may leave a ".NAME.tmp-XXXXXX" beside
 * it, never a partial NAME. The writer stays usable. */
gboolean rt_safetensors_writer_write(const rt_safetensors_writer *writer, const char *path, GError **error);

G_END_DECLS

#endif
