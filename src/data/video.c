/* Video frames by timestamp through FFmpeg; the design is described in video.h. */
#include "config.h"

#include "data/video.h"

#include <errno.h>
#include <math.h>
#include <string.h>

#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/pixdesc.h>
#include <libswscale/swscale.h>

#include <robotrain/error.h>

/* Demuxers we let FFmpeg probe: what LeRobot writes (MP4) and the usual alternatives. */
#define VIDEO_FORMAT_WHITELIST "mov,mp4,m4a,3gp,3g2,mj2,matroska,webm,avi"

struct rt_video_decoder {
    char *path;
    AVFormatContext *fmt;
    AVCodecContext *codec;
    AVStream *stream;
    int stream_index;
    AVPacket *packet;

    /* The last two decoded frames: frame[cur] is the newest, frame[1 - cur] the one before. */
    AVFrame *frame[2];
    int64_t pts[2];
    int64_t first_pts; /* the first frame decoded since the last seek */
    int cur;
    gboolean have_cur, have_prev;
    gboolean draining;  /* the demuxer is at its end and the decoder was told so */
    gboolean at_eof;    /* the decoder returned its last frame */
    gboolean need_seek; /* decoder state unknown (after an error): seek before decoding */

    double time_base;      /* seconds per pts tick */
    double frame_interval; /* seconds, from the average frame rate; 0 when unknown */
    int width, height;

    /* YUV -> RGB24, the way ffmpeg's command line does it; rebuilt when the format changes. */
    struct SwsContext *sws;
    int sws_format;
    int sws_colorspace, sws_range; /* colour details last applied */
    int sws_default_src_full;      /* source range of a fresh context (yuvj formats: full) */
    uint8_t *rgb;
    int rgb_stride;
    float to_unit[256]; /* v -> v / 255.0f, the value LeRobot's uint8 -> float gives */

    rt_video_stats stats;
};

static void set_av_error(GError **error, int code, const char *path, const char *what, int averr)
{
    char text[AV_ERROR_MAX_STRING_SIZE];
    av_strerror(averr, text, sizeof text);
    g_set_error(error, RT_ERROR, code, "video '%s': %s: %s", path, what, text);
}

/* AV1 in FFmpeg 5.x: the native "av1" decoder only drives hardware, so pick a software one. */
static const AVCodec *find_decoder(enum AVCodecID id)
{
    if (id == AV_CODEC_ID_AV1) {
        static const char *const names[] = {"libdav1d", "libaom-av1"};
        for (size_t i = 0; i < G_N_ELEMENTS(names); i++) {
            const AVCodec *c = avcodec_find_decoder_by_name(names[i]);
            if (c)
                return c;
        }
        return NULL;
    }
    return avcodec_find_decoder(id);
}

