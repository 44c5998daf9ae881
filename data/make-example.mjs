// data/make-example.mjs: writes the bundled example dataset, a LeRobotDataset v3.0 of a 2-D
// point robot reaching a target (see data/README for the task and the closed form).
//
//   node make-example.mjs OUTDIR
//
// Run it through data/regenerate-example.sh, which installs the pinned writers (npm
// parquet-wasm = arrow-rs for Parquet, apache-arrow for the Arrow schema) next to a copy of
// this file. Video goes through the system's ffmpeg with SVT-AV1 and LeRobot's encoder
// settings, one mp4 per episode concatenated by stream copy, as LeRobot records.
//
// Everything but the mp4 is a pure function of the constants below: the same writer versions
// give the same bytes. Arithmetic is kept to operations that IEEE 754 rounds exactly the same
// way in C, so tests/test-example-dataset.c recomputes every value and pixel independently.

import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import {
    Field, FixedSizeList, Float32, Float64, Int64, List, Schema, Table, Utf8, tableToIPC, vectorFromArray,
} from 'apache-arrow';
import * as parquet from 'parquet-wasm';

// ------------------------------------------------------------------ the task, in closed form

const FPS = 10;
const SIZE = 64; // image height = width (SVT-AV1 encodes nothing smaller)
const EPISODES = 8;
const MOVE_FRAMES = 24; // frames of the reaching motion; the robot then holds on the target
const TASK = 'reach the target';
const CAMERA = 'observation.images.top';
const ROBOT_TYPE = 'point2d_sim';

const H = Math.sqrt(0.5);
const COMPASS = [[1, 0], [H, H], [0, 1], [-H, H], [-1, 0], [-H, -H], [0, -1], [H, -H]];

const episodeLength = (e) => 32 + 4 * ((3 * e) % 7);
const target = (e) => COMPASS[(3 * e) % 8].map((c) => 0.6 * c);
const start = (e) => COMPASS[(3 * e + 5) % 8].map((c) => 0.8 * c);

// Minimum-jerk progress 10u^3 - 15u^4 + 6u^5 of the motion at frame f (1 from MOVE_FRAMES on).
function progress(f) {
    const u = Math.min(f, MOVE_FRAMES) / MOVE_FRAMES;
    return u * u * u * (10 - 15 * u + 6 * u * u);
}

// Position at frame f (f may be the episode's length: the last action), rounded to float32.
function position(e, f) {
    const s = progress(f), a = start(e), b = target(e);
    return [Math.fround(a[0] + (b[0] - a[0]) * s), Math.fround(a[1] + (b[1] - a[1]) * s)];
}

// ------------------------------------------------------------------ rendering

// Workspace [-1, 1]^2, y up; pixel centres at integers 0..63. Positions are converted to
// 1/256-pixel integers, then discs are drawn with 4x4 supersampling in integer arithmetic.
const BACKGROUND = [32, 36, 48];
const TARGET_RGB = [60, 200, 90];
const ROBOT_RGB = [250, 130, 40];
const TARGET_RADIUS = 5 * 256;
const ROBOT_RADIUS = 3.5 * 256;

function toSubpixel(p) {
    return [Math.floor((p[0] + 1) * 8064 + 0.5), Math.floor((1 - p[1]) * 8064 + 0.5)];
}

// Samples (of 16) of pixel (col, row) inside the disc at subpixel centre c, radius r.
function coverage(col, row, c, r) {
    let n = 0;
    for (let j = 0; j < 4; j++) {
        const dy = row * 256 - 96 + 64 * j - c[1];
        for (let i = 0; i < 4; i++) {
            const dx = col * 256 - 96 + 64 * i - c[0];
            if (dx * dx + dy * dy <= r * r)
                n++;
        }
    }
    return n;
}

const mix = (under, over, k) => (under * (16 - k) + over * k + 8) >> 4;

// The camera frame of episode e, frame f: RGB bytes, row-major, height x width x 3.
function render(e, f) {
    const img = new Uint8Array(SIZE * SIZE * 3);
    const t = toSubpixel(target(e).map(Math.fround)), r = toSubpixel(position(e, f));
    for (let row = 0; row < SIZE; row++) {
        for (let col = 0; col < SIZE; col++) {
            const kt = coverage(col, row, t, TARGET_RADIUS), kr = coverage(col, row, r, ROBOT_RADIUS);
            for (let c = 0; c < 3; c++)
                img[(row * SIZE + col) * 3 + c] = mix(mix(BACKGROUND[c], TARGET_RGB[c], kt), ROBOT_RGB[c], kr);
        }
    }
    return img;
}

