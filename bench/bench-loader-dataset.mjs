// bench/bench-loader-dataset.mjs: writes the tables of an ALOHA-like LeRobotDataset v3.0 for
// bench/bench-loader.sh (which encodes the camera's mp4 with ffmpeg).
//
//   node bench-loader-dataset.mjs ROOT EPISODES FRAMES FPS
//
// Layout as LeRobot v3.0 writes it: one data file with a row group per episode, the episodes
// table, tasks.parquet, stats.json, info.json; one camera observation.images.top (480x640,
// AV1) whose episodes follow each other in one mp4 (from_timestamp = e * FRAMES / FPS), and
// 14-dimensional observation.state and action (two 7-joint arms, as ALOHA). Parquet files are
// written with hyparquet-writer (3-level LIST columns, OPTIONAL leaves, like pyarrow's).
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { parquetWriteFile } from 'hyparquet-writer'

const [root, episodesArg, framesArg, fpsArg] = process.argv.slice(2)
const E = Number(episodesArg), F = Number(framesArg), fps = Number(fpsArg), D = 14
const cam = 'observation.images.top'
const task = 'Insert the peg into the socket.'

const list = (name, type, extra = {}) => [
  { name, repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', type, repetition_type: 'OPTIONAL', ...extra },
]
const scalar = (name, type, extra = {}) => [{ name, type, repetition_type: 'OPTIONAL', ...extra }]

// frames: smooth joint trajectories, the action leading the state by one frame
const state = [], action = [], ts = [], fi = [], ei = [], ix = [], ti = []
const joint = (e, f, j) => Math.fround(Math.sin(0.05 * (f + 7 * j) + e) * (0.5 + 0.05 * j))
for (let e = 0; e < E; e++)
  for (let f = 0; f < F; f++) {
    state.push(Array.from({ length: D }, (_, j) => joint(e, f, j)))
    action.push(Array.from({ length: D }, (_, j) => joint(e, f + 1, j)))
    ts.push(Math.fround(f / fps))
    fi.push(BigInt(f)); ei.push(BigInt(e)); ix.push(BigInt(e * F + f)); ti.push(0n)
  }

mkdirSync(join(root, 'data/chunk-000'), { recursive: true })
mkdirSync(join(root, 'meta/episodes/chunk-000'), { recursive: true })
parquetWriteFile({
  filename: join(root, 'data/chunk-000/file-000.parquet'),
  rowGroupSize: F,
  columnData: [
    { name: 'observation.state', data: state }, { name: 'action', data: action },
    { name: 'timestamp', data: ts }, { name: 'frame_index', data: fi }, { name: 'episode_index', data: ei },
    { name: 'index', data: ix }, { name: 'task_index', data: ti },
  ],
  schema: [
    { name: 'schema', num_children: 7 },
    ...list('observation.state', 'FLOAT'), ...list('action', 'FLOAT'), ...scalar('timestamp', 'FLOAT'),
    ...scalar('frame_index', 'INT64'), ...scalar('episode_index', 'INT64'), ...scalar('index', 'INT64'),
    ...scalar('task_index', 'INT64'),
  ],
})

const int64s = (fn) => Array.from({ length: E }, (_, e) => BigInt(fn(e)))
const doubles = (fn) => Array.from({ length: E }, (_, e) => fn(e))
parquetWriteFile({
  filename: join(root, 'meta/episodes/chunk-000/file-000.parquet'),
  columnData: [
    { name: 'episode_index', data: int64s((e) => e) },
    { name: 'tasks', data: Array.from({ length: E }, () => [task]) },
    { name: 'length', data: int64s(() => F) },
    { name: 'data/chunk_index', data: int64s(() => 0) }, { name: 'data/file_index', data: int64s(() => 0) },
    { name: 'dataset_from_index', data: int64s((e) => e * F) },
    { name: 'dataset_to_index', data: int64s((e) => (e + 1) * F) },
    { name: `videos/${cam}/chunk_index`, data: int64s(() => 0) },
    { name: `videos/${cam}/file_index`, data: int64s(() => 0) },
    { name: `videos/${cam}/from_timestamp`, data: doubles((e) => (e * F) / fps) },
    { name: `videos/${cam}/to_timestamp`, data: doubles((e) => ((e + 1) * F) / fps) },
  ],
  schema: [
    { name: 'schema', num_children: 11 },
    ...scalar('episode_index', 'INT64'), ...list('tasks', 'BYTE_ARRAY', { converted_type: 'UTF8' }),
    ...scalar('length', 'INT64'), ...scalar('data/chunk_index', 'INT64'), ...scalar('data/file_index', 'INT64'),
    ...scalar('dataset_from_index', 'INT64'), ...scalar('dataset_to_index', 'INT64'),
    ...scalar(`videos/${cam}/chunk_index`, 'INT64'), ...scalar(`videos/${cam}/file_index`, 'INT64'),
    ...scalar(`videos/${cam}/from_timestamp`, 'DOUBLE'), ...scalar(`videos/${cam}/to_timestamp`, 'DOUBLE'),
  ],
})
parquetWriteFile({
  filename: join(root, 'meta/tasks.parquet'),
  columnData: [{ name: 'task_index', data: [0n] }, { name: 'task', data: [task] }],
  schema: [{ name: 'schema', num_children: 2 }, ...scalar('task_index', 'INT64'),
           ...scalar('task', 'BYTE_ARRAY', { converted_type: 'UTF8' })],
})

// stats of the vectors, population std as LeRobot computes them
const stats = (rows) => {
  const n = rows.length, mean = new Array(D).fill(0), sq = new Array(D).fill(0)
  const min = new Array(D).fill(Infinity), max = new Array(D).fill(-Infinity)
  for (const r of rows) r.forEach((v, j) => { mean[j] += v / n; sq[j] += (v * v) / n; min[j] = Math.min(min[j], v); max[j] = Math.max(max[j], v) })
  return { min, max, mean, std: mean.map((m, j) => Math.sqrt(Math.max(0, sq[j] - m * m))), count: [n] }
}
const c3 = (v) => [[[v]], [[v]], [[v]]]
writeFileSync(join(root, 'meta/stats.json'), JSON.stringify({
  'observation.state': stats(state), action: stats(action),
  [cam]: { min: c3(0), max: c3(1), mean: c3(0.5), std: c3(0.25), count: [E * Math.min(F, 100)] },
}, null, 2))
const feature = (dtype, shape, names = null) => ({ dtype, shape, names })
writeFileSync(join(root, 'meta/info.json'), JSON.stringify({
  codebase_version: 'v3.0', robot_type: 'aloha', total_episodes: E, total_frames: E * F, total_tasks: 1,
  chunks_size: 1000, data_files_size_in_mb: 100, video_files_size_in_mb: 200, fps,
  splits: { train: `0:${E}` },
  data_path: 'data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet',
  video_path: 'videos/{video_key}/chunk-{chunk_index:03d}/file-{file_index:03d}.mp4',
  features: {
    'observation.state': feature('float32', [D]), action: feature('float32', [D]),
    [cam]: { dtype: 'video', shape: [480, 640, 3], names: ['height', 'width', 'channels'],
      info: { 'video.height': 480, 'video.width': 640, 'video.codec': 'av1', 'video.pix_fmt': 'yuv420p',
              'video.fps': fps, 'video.channels': 3, has_audio: false } },
    timestamp: feature('float32', [1]), frame_index: feature('int64', [1]), episode_index: feature('int64', [1]),
    index: feature('int64', [1]), task_index: feature('int64', [1]),
  },
}, null, 4))