static gboolean open_input(rt_video_decoder *dec, GError **error)
{
    AVDictionary *opts = NULL;
    av_dict_set(&opts, "protocol_whitelist", "file", 0);
    av_dict_set(&opts, "format_whitelist", VIDEO_FORMAT_WHITELIST, 0);
    int ret = avformat_open_input(&dec->fmt, dec->path, NULL, &opts);
    av_dict_free(&opts);
    if (ret == AVERROR(ENOENT)) {
        g_set_error(error, RT_ERROR, RT_ERROR_NOT_FOUND,
                    "video '%s' does not exist: check the dataset's videos/ folder (a download "
                    "may be incomplete)", dec->path);
        return FALSE;
    }
    if (ret == AVERROR(EACCES) || ret == AVERROR(EPERM) || ret == AVERROR(EISDIR) ||
        ret == AVERROR(EIO)) {
        set_av_error(error, RT_ERROR_IO, dec->path, "cannot open", ret);
        return FALSE;
    }
    if (ret < 0) { /* no whitelisted demuxer recognised it, or its header is damaged */
        char text[AV_ERROR_MAX_STRING_SIZE];
        av_strerror(ret, text, sizeof text);
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "video '%s' is not a video file robotrain reads (MP4/MOV, Matroska/WebM, AVI) "
                    "or its header is damaged (FFmpeg: %s); LeRobot datasets store MP4: "
                    "re-download or re-encode the file", dec->path, text);
        return FALSE;
    }

    /* MP4 headers give everything we need; other containers may need a look at the data. */
    ret = av_find_best_stream(dec->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    if (ret >= 0) {
        AVCodecParameters *par = dec->fmt->streams[ret]->codecpar;
        if (par->width <= 0 || par->height <= 0)
            ret = -1;
    }
    if (ret < 0) {
        int info = avformat_find_stream_info(dec->fmt, NULL);
        if (info < 0) {
            set_av_error(error, RT_ERROR_FORMAT, dec->path, "cannot read the stream headers",
                         info);
            return FALSE;
        }
        ret = av_find_best_stream(dec->fmt, AVMEDIA_TYPE_VIDEO, -1, -1, NULL, 0);
    }
    if (ret < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                    "video '%s' has no video stream (%u stream(s) of other kinds): the "
                    "dataset's camera files must hold video", dec->path, dec->fmt->nb_streams);
        return FALSE;
    }
    dec->stream_index = ret;
    dec->stream = dec->fmt->streams[ret];
    for (unsigned i = 0; i < dec->fmt->nb_streams; i++)
        if ((int)i != dec->stream_index)
            dec->fmt->streams[i]->discard = AVDISCARD_ALL;
    return TRUE;
}

static gboolean open_codec(rt_video_decoder *dec, int threads, GError **error)
{
    AVCodecParameters *par = dec->stream->codecpar;
    const AVCodec *codec = find_decoder(par->codec_id);
    if (!codec) {
        const char *name = avcodec_get_name(par->codec_id);
        if (par->codec_id == AV_CODEC_ID_AV1)
            g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                        "video '%s' is AV1, but this FFmpeg has no software AV1 decoder: "
                        "install an FFmpeg built with libdav1d (Debian: libavcodec59)",
                        dec->path);
        else
            g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                        "video '%s' uses codec '%s', for which this FFmpeg has no decoder: "
                        "re-encode it (LeRobot uses AV1) or install a fuller FFmpeg",
                        dec->path, name);
        return FALSE;
    }
    dec->codec = avcodec_alloc_context3(codec);
    if (!dec->codec) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "video '%s': out of memory", dec->path);
        return FALSE;
    }
    int ret = avcodec_parameters_to_context(dec->codec, par);
    if (ret < 0) {
        set_av_error(error, RT_ERROR_FORMAT, dec->path, "bad codec parameters", ret);
        return FALSE;
    }
    dec->codec->pkt_timebase = dec->stream->time_base;
    dec->codec->thread_count = threads;
    /* Slice threads only: frame threads decode ahead, which a random access throws away. AV1
     * has no output reordering, so dav1d can run in low-delay mode (one frame in flight, its
     * threads working inside the frame); H.264/HEVC need their reorder delay. */
    dec->codec->thread_type = FF_THREAD_SLICE;
    if (par->codec_id == AV_CODEC_ID_AV1)
        dec->codec->flags |= AV_CODEC_FLAG_LOW_DELAY;
    ret = avcodec_open2(dec->codec, codec, NULL);
    if (ret < 0) {
        set_av_error(error, RT_ERROR_UNSUPPORTED, dec->path, "cannot open the decoder", ret);
        return FALSE;
    }
    return TRUE;
}

/* FFmpeg logs at "info" by default, and every decoder open prints a banner: quieten it to
 * errors, once, unless the program has chosen a level itself. Our GErrors carry the details. */
static void quieten_ffmpeg_log(void)
{
    static gsize once = 0;
    if (g_once_init_enter(&once)) {
        if (av_log_get_level() == AV_LOG_INFO)
            av_log_set_level(AV_LOG_ERROR);
        g_once_init_leave(&once, 1);
    }
}