// ------------------------------------------------------------------ LeRobot's statistics

// compute_stats.py's RunningQuantileStats after one update, in float64: min, max, mean,
// std = sqrt(max(0, E[x^2] - E[x]^2)) and quantiles from a 5000-bin histogram between
// min - 1e-10 and max + 1e-10 with linear interpolation inside the bin.
const QUANTILES = [[0.01, 'q01'], [0.10, 'q10'], [0.50, 'q50'], [0.90, 'q90'], [0.99, 'q99']];
const BINS = 5000;

function columnStats(values) {
    let min = Infinity, max = -Infinity, sum = 0, sumsq = 0;
    for (const v of values) {
        min = Math.min(min, v);
        max = Math.max(max, v);
        sum += v;
        sumsq += v * v;
    }
    const n = values.length, mean = sum / n;
    const out = { min, max, mean, std: Math.sqrt(Math.max(0, sumsq / n - mean * mean)) };
    // numpy.linspace: edge i = i * step + lo, the last edge exactly hi.
    const lo = min - 1e-10, hi = max + 1e-10, step = (hi - lo) / BINS;
    const edges = new Float64Array(BINS + 1);
    for (let i = 0; i < BINS; i++)
        edges[i] = i * step + lo;
    edges[BINS] = hi;
    // numpy.histogram: bin i holds edges[i] <= v < edges[i + 1]; the last bin is closed.
    const hist = new Float64Array(BINS);
    for (const v of values) {
        let i = Math.min(BINS - 1, Math.max(0, Math.floor((v - lo) / step)));
        while (i > 0 && v < edges[i])
            i--;
        while (i < BINS - 1 && v >= edges[i + 1])
            i++;
        hist[i]++;
    }
    const cumsum = new Float64Array(BINS);
    for (let i = 0, acc = 0; i < BINS; i++)
        cumsum[i] = acc += hist[i];
    for (const [q, key] of QUANTILES) {
        const goal = q * n;
        let idx = 0;
        while (idx < BINS && cumsum[idx] < goal)
            idx++;
        if (idx === 0)
            out[key] = edges[0];
        else if (idx >= BINS)
            out[key] = edges[BINS];
        else {
            const before = cumsum[idx - 1], inBin = cumsum[idx] - before;
            out[key] = inBin === 0 ? edges[idx]
                                   : edges[idx] + ((goal - before) / inBin) * (edges[idx + 1] - edges[idx]);
        }
    }
    return out;
}

const STAT_KEYS = ['min', 'max', 'mean', 'std', 'count', ...QUANTILES.map(([, k]) => k)];

// Stats of a feature from its per-dimension value lists: every stat a list over dimensions.
function featureStats(columns, count, scale = 1, wrap = (x) => x) {
    const per = columns.map(columnStats);
    const out = {};
    for (const k of STAT_KEYS)
        out[k] = k === 'count' ? [count] : wrap(per.map((s) => s[k] / scale));
    return out;
}

// aggregate_feature_stats(): count-weighted mean, pooled variance, min/max envelopes,
// quantiles at or below q50 the minimum over episodes, above it the maximum.
function aggregate(list, unwrap = (x) => x, wrap = (x) => x) {
    const counts = list.map((s) => s.count[0]);
    const total = counts.reduce((a, b) => a + b, 0);
    const dims = unwrap(list[0].mean).length;
    const get = (s, k) => unwrap(s[k]);
    const out = {};
    const mean = [], std = [];
    for (let d = 0; d < dims; d++) {
        let m = 0;
        for (let e = 0; e < list.length; e++)
            m += get(list[e], 'mean')[d] * counts[e];
        m /= total;
        let v = 0;
        for (let e = 0; e < list.length; e++) {
            const delta = get(list[e], 'mean')[d] - m;
            v += (get(list[e], 'std')[d] ** 2 + delta * delta) * counts[e];
        }
        mean.push(m);
        std.push(Math.sqrt(v / total));
    }
    const fold = (k, f) => wrap(Array.from({ length: dims }, (_, d) => list.map((s) => get(s, k)[d]).reduce((a, b) => f(a, b))));
    out.min = fold('min', Math.min);
    out.max = fold('max', Math.max);
    out.mean = wrap(mean);
    out.std = wrap(std);
    out.count = [total];
    for (const [q, k] of QUANTILES)
        out[k] = fold(k, q <= 0.5 ? Math.min : Math.max);
    return out;
}

