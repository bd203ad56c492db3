// bench/onerow.py's calls through Mastra's @mastra/pg: client CPU (user, system) and wall time
// per call. Mastra comes from a folder where @mastra/pg is installed: the peer harness's node/
// after `npm ci` (run_all.sh does it), or tests/data/mastra's packages as CI's Mastra interop
// step installs them (tests/test_bench_onerow.py runs this script there):
//
//   node bench/onerow_mastra.mjs --harness-node /tmp/plain-h/node \
//       --url postgresql://postgres@127.0.0.1:5432/test [--calls 2000] [--reps 3] [--snapshot F]
//
// Same calls, sizes and order as bench/onerow.py; a scratch schema, dropped after.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';

const { values: args } = parseArgs({
  options: {
    'harness-node': { type: 'string' }, url: { type: 'string' }, calls: { type: 'string', default: '2000' },
    reps: { type: 'string', default: '3' }, snapshot: { type: 'string' },
  },
});
if (!args['harness-node'] || !args.url) throw new Error('--harness-node and --url are required');
const require = createRequire(join(args['harness-node'], 'package.json'));
const { PostgresStore } = await import(pathToFileURL(require.resolve('@mastra/pg')).href);
const calls = Number(args.calls), reps = Number(args.reps), schema = 'bench_onerow_mastra';

// bench.workloads.snapshot, or the --snapshot file (its runId set per call)
const template = args.snapshot ? JSON.parse(readFileSync(args.snapshot, 'utf8')) : null;
const snapshot = (i) => template ? { ...template, runId: `run-${String(i).padStart(6, '0')}` } : {
  runId: `run${i}`, status: 'running', value: { step: i },
  context: Object.fromEntries([...Array(10).keys()].map((k) => [`step${k}`, { status: 'success', output: 'x'.repeat(400) }])),
  activePaths: [0, 1, 2],
  serializedStepGraph: [...Array(10).keys()].map((k) => ({ type: 'step', step: { id: `s${k}` } })),
  timestamp: 1735689600000 + i,
};

const store = new PostgresStore({ id: 'onerow', connectionString: args.url, schemaName: schema });
await store.init();
const memory = await store.getStore('memory');
const workflows = await store.getStore('workflows');
const now = new Date();
await memory.saveResource({ resource: { id: 'res-1', workingMemory: '# Working memory\n' + 'x'.repeat(1007), metadata: {}, createdAt: now, updatedAt: now } });
let serial = 0;
const ops = {
  'snapshot save': async () => { const i = serial++; await workflows.persistWorkflowSnapshot({ workflowName: `wf-${i % 5}`, runId: `run-${String(i).padStart(6, '0')}`, snapshot: snapshot(i) }); },
  'thread save': async () => { const i = serial++; const at = new Date(); await memory.saveThread({ thread: { id: `t-${i}`, resourceId: 'u', title: `title ${i}`, metadata: {}, createdAt: at, updatedAt: at } }); },
  'working-memory read': async () => { const r = await memory.getResourceById({ resourceId: 'res-1' }); if (!r.workingMemory.startsWith('# Working memory')) throw new Error('read'); },
};
try {
  for (const op of Object.values(ops)) for (let k = 0; k < 50; k++) await op();  // warm: V8's JIT
  console.log(`per call, ${calls} calls a repetition (Mastra)`);
  console.log('| call | rep | user us | system us | wall us |');
  console.log('|---|---:|---:|---:|---:|');
  for (let rep = 1; rep <= reps; rep++) {
    for (const [name, op] of Object.entries(ops)) {
      const cpu = process.cpuUsage(), start = performance.now();
      for (let k = 0; k < calls; k++) await op();
      const used = process.cpuUsage(cpu), wall = performance.now() - start;
      console.log(`| ${name} | ${rep} | ${(used.user / calls).toFixed(1)} | ${(used.system / calls).toFixed(1)} | ${(wall * 1000 / calls).toFixed(0)} |`);
    }
  }
} finally {
  await store.db.none(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  process.exit(0);
}