rt_video_decoder *rt_video_decoder_open(const char *path, int threads, GError **error)
{
    g_return_val_if_fail(path != NULL, NULL);
    g_return_val_if_fail(threads >= 0, NULL);

    quieten_ffmpeg_log();
    rt_video_decoder *dec = g_new0(rt_video_decoder, 1);
    dec->path = g_strdup(path);
    dec->sws_format = AV_PIX_FMT_NONE;
    dec->need_seek = TRUE;
    for (int i = 0; i < 256; i++)
        dec->to_unit[i] = (float)i / 255.0f;

    if (!open_input(dec, error) || !open_codec(dec, threads ? threads : 1, error))
        goto fail;

    AVCodecParameters *par = dec->stream->codecpar;
    dec->width = par->width;
    dec->height = par->height;
    /* Bounded by what an image buffer can hold (FFmpeg itself refuses larger frames). */
    if (av_image_check_size(dec->width, dec->height, 0, NULL) < 0) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "video '%s' declares a bad frame size %dx%d",
                    path, dec->width, dec->height);
        goto fail;
    }
    dec->time_base = av_q2d(dec->stream->time_base);
    if (!(dec->time_base > 0)) {
        g_set_error(error, RT_ERROR, RT_ERROR_FORMAT, "video '%s' has no stream time base", path);
        goto fail;
    }
    AVRational rate = dec->stream->avg_frame_rate;
    if (rate.num <= 0 || rate.den <= 0)
        rate = dec->stream->r_frame_rate;
    dec->frame_interval = rate.num > 0 && rate.den > 0 ? av_q2d(av_inv_q(rate)) : 0;

    dec->packet = av_packet_alloc();
    dec->frame[0] = av_frame_alloc();
    dec->frame[1] = av_frame_alloc();
    dec->rgb_stride = FFALIGN(dec->width * 3, 64);
    dec->rgb = av_malloc((size_t)dec->rgb_stride * dec->height);
    if (!dec->packet || !dec->frame[0] || !dec->frame[1] || !dec->rgb) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED, "video '%s': out of memory", path);
        goto fail;
    }
    return dec;

fail:
    rt_video_decoder_free(dec);
    return NULL;
}

void rt_video_decoder_free(rt_video_decoder *dec)
{
    if (!dec)
        return;
    sws_freeContext(dec->sws);
    av_free(dec->rgb);
    av_frame_free(&dec->frame[0]);
    av_frame_free(&dec->frame[1]);
    av_packet_free(&dec->packet);
    avcodec_free_context(&dec->codec);
    avformat_close_input(&dec->fmt);
    g_free(dec->path);
    g_free(dec);
}

const char *rt_video_decoder_path(const rt_video_decoder *dec) { return dec->path; }
const char *rt_video_decoder_codec_name(const rt_video_decoder *dec) { return dec->codec->codec->name; }
int rt_video_decoder_width(const rt_video_decoder *dec) { return dec->width; }
int rt_video_decoder_height(const rt_video_decoder *dec) { return dec->height; }
double rt_video_decoder_fps(const rt_video_decoder *dec)
{
    return dec->frame_interval > 0 ? 1.0 / dec->frame_interval : 0;
}
int64_t rt_video_decoder_frame_count(const rt_video_decoder *dec) { return dec->stream->nb_frames; }
double rt_video_decoder_duration(const rt_video_decoder *dec)
{
    if (dec->stream->duration != AV_NOPTS_VALUE)
        return dec->stream->duration * dec->time_base;
    if (dec->fmt->duration != AV_NOPTS_VALUE)
        return dec->fmt->duration / (double)AV_TIME_BASE;
    return 0;
}
size_t rt_video_decoder_frame_floats(const rt_video_decoder *dec)
{
    return (size_t)3 * dec->width * dec->height;
}
void rt_video_decoder_get_stats(const rt_video_decoder *dec, rt_video_stats *stats)
{
    *stats = dec->stats;
}

static double seconds(const rt_video_decoder *dec, int64_t pts) { return pts * dec->time_base; }