const imageWrap = (v) => v.map((x) => [[x]]); // shape (3, 1, 1)
const imageUnwrap = (v) => v.map((x) => x[0][0]);

// ------------------------------------------------------------------ writers

function writeJson(file, value) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, JSON.stringify(value, null, 4) + '\n');
}

// arrow-rs through parquet-wasm, configured like pyarrow's defaults for LeRobot (SNAPPY,
// dictionary pages, data page v1, statistics). Like pyarrow, the footer holds the schema's
// metadata (huggingface, pandas) both as its own keys and inside ARROW:schema, which arrow-rs
// adds after them.
function writeParquet(file, fields, columns, metadata, rowGroupRows) {
    const vectors = fields.map((f, i) => vectorFromArray(columns[i], f.type));
    const schema = new Schema(fields, new Map(Object.entries(metadata)));
    const table = new Table(schema, Object.fromEntries(fields.map((f, i) => [f.name, vectors[i]])));
    const props = new parquet.WriterPropertiesBuilder()
        .setCompression(parquet.Compression.SNAPPY)
        .setDictionaryEnabled(true)
        .setWriterVersion(parquet.WriterVersion.V1)
        .setCreatedBy('parquet-wasm 0.8.0 (arrow-rs), robotrain data/make-example.mjs')
        .setMaxRowGroupSize(rowGroupRows)
        .setKeyValueMetadata(new Map(Object.entries(metadata)))
        .build();
    const wasmTable = parquet.Table.fromIPCStream(tableToIPC(table, 'stream'));
    fs.mkdirSync(path.dirname(file), { recursive: true });
    fs.writeFileSync(file, parquet.writeParquet(wasmTable, props));
}

const f32 = new Float32(), f64 = new Float64(), i64 = new Int64(), utf8 = new Utf8();
const vec = (n, t) => new FixedSizeList(n, new Field('element', t, true));
const list = (t) => new List(new Field('element', t, true));
const field = (name, type) => new Field(name, type, true);

function ffmpeg(args, input) {
    execFileSync('ffmpeg', ['-hide_banner', '-nostdin', '-loglevel', 'error', '-y', ...args],
                 { input, stdio: [input ? 'pipe' : 'ignore', 'inherit', 'inherit'],
                   env: { ...process.env, SVT_LOG: '1' } }); // SVT-AV1: errors only
}

// Stream duration of an mp4 in seconds, as LeRobot takes it: duration x time base.
function videoDuration(file) {
    const out = execFileSync('ffprobe', ['-v', 'error', '-select_streams', 'v:0', '-show_entries',
                                         'stream=duration_ts,time_base', '-of', 'json', file]);
    const s = JSON.parse(out).streams[0];
    const [num, den] = s.time_base.split('/').map(Number);
    return (s.duration_ts * num) / den;
}

// ------------------------------------------------------------------ the dataset

function main(outDir) {
    const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'robotrain-example-'));
    try {
        build(outDir, tmp);
    } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
    }
}

