// Create databases with Mastra's own storage init(), for the golden schema snapshot.
//
//   npm ci                      (installs the pinned @mastra/* packages from npm)
//   node make_dbs.mjs pg POSTGRES_URL SCHEMA      -> PostgresStore init() in schema SCHEMA
//   node make_dbs.mjs libsql FILE                 -> LibSQLStore init() on file:FILE
//   node make_dbs.mjs libsql-sample FILE          -> the same, then records written through
//   node make_dbs.mjs pg-sample URL SCHEMA           Mastra's API (libSQL: JSON as JSONB)
//
// init() of the composite store initialises every domain store it holds; every domain's
// init() is also called by name below, so a domain that a later Mastra stops initialising
// from the composite init() still gets its tables (and the call is a no-op otherwise).
const [backend, ...args] = process.argv.slice(2);

async function open() {
  if (backend === 'pg' || backend === 'pg-sample') {
    const [url, schemaName] = args;
    const { PostgresStore } = await import('@mastra/pg');
    return new PostgresStore({ id: 'golden', connectionString: url, schemaName });
  }
  if (backend === 'libsql' || backend === 'libsql-sample') {
    const { LibSQLStore } = await import('@mastra/libsql');
    return new LibSQLStore({ id: 'golden', url: `file:${args[0]}` });
  }
  throw new Error('usage: node make_dbs.mjs pg[-sample] URL SCHEMA | libsql[-sample] FILE');
}

// Values that exercise JSONB: nesting, numbers (int, negative, float, exponent), true/false/
// null, empty containers, escapes, and text of every UTF-8 width.
const TEXT = 'Grüße, 你好 🚀 "quoted" \\ back\nslash\ttab \u0001';
const DATA = {
  text: TEXT, n: 42, neg: -7, big: 12345678901234, f: 2.5, e: 1e-7, yes: true, no: false,
  none: null, list: [1, 'two', [3], {}], empty: {}, nested: { deeper: { deepest: [TEXT] } },
  long: 'x'.repeat(300),
};
const WHEN = new Date(Date.UTC(2025, 0, 2, 3, 4, 5, 678));

async function writeSample(store) {
  const memory = await store.getStore('memory');
  await memory.saveThread({ thread: {
    id: 'jsonb-thread', resourceId: 'jsonb-user', title: TEXT, metadata: DATA,
    createdAt: WHEN, updatedAt: WHEN,
  } });
  await memory.saveResource({ resource: {
    id: 'jsonb-user', workingMemory: `# Memory\n${TEXT}`, metadata: DATA,
    createdAt: WHEN, updatedAt: WHEN,
  } });
  await memory.saveMessages({ messages: [{
    id: 'jsonb-message', threadId: 'jsonb-thread', resourceId: 'jsonb-user', role: 'user',
    createdAt: WHEN, type: 'v2', content: { format: 2, parts: [{ type: 'text', text: TEXT }] },
  }] });
  const workflows = await store.getStore('workflows');
  await workflows.persistWorkflowSnapshot({
    workflowName: 'jsonb-workflow', runId: 'jsonb-run', resourceId: 'jsonb-user',
    snapshot: { runId: 'jsonb-run', status: 'success', value: {}, context: { input: DATA },
      activePaths: [], serializedStepGraph: [], suspendedPaths: {}, waitingPaths: {},
      result: DATA, timestamp: WHEN.getTime() },
  });
}

const store = await open();
await store.init();
const names = Object.keys(store.stores ?? {}).sort();
for (const name of names) {
  const domain = store.stores[name];
  if (typeof domain?.init === 'function') await domain.init();
}
if (backend.endsWith('-sample')) await writeSample(store);
console.log(JSON.stringify({ backend, domains: names }));
await store.close?.();