/* The last pts tick at or before t (t finite). */
static int64_t pts_at_or_before(const rt_video_decoder *dec, double t)
{
    double ticks = floor(t / dec->time_base);
    if (ticks < -9e18)
        return INT64_MIN / 2;
    if (ticks > 9e18)
        return INT64_MAX / 2;
    return (int64_t)ticks;
}

static void forget_frames(rt_video_decoder *dec)
{
    av_frame_unref(dec->frame[0]);
    av_frame_unref(dec->frame[1]);
    dec->have_cur = dec->have_prev = FALSE;
    dec->draining = dec->at_eof = FALSE;
}

static gboolean seek_to(rt_video_decoder *dec, int64_t pts, GError **error)
{
    int ret = av_seek_frame(dec->fmt, dec->stream_index, pts, AVSEEK_FLAG_BACKWARD);
    if (ret < 0) /* before the first keyframe, for demuxers that do not clamp */
        ret = avformat_seek_file(dec->fmt, dec->stream_index, INT64_MIN, pts, pts, 0);
    if (ret < 0)
        ret = avformat_seek_file(dec->fmt, dec->stream_index, INT64_MIN, INT64_MIN, INT64_MAX, 0);
    if (ret < 0) {
        set_av_error(error, RT_ERROR_FORMAT, dec->path, "cannot seek", ret);
        dec->need_seek = TRUE;
        return FALSE;
    }
    avcodec_flush_buffers(dec->codec);
    forget_frames(dec);
    dec->need_seek = FALSE;
    dec->stats.seeks++;
    return TRUE;
}

/* Moves the next decoded frame into frame[cur] (the old one becomes the previous frame).
 * Returns 1 with a frame, 0 at the end of the stream, -1 on error (then the next request
 * seeks). */
static int decode_next(rt_video_decoder *dec, GError **error)
{
    int slot = 1 - dec->cur;
    AVFrame *frame = dec->frame[slot];
    if (dec->at_eof)
        return 0;
    for (;;) {
        av_frame_unref(frame);
        int ret = avcodec_receive_frame(dec->codec, frame);
        if (ret == 0) {
            int64_t pts = frame->pts != AV_NOPTS_VALUE ? frame->pts : frame->best_effort_timestamp;
            if (pts == AV_NOPTS_VALUE) {
                g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                            "video '%s' has a frame without a timestamp: re-mux it as MP4",
                            dec->path);
                goto fail;
            }
            dec->pts[slot] = pts;
            if (!dec->have_cur)
                dec->first_pts = pts;
            dec->cur = slot;
            dec->have_prev = dec->have_cur;
            dec->have_cur = TRUE;
            dec->stats.frames_decoded++;
            return 1;
        }
        if (ret == AVERROR_EOF) {
            dec->at_eof = TRUE;
            return 0;
        }
        if (ret != AVERROR(EAGAIN)) {
            set_av_error(error, RT_ERROR_FORMAT, dec->path, "cannot decode a frame", ret);
            goto fail;
        }
        if (dec->draining) { /* a decoder that wants input after the end: treat as the end */
            dec->at_eof = TRUE;
            return 0;
        }
        ret = av_read_frame(dec->fmt, dec->packet);
        if (ret == AVERROR_EOF) {
            dec->draining = TRUE;
            ret = avcodec_send_packet(dec->codec, NULL);
            if (ret < 0 && ret != AVERROR_EOF) {
                set_av_error(error, RT_ERROR_FORMAT, dec->path, "cannot finish decoding", ret);
                goto fail;
            }
            continue;
        }
        if (ret < 0) {
            set_av_error(error, RT_ERROR_IO, dec->path, "cannot read", ret);
            goto fail;
        }
        if (dec->packet->stream_index != dec->stream_index) {
            av_packet_unref(dec->packet);
            continue;
        }
        if (dec->packet->flags & AV_PKT_FLAG_CORRUPT) {
            double at = dec->packet->pts != AV_NOPTS_VALUE ? seconds(dec, dec->packet->pts) : NAN;
            av_packet_unref(dec->packet);
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "video '%s' is truncated or corrupt: the frame at %.6f s is incomplete; "
                        "re-download the file", dec->path, at);
            goto fail;
        }
        ret = avcodec_send_packet(dec->codec, dec->packet);
        av_packet_unref(dec->packet);
        if (ret < 0) {
            set_av_error(error, RT_ERROR_FORMAT, dec->path, "cannot decode a frame", ret);
            goto fail;
        }
    }