function build(outDir, tmp) {
    const rows = { state: [], action: [], timestamp: [], frame: [], episode: [], index: [], task: [] };
    const episodes = [];
    const videoParts = [];
    let index = 0, videoTime = 0;

    for (let e = 0; e < EPISODES; e++) {
        const length = episodeLength(e);
        const state = [], action = [], frames = [];
        for (let f = 0; f < length; f++) {
            state.push(position(e, f));
            action.push(position(e, f + 1));
            frames.push(render(e, f));
            rows.state.push(state[f]);
            rows.action.push(action[f]);
            rows.timestamp.push(Math.fround(f / FPS));
            rows.frame.push(f);
            rows.episode.push(e);
            rows.index.push(index + f);
            rows.task.push(0);
        }

        // LeRobot's RGBEncoderConfig: libsvtav1, yuv420p, g=2, crf=30, preset 12, fast-decode=0.
        const part = path.join(tmp, `episode-${e}.mp4`);
        ffmpeg(['-f', 'rawvideo', '-pix_fmt', 'rgb24', '-s', `${SIZE}x${SIZE}`, '-r', String(FPS), '-i', '-',
                '-c:v', 'libsvtav1', '-pix_fmt', 'yuv420p', '-g', '2', '-crf', '30', '-preset', '12',
                '-svtav1-params', 'fast-decode=0', part],
               Buffer.concat(frames.map((img) => Buffer.from(img))));
        videoParts.push(part);
        const from = videoTime;
        videoTime = from + videoDuration(part);

        // Per-episode stats, as compute_episode_stats() gives them.
        const pixels = [0, 1, 2].map((c) => {
            const v = new Float64Array(length * SIZE * SIZE);
            frames.forEach((img, f) => {
                for (let p = 0; p < SIZE * SIZE; p++)
                    v[f * SIZE * SIZE + p] = img[p * 3 + c];
            });
            return v;
        });
        const scalar = (fn) => [Array.from({ length }, (_, f) => fn(f))];
        const stats = {
            'observation.state': featureStats([0, 1].map((d) => state.map((p) => p[d])), length),
            action: featureStats([0, 1].map((d) => action.map((p) => p[d])), length),
            [CAMERA]: featureStats(pixels, length, 255, imageWrap),
            timestamp: featureStats(scalar((f) => Math.fround(f / FPS)), length),
            frame_index: featureStats(scalar((f) => f), length),
            episode_index: featureStats(scalar(() => e), length),
            index: featureStats(scalar((f) => index + f), length),
            task_index: featureStats(scalar(() => 0), length),
        };
        episodes.push({ e, length, from: index, to: index + length, videoFrom: from, videoTo: videoTime, stats });
        index += length;
    }

    // One mp4 for the camera: the episodes' files joined by stream copy, moov first.
    const listFile = path.join(tmp, 'concat.txt');
    fs.writeFileSync(listFile, videoParts.map((p) => `file '${p}'\n`).join(''));
    const videoFile = path.join(outDir, 'videos', CAMERA, 'chunk-000', 'file-000.mp4');
    fs.mkdirSync(path.dirname(videoFile), { recursive: true });
    ffmpeg(['-f', 'concat', '-safe', '0', '-i', listFile, '-c', 'copy', '-movflags', '+faststart', videoFile]);

    // ---- data/chunk-000/file-000.parquet: one row per frame, row groups of 100 rows (they
    // straddle episodes, as in converted datasets: readers must not assume one per episode).
    const hfFeatures = {
        'observation.state': { feature: { dtype: 'float32', _type: 'Value' }, length: 2, _type: 'List' },
        action: { feature: { dtype: 'float32', _type: 'Value' }, length: 2, _type: 'List' },
        timestamp: { dtype: 'float32', _type: 'Value' },
        frame_index: { dtype: 'int64', _type: 'Value' },
        episode_index: { dtype: 'int64', _type: 'Value' },
        index: { dtype: 'int64', _type: 'Value' },
        task_index: { dtype: 'int64', _type: 'Value' },
    };
    const big = (a) => a.map(BigInt);
    writeParquet(path.join(outDir, 'data', 'chunk-000', 'file-000.parquet'),
                 [field('observation.state', vec(2, f32)), field('action', vec(2, f32)), field('timestamp', f32),
                  field('frame_index', i64), field('episode_index', i64), field('index', i64),
                  field('task_index', i64)],
                 [rows.state, rows.action, rows.timestamp, big(rows.frame), big(rows.episode), big(rows.index),
                  big(rows.task)],
                 { huggingface: JSON.stringify({ info: { features: hfFeatures } }) }, 100);

    // ---- meta/tasks.parquet: the task string is the pandas index, as LeRobot writes it.
    const pandas = {
        index_columns: ['task'],
        column_indexes: [],
        columns: [
            { name: 'task_index', field_name: 'task_index', pandas_type: 'int64', numpy_type: 'int64', metadata: null },
            { name: 'task', field_name: 'task', pandas_type: 'unicode', numpy_type: 'object', metadata: null },
        ],
        creator: { library: 'parquet-wasm', version: '0.8.0' },
        pandas_version: 'n/a (written without pandas)',
    };
    writeParquet(path.join(outDir, 'meta', 'tasks.parquet'), [field('task_index', i64), field('task', utf8)],
                 [[0n], [TASK]], { pandas: JSON.stringify(pandas) }, 1024 * 1024);

    // ---- meta/episodes/chunk-000/file-000.parquet
    const features = ['observation.state', 'action', CAMERA, 'timestamp', 'frame_index', 'episode_index',
                      'index', 'task_index'];
    const isInt = (name) => ['frame_index', 'episode_index', 'index', 'task_index'].includes(name);
    const epFields = [
        field('episode_index', i64), field('tasks', list(utf8)), field('length', i64),
        field('data/chunk_index', i64), field('data/file_index', i64),
        field('dataset_from_index', i64), field('dataset_to_index', i64),
        field(`videos/${CAMERA}/chunk_index`, i64), field(`videos/${CAMERA}/file_index`, i64),
        field(`videos/${CAMERA}/from_timestamp`, f64), field(`videos/${CAMERA}/to_timestamp`, f64),
    ];
    const epColumns = [
        big(episodes.map((x) => x.e)), episodes.map(() => [TASK]), big(episodes.map((x) => x.length)),
        episodes.map(() => 0n), episodes.map(() => 0n),
        big(episodes.map((x) => x.from)), big(episodes.map((x) => x.to)),
        episodes.map(() => 0n), episodes.map(() => 0n),
        episodes.map((x) => x.videoFrom), episodes.map((x) => x.videoTo),
    ];
    for (const name of features) {
        for (const k of STAT_KEYS) {
            const intStat = k === 'count' || (isInt(name) && (k === 'min' || k === 'max'));
            const leaf = intStat ? i64 : f64;
            const type = name === CAMERA && k !== 'count' ? list(list(list(leaf))) : list(leaf);
            epFields.push(field(`stats/${name}/${k}`, type));
            epColumns.push(episodes.map((x) => {
                const v = x.stats[name][k];
                return intStat ? v.map(BigInt) : v;
            }));
        }
    }
    epFields.push(field('meta/episodes/chunk_index', i64), field('meta/episodes/file_index', i64));
    epColumns.push(episodes.map(() => 0n), episodes.map(() => 0n));
    writeParquet(path.join(outDir, 'meta', 'episodes', 'chunk-000', 'file-000.parquet'), epFields, epColumns,
                 {}, 1024 * 1024);

    // ---- meta/stats.json
    const stats = {};
    for (const name of features) {
        const per = episodes.map((x) => x.stats[name]);
        stats[name] = name === CAMERA ? aggregate(per, imageUnwrap, imageWrap) : aggregate(per);
    }
    writeJson(path.join(outDir, 'meta', 'stats.json'), stats);

    // ---- meta/info.json, keys in the order current LeRobot writes them.
    const scalarFeature = (dtype) => ({ dtype, shape: [1], names: null });
    const info = {
        codebase_version: 'v3.0',
        fps: FPS,
        features: {
            'observation.state': { dtype: 'float32', shape: [2], names: ['x', 'y'] },
            action: { dtype: 'float32', shape: [2], names: ['x', 'y'] },
            [CAMERA]: {
                dtype: 'video',
                shape: [SIZE, SIZE, 3],
                names: ['height', 'width', 'channels'],
                info: {
                    'video.height': SIZE,
                    'video.width': SIZE,
                    'video.codec': 'av1',
                    'video.pix_fmt': 'yuv420p',
                    'video.fps': FPS,
                    'video.channels': 3,
                    has_audio: false,
                    'video.g': 2,
                    'video.crf': 30,
                    'video.preset': 12,
                    'video.fast_decode': 0,
                    'video.video_backend': 'pyav',
                    'video.extra_options': {},
                    is_depth_map: false,
                },
            },
            timestamp: scalarFeature('float32'),
            frame_index: scalarFeature('int64'),
            episode_index: scalarFeature('int64'),
            index: scalarFeature('int64'),
            task_index: scalarFeature('int64'),
        },
        total_episodes: EPISODES,
        total_frames: index,
        total_tasks: 1,
        chunks_size: 1000,
        data_files_size_in_mb: 100,
        video_files_size_in_mb: 200,
        data_path: 'data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet',
        video_path: 'videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4',
        robot_type: ROBOT_TYPE,
        splits: { train: `0:${EPISODES}` },
    };
    writeJson(path.join(outDir, 'meta', 'info.json'), info);
}

if (process.argv.length !== 3) {
    console.error('usage: node make-example.mjs OUTDIR');
    process.exit(2);
}
main(process.argv[2]);
