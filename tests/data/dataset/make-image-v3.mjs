// tests/data/dataset/make-image-v3.mjs: writes image-v3/, a LeRobotDataset v3.0 with an inline
// image feature (dtype "image": PNG bytes in a {bytes, path} struct column, as HF datasets
// store LeRobot images), a float64 environment state, a bool column and two tasks. Every value
// is known in closed form (e = episode 0..1, f = frame 0..3, y = row 0..7, x = column 0..11):
//   observation.image pixel (y, x) = RGB (20f + 5x, 40e + 10y, 250 - 30f - e), 8 x 12, PNG
//   observation.state = [10e + f, -f/2, 0.25]            (float32)
//   action            = state + [1, 1, 1]                 (float32)
//   observation.environment_state = [e + f/3, 1e-300]     (float64)
//   next.done = (f == 3); timestamp = float32(f / 10); index = 4e + f; task_index = e
//   tasks: 0 "Pick the cube.", 1 "Place the cube."
// Run from a folder where `npm install hyparquet-writer@0.17.0` was done:
//   node make-image-v3.mjs OUTDIR
import { mkdirSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { deflateSync } from 'node:zlib'
import { parquetWriteFile } from 'hyparquet-writer'

const out = process.argv[2]
const E = 2, F = 4, H = 8, W = 12

const crcTable = Array.from({ length: 256 }, (_, n) => {
  let c = n
  for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1
  return c >>> 0
})
const crc32 = (buf) => {
  let c = 0xffffffff
  for (const b of buf) c = crcTable[(c ^ b) & 0xff] ^ (c >>> 8)
  return (c ^ 0xffffffff) >>> 0
}
const chunk = (type, data) => {
  const len = Buffer.alloc(4); len.writeUInt32BE(data.length)
  const td = Buffer.concat([Buffer.from(type, 'ascii'), data])
  const crc = Buffer.alloc(4); crc.writeUInt32BE(crc32(td))
  return Buffer.concat([len, td, crc])
}
const png = (e, f) => {
  const ihdr = Buffer.alloc(13)
  ihdr.writeUInt32BE(W, 0); ihdr.writeUInt32BE(H, 4)
  ihdr[8] = 8; ihdr[9] = 2; ihdr[10] = 0; ihdr[11] = 0; ihdr[12] = 0 // 8-bit RGB
  const raw = Buffer.alloc(H * (1 + 3 * W))
  for (let y = 0; y < H; y++) {
    raw[y * (1 + 3 * W)] = 0 // filter: none
    for (let x = 0; x < W; x++) {
      const p = y * (1 + 3 * W) + 1 + 3 * x
      raw[p] = 20 * f + 5 * x; raw[p + 1] = 40 * e + 10 * y; raw[p + 2] = 250 - 30 * f - e
    }
  }
  return new Uint8Array(Buffer.concat([Buffer.from([137, 80, 78, 71, 13, 10, 26, 10]), chunk('IHDR', ihdr),
    chunk('IDAT', deflateSync(raw)), chunk('IEND', Buffer.alloc(0))]))
}

const rows = { img: [], state: [], action: [], env: [], done: [], ts: [], fi: [], ei: [], ix: [], ti: [] }
for (let e = 0; e < E; e++)
  for (let f = 0; f < F; f++) {
    rows.img.push({ bytes: png(e, f), path: `frame-${String(f).padStart(6, '0')}.png` })
    const s = [10 * e + f, -f / 2, 0.25]
    rows.state.push(s); rows.action.push(s.map((v) => v + 1))
    rows.env.push([e + f / 3, 1e-300]); rows.done.push(f === F - 1)
    rows.ts.push(Math.fround(f / 10)); rows.fi.push(BigInt(f)); rows.ei.push(BigInt(e))
    rows.ix.push(BigInt(F * e + f)); rows.ti.push(BigInt(e))
  }
const opt = (name, type, extra = {}) => [{ name, type, repetition_type: 'OPTIONAL', ...extra }]
const list = (name, type) => [
  { name, repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
  { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
  { name: 'element', type, repetition_type: 'OPTIONAL' },
]
mkdirSync(join(out, 'data/chunk-000'), { recursive: true })
mkdirSync(join(out, 'meta/episodes/chunk-000'), { recursive: true })
parquetWriteFile({
  filename: join(out, 'data/chunk-000/file-000.parquet'),
  rowGroupSize: F,
  columnData: [
    { name: 'observation.image', data: rows.img }, { name: 'observation.state', data: rows.state },
    { name: 'action', data: rows.action }, { name: 'observation.environment_state', data: rows.env },
    { name: 'next.done', data: rows.done }, { name: 'timestamp', data: rows.ts },
    { name: 'frame_index', data: rows.fi }, { name: 'episode_index', data: rows.ei },
    { name: 'index', data: rows.ix }, { name: 'task_index', data: rows.ti },
  ],
  schema: [
    { name: 'schema', num_children: 10 },
    { name: 'observation.image', repetition_type: 'OPTIONAL', num_children: 2 },
    { name: 'bytes', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
    { name: 'path', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
    ...list('observation.state', 'FLOAT'), ...list('action', 'FLOAT'),
    ...list('observation.environment_state', 'DOUBLE'), ...opt('next.done', 'BOOLEAN'),
    ...opt('timestamp', 'FLOAT'), ...opt('frame_index', 'INT64'), ...opt('episode_index', 'INT64'),
    ...opt('index', 'INT64'), ...opt('task_index', 'INT64'),
  ],
})
const tasks = ['Pick the cube.', 'Place the cube.']
parquetWriteFile({
  filename: join(out, 'meta/episodes/chunk-000/file-000.parquet'),
  columnData: [
    { name: 'episode_index', data: [0n, 1n] }, { name: 'tasks', data: [[tasks[0]], [tasks[1]]] },
    { name: 'length', data: [BigInt(F), BigInt(F)] },
    { name: 'data/chunk_index', data: [0n, 0n] }, { name: 'data/file_index', data: [0n, 0n] },
    { name: 'dataset_from_index', data: [0n, BigInt(F)] }, { name: 'dataset_to_index', data: [BigInt(F), BigInt(2 * F)] },
  ],
  schema: [
    { name: 'schema', num_children: 7 },
    ...opt('episode_index', 'INT64'),
    { name: 'tasks', repetition_type: 'OPTIONAL', num_children: 1, converted_type: 'LIST' },
    { name: 'list', repetition_type: 'REPEATED', num_children: 1 },
    { name: 'element', type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' },
    ...opt('length', 'INT64'), ...opt('data/chunk_index', 'INT64'), ...opt('data/file_index', 'INT64'),
    ...opt('dataset_from_index', 'INT64'), ...opt('dataset_to_index', 'INT64'),
  ],
})
// pandas' unnamed index: the task strings in a column called __index_level_0__ (seen in real files)
parquetWriteFile({
  filename: join(out, 'meta/tasks.parquet'),
  columnData: [{ name: 'task_index', data: [0n, 1n] }, { name: '__index_level_0__', data: tasks }],
  schema: [{ name: 'schema', num_children: 2 }, ...opt('task_index', 'INT64'),
           ...opt('__index_level_0__', 'BYTE_ARRAY', { converted_type: 'UTF8' })],
})
writeFileSync(join(out, 'meta/stats.json'), JSON.stringify({
  'observation.state': { min: [0, -1.5, 0.25], max: [13, 0, 0.25], mean: [6.5, -0.75, 0.25],
                         std: [5.123475382979799, 0.5590169943749475, 0], count: [8] },
}, null, 2))
const feature = (dtype, shape, names = null) => ({ dtype, shape, names })
writeFileSync(join(out, 'meta/info.json'), JSON.stringify({
  codebase_version: 'v3.0', robot_type: null, total_episodes: E, total_frames: E * F, total_tasks: 2,
  chunks_size: 1000, fps: 10, splits: { train: '0:2' },
  data_path: 'data/chunk-{chunk_index:03d}/file-{file_index:03d}.parquet', video_path: null,
  features: {
    'observation.image': feature('image', [H, W, 3], ['height', 'width', 'channel']),
    'observation.state': feature('float32', [3]), action: feature('float32', [3]),
    'observation.environment_state': feature('float64', [2]), 'next.done': feature('bool', [1]),
    timestamp: feature('float32', [1]), frame_index: feature('int64', [1]), episode_index: feature('int64', [1]),
    index: feature('int64', [1]), task_index: feature('int64', [1]),
  },
}, null, 4))