fail:
    dec->need_seek = TRUE;
    forget_frames(dec);
    return -1;
}

/* Whether decoding forward from the current position reaches t no later than a seek would:
 * the keyframe a seek would land on is not after the frame that follows the last decoded one
 * (so a request for the next frame decodes forward even when that frame is a keyframe). */
static gboolean can_decode_forward(rt_video_decoder *dec, double t, int64_t probe)
{
    if (dec->need_seek || !dec->have_cur || dec->draining || t <= seconds(dec, dec->pts[dec->cur]))
        return FALSE;
    const AVIndexEntry *key =
        avformat_index_get_entry_from_timestamp(dec->stream, probe, AVSEEK_FLAG_BACKWARD);
    if (!key)
        return FALSE;
    if (key->timestamp <= dec->pts[dec->cur])
        return TRUE;
    const AVIndexEntry *next =
        avformat_index_get_entry_from_timestamp(dec->stream, dec->pts[dec->cur] + 1, AVSEEK_FLAG_ANY);
    return next && key->timestamp <= next->timestamp;
}

static void set_tolerance_error(rt_video_decoder *dec, GError **error, double t, double nearest,
                                double tolerance)
{
    double duration = rt_video_decoder_duration(dec);
    gboolean ended_early = dec->at_eof && t > nearest && duration > 0 &&
                           nearest + (dec->frame_interval > 0 ? 1.5 * dec->frame_interval : 0) <
                               duration;
    g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                "video '%s': no frame within tolerance_s=%g of the requested timestamp %.6f s: "
                "the nearest frame is at %.6f s (%.6f s away). The dataset's timestamps and the "
                "video's frames disagree (timestamps out of sync, a wrong fps in "
                "meta/info.json, or a damaged video); LeRobot rejects this item too%s",
                dec->path, tolerance, t, nearest, fabs(nearest - t),
                ended_early ? "; the stream ends before the duration its container declares, "
                              "so the file is probably truncated: re-download it"
                            : "");
}

/* Decodes until the newest frame is at or after t - slack, or the stream ends. */
static gboolean decode_until(rt_video_decoder *dec, double t, double slack, GError **error)
{
    while (!dec->have_cur || seconds(dec, dec->pts[dec->cur]) < t - slack) {
        int got = decode_next(dec, error);
        if (got < 0)
            return FALSE;
        if (got == 0)
            break;
    }
    if (!dec->have_cur) {
        double duration = rt_video_decoder_duration(dec);
        if (duration > t)
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "video '%s': no frame at or after %.6f s could be read, although the "
                        "container declares %.6f s of video: the file is truncated or damaged; "
                        "re-download it", dec->path, t, duration);
        else
            g_set_error(error, RT_ERROR, RT_ERROR_FORMAT,
                        "video '%s': no frame at or after %.6f s could be read: the file is "
                        "empty or damaged; re-download it", dec->path, t);
        dec->need_seek = TRUE;
        return FALSE;
    }
    return TRUE;
}

/* Seeks to the keyframe at or before `probe` and decodes up to t. Containers index keyframes
 * by decode time; with B-frames (H.264, HEVC) that keyframe's first output frame can come after
 * t, and the frame nearest to t sits in the GOP before: then seek again to just before the
 * first frame we got, until the first frame is at or before t (or within the slack, where
 * no earlier frame can be nearer), or the seek no longer moves back. */
