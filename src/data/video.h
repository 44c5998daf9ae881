/* src/data/video.h: camera frames of a LeRobot dataset, decoded from its mp4 files.
 *
 * Design
 *
 *  - One decoder per (file, video stream), opened by the caller and kept open: a loader thread
 *    holds its own decoders (a decoder is not thread-safe; different decoders run in parallel).
 *    FFmpeg does the work: libavformat demuxes, libavcodec decodes (AV1 through libdav1d, as
 *    LeRobot's files need; H.264, HEVC and the rest through FFmpeg's own decoders), libswscale
 *    converts to RGB.
 *
 *  - Frame lookup is LeRobot's: a request for time t (seconds, in the file's clock: for v3
 *    files that is the episode's from_timestamp plus the row's timestamp) returns the frame whose
 *    presentation time is nearest to t, and fails when that frame is more than tolerance_s away
 *    (LeRobot's default 1e-4 s). A frame's time is pts x stream time base, as LeRobot's pyav and
 *    torchcodec backends compute it (no start_time offset: lerobot's files start at 0). Two
 *    deliberate differences, both at the margin: we compare in float64 where LeRobot builds
 *    float32 tensors (whose 1.2e-4 s resolution beyond 1024 s into a long concatenated v3 file
 *    can fail a 1e-4 tolerance spuriously), and a distance equal to the tolerance passes
 *    (LeRobot's test is strict).
 *
 *  - Random access: seek to the keyframe at or before t, decode forward keeping the last two
 *    frames, stop at the first frame at or after t, and answer with the nearer of the two
 *    (ties: the earlier, like LeRobot's argmin). A slack of min(tolerance_s, 1/4 frame) saves
 *    work for timestamps that miss a frame time by a rounding error (LeRobot's float32
 *    timestamps do, by ~1e-8 s): the seek aims at t + slack, so a query a hair below a
 *    keyframe does not start one GOP earlier, and decoding stops at t - slack, so a query a
 *    hair above a frame does not decode the next one. This assumes frames more than 4 x slack
 *    apart, which constant-rate video always is. With B-frames (H.264/HEVC), where a keyframe
 *    is indexed by its decode time, a seek that lands after t is retried further back.
 *
 *  - Reuse: the open decoder keeps its position. A request that falls between the two frames
 *    it holds is answered without decoding; a later request whose keyframe is at or before the
 *    frame after the last decoded one decodes forward without seeking (consecutive frames cost
 *    one decode each; the container's keyframe index tells). rt_video_decode_batch() sorts
 *    several timestamps of one file and decodes forward once.
 *
 *  - Output: RGB, float32, channel-major (C x H x W), values v/255 in [0, 1], like LeRobot's
 *    uint8 -> float conversion. The YUV -> RGB conversion is the one FFmpeg's command line makes
 *    for `-pix_fmt rgb24` (swscale, bicubic flags, the stream's colour matrix when tagged, else
 *    BT.601; its colour range when tagged, else limited), so `ffmpeg -f rawvideo -pix_fmt rgb24`
 *    is a byte-exact reference.
 *
 *  - Threads: `threads` is the decoder's own thread count. Default 1: loader threads already
 *    decode different samples in parallel. No frame threading, which decodes frames ahead that
 *    a random access throws away: dav1d runs in low-delay mode (its threads work inside one
 *    frame), other decoders use slice threads.
 *
 *  - Memory: the packet, the two frames, the swscale context and the RGB buffer are allocated
 *    at open or with the first frame and reused; a decode allocates nothing of ours (a batch of
 *    more than 64 timestamps allocates its sort order). FFmpeg's demuxer allocates each packet's
 *    payload; decoders take frames from their pools.
 *
 *  - FFmpeg's log: its default level ("info") prints a banner per decoder; the first open
 *    lowers it to "error" unless the program has set a level. Problems reach the caller as
 *    GErrors.
 *
 *  - Safety: files are opened with protocol_whitelist=file and a demuxer whitelist (MP4/MOV,
 *    Matroska/WebM, AVI), so a crafted "mp4" cannot make FFmpeg fetch URLs or read playlists.
 */
#ifndef ROBOTRAIN_DATA_VIDEO_H
#define ROBOTRAIN_DATA_VIDEO_H

#include <stddef.h>
#include <stdint.h>

#include <glib.h>

G_BEGIN_DECLS

/* LeRobot's default tolerance between a requested timestamp and the decoded frame's. */
#define RT_VIDEO_DEFAULT_TOLERANCE_S 1e-4

typedef struct rt_video_decoder rt_video_decoder;

/* Opens the first video stream of `path` with a decoder using `threads` threads (0 means 1).
 * Fails (RT_ERROR_NOT_FOUND, RT_ERROR_FORMAT, RT_ERROR_UNSUPPORTED, RT_ERROR_IO) naming the
 * file when it cannot be read, has no video stream, or no decoder exists for its codec.
 * Returns (transfer full): free with rt_video_decoder_free(). */
rt_video_decoder *rt_video_decoder_open(const char *path, int threads, GError **error);

/* Frees the decoder and everything it holds; NULL is allowed. */
void rt_video_decoder_free(rt_video_decoder *dec);

/* Facts about the open stream. Strings are owned by the decoder. */
const char *rt_video_decoder_path(const rt_video_decoder *dec);
const char *rt_video_decoder_codec_name(const rt_video_decoder *dec); /* e.g. "libdav1d" */
int rt_video_decoder_width(const rt_video_decoder *dec);
int rt_video_decoder_height(const rt_video_decoder *dec);
/* Average frame rate in frames per second; 0 when the container does not say. */
double rt_video_decoder_fps(const rt_video_decoder *dec);
/* Frame count from the container (the MP4 sample table); 0 when unknown. */
int64_t rt_video_decoder_frame_count(const rt_video_decoder *dec);
/* Stream duration in seconds; 0 when unknown. */
double rt_video_decoder_duration(const rt_video_decoder *dec);
/* Number of floats one frame takes: 3 x height x width. */
size_t rt_video_decoder_frame_floats(const rt_video_decoder *dec);

/* Counters since open, for tests and benchmarks. */
typedef struct {
    uint64_t frames_decoded; /* frames received from the decoder */
    uint64_t seeks;          /* seeks (each flushes the decoder) */
} rt_video_stats;
void rt_video_decoder_get_stats(const rt_video_decoder *dec, rt_video_stats *stats);

/* Decodes the frame nearest to `timestamp_s` into `chw_out` (rt_video_decoder_frame_floats()
 * floats, caller-owned). Fails with RT_ERROR_INVALID_ARG when the nearest frame is farther than
 * `tolerance_s` (the message names the file, both timestamps and the tolerance), with
 * RT_ERROR_FORMAT when the file is corrupt or ends early. After an error the decoder stays
 * usable (the next request seeks). */
gboolean rt_video_decode_at(rt_video_decoder *dec, double timestamp_s, double tolerance_s,
                            float *chw_out, GError **error);

/* Decodes `n` frames of one file at `timestamps_s` (any order, duplicates allowed) into
 * `chw_out`, frame i at chw_out + i x rt_video_decoder_frame_floats(). The requests are served
 * in time order, so the file is decoded forward once. Fails like rt_video_decode_at() on the
 * first timestamp that fails (earlier frames of the batch may have been written). */
gboolean rt_video_decode_batch(rt_video_decoder *dec, const double *timestamps_s, size_t n,
                               double tolerance_s, float *chw_out, GError **error);

G_END_DECLS

#endif