static gboolean seek_and_decode(rt_video_decoder *dec, double t, double slack, int64_t probe,
                                GError **error)
{
    int64_t last_first = INT64_MAX;
    for (int attempt = 0; attempt < 8; attempt++) {
        if (!seek_to(dec, probe, error) || !decode_until(dec, t, slack, error))
            return FALSE;
        int64_t first = dec->first_pts;
        if (seconds(dec, first) <= t + slack || first >= last_first)
            break;
        last_first = first;
        probe = first - 1;
    }
    return TRUE;
}

/* Leaves the frame nearest to t in dec->frame[*which]. */
static gboolean find_frame(rt_video_decoder *dec, double t, double tolerance, int *which,
                           GError **error)
{
    if (!isfinite(t) || !(tolerance >= 0) || !isfinite(tolerance)) {
        g_set_error(error, RT_ERROR, RT_ERROR_INVALID_ARG,
                    "video '%s': bad request: timestamp %g s with tolerance_s %g (both must be "
                    "finite, the tolerance non-negative)", dec->path, t, tolerance);
        return FALSE;
    }
    /* Frames are assumed more than 4 x slack apart (a quarter frame at most): then a frame
     * within the slack of t, or of the span between the two held frames, is the nearest one
     * without looking at its neighbour. */
    double slack = MIN(tolerance, dec->frame_interval / 4);
    gboolean held = FALSE;
    if (dec->have_cur && !dec->need_seek) {
        double cur = seconds(dec, dec->pts[dec->cur]);
        double low = (dec->have_prev ? seconds(dec, dec->pts[1 - dec->cur]) : cur) - slack;
        held = t >= low && (dec->at_eof || t <= cur + slack);
    }
    if (!held) {
        int64_t probe = pts_at_or_before(dec, t + slack);
        if (can_decode_forward(dec, t, probe)) {
            if (!decode_until(dec, t, slack, error))
                return FALSE;
        } else if (!seek_and_decode(dec, t, slack, probe, error)) {
            return FALSE;
        }
    }
    int best = dec->cur;
    if (dec->have_prev &&
        fabs(seconds(dec, dec->pts[1 - dec->cur]) - t) <= fabs(seconds(dec, dec->pts[dec->cur]) - t))
        best = 1 - dec->cur;
    double nearest = seconds(dec, dec->pts[best]);
    if (fabs(nearest - t) > tolerance) {
        set_tolerance_error(dec, error, t, nearest, tolerance);
        return FALSE;
    }
    *which = best;
    return TRUE;
}

/* AVColorSpace -> the swscale coefficient table ffmpeg's scale filter uses for it. */
static int sws_colorspace_of(enum AVColorSpace space)
{
    if (space < 1 || space > 10 || space == 8)
        return SWS_CS_DEFAULT; /* unspecified, RGB, YCgCo, ...: BT.601 */
    return space;              /* the AVCOL_SPC_* values are the SWS_CS_* values */
}

static gboolean convert_frame(rt_video_decoder *dec, const AVFrame *frame, float *chw,
                              GError **error)
{
    if (frame->width != dec->width || frame->height != dec->height) {
        g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                    "video '%s' changes its frame size from %dx%d to %dx%d: robotrain needs one "
                    "size per file; re-encode it", dec->path, dec->width, dec->height,
                    frame->width, frame->height);
        return FALSE;
    }
    if (!dec->sws || frame->format != dec->sws_format) {
        sws_freeContext(dec->sws);
        dec->sws = sws_getContext(dec->width, dec->height, frame->format, dec->width,
                                  dec->height, AV_PIX_FMT_RGB24, SWS_BICUBIC, NULL, NULL, NULL);
        if (!dec->sws) {
            const char *name = av_get_pix_fmt_name(frame->format);
            g_set_error(error, RT_ERROR, RT_ERROR_UNSUPPORTED,
                        "video '%s': cannot convert pixel format %s to RGB", dec->path,
                        name ? name : "(unknown)");
            dec->sws_format = AV_PIX_FMT_NONE;
            return FALSE;
        }
        int *inv, *table, src_full, dst_full, brightness, contrast, saturation;
        sws_getColorspaceDetails(dec->sws, &inv, &src_full, &table, &dst_full, &brightness,
                                 &contrast, &saturation);
        dec->sws_default_src_full = src_full;
        dec->sws_format = frame->format;
        dec->sws_colorspace = dec->sws_range = -1;
    }
    if ((int)frame->colorspace != dec->sws_colorspace ||
        (int)frame->color_range != dec->sws_range) {
        /* As ffmpeg's scale filter does per frame: the stream's matrix and range when tagged. */
        int *inv, *table, src_full, dst_full, brightness, contrast, saturation;
        sws_getColorspaceDetails(dec->sws, &inv, &src_full, &table, &dst_full, &brightness,
                                 &contrast, &saturation);
        const int *coefficients = sws_getCoefficients(sws_colorspace_of(frame->colorspace));
        if (frame->color_range == AVCOL_RANGE_JPEG)
            src_full = 1;
        else if (frame->color_range == AVCOL_RANGE_MPEG)
            src_full = 0;
        else
            src_full = dec->sws_default_src_full;
        sws_setColorspaceDetails(dec->sws, coefficients, src_full, coefficients, dst_full,
                                 brightness, contrast, saturation);
        dec->sws_colorspace = frame->colorspace;
        dec->sws_range = frame->color_range;
    }
    uint8_t *dst[4] = {dec->rgb, NULL, NULL, NULL};
    int dst_stride[4] = {dec->rgb_stride, 0, 0, 0};
    int rows = sws_scale(dec->sws, (const uint8_t *const *)frame->data, frame->linesize, 0,
                         dec->height, dst, dst_stride);
    if (rows != dec->height) {
        g_set_error(error, RT_ERROR, RT_ERROR_FAILED,
                    "video '%s': RGB conversion returned %d of %d rows", dec->path, rows,
                    dec->height);
        return FALSE;
    }

    size_t plane = (size_t)dec->width * dec->height;
    float *r = chw, *g = chw + plane, *b = chw + 2 * plane;
    const float *to_unit = dec->to_unit;
    for (int y = 0; y < dec->height; y++) {
        const uint8_t *row = dec->rgb + (size_t)y * dec->rgb_stride;
        size_t o = (size_t)y * dec->width;
        for (int x = 0; x < dec->width; x++) {
            r[o + x] = to_unit[row[3 * x]];
            g[o + x] = to_unit[row[3 * x + 1]];
            b[o + x] = to_unit[row[3 * x + 2]];
        }
    }
    return TRUE;
}

gboolean rt_video_decode_at(rt_video_decoder *dec, double timestamp_s, double tolerance_s,
                            float *chw_out, GError **error)
{
    g_return_val_if_fail(dec != NULL, FALSE);
    g_return_val_if_fail(chw_out != NULL, FALSE);
    int which;
    if (!find_frame(dec, timestamp_s, tolerance_s, &which, error))
        return FALSE;
    return convert_frame(dec, dec->frame[which], chw_out, error);
}

gboolean rt_video_decode_batch(rt_video_decoder *dec, const double *timestamps_s, size_t n,
                               double tolerance_s, float *chw_out, GError **error)
{
    g_return_val_if_fail(dec != NULL, FALSE);
    g_return_val_if_fail(n == 0 || (timestamps_s != NULL && chw_out != NULL), FALSE);

    /* Serve in time order (a stable insertion sort: batches are a handful of frames). */
    size_t small[64];
    size_t *order = n <= G_N_ELEMENTS(small) ? small : g_new(size_t, n);
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        while (j > 0 && timestamps_s[order[j - 1]] > timestamps_s[i]) {
            order[j] = order[j - 1];
            j--;
        }
        order[j] = i;
    }
    size_t floats = rt_video_decoder_frame_floats(dec);
    gboolean ok = TRUE;
    for (size_t k = 0; k < n && ok; k++) {
        size_t i = order[k];
        ok = rt_video_decode_at(dec, timestamps_s[i], tolerance_s, chw_out + i * floats, error);
    }
    if (order != small)
        g_free(order);
    return ok;
}
