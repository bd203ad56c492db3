// Create databases with Mastra's own storage init(), for the golden schema snapshot and the
// interop tests (tests/test_mastra_interop.py).
//
//   npm ci                      (installs the pinned @mastra/* packages from npm)
//   node make_dbs.mjs pg POSTGRES_URL SCHEMA      -> PostgresStore init() in schema SCHEMA
//   node make_dbs.mjs libsql FILE                 -> LibSQLStore init() on file:FILE
//   node make_dbs.mjs libsql-sample FILE          -> the same, then records written through
//   node make_dbs.mjs pg-sample URL SCHEMA           Mastra's API (libSQL: JSON as JSONB);
//                                                    prints them as JSON on stdout
//   node make_dbs.mjs records PREFIX             -> the m-* sample records with ids PREFIX-*, no
//                                                    database (what the test writes through us)
//   node make_dbs.mjs libsql-read FILE            -> init(), then the records the interop test
//   node make_dbs.mjs pg-read URL SCHEMA             wrote through composite-store (ids cs-*),
//                                                    read through Mastra's API, as JSON
//
// Dates print as ISO strings (UTC, milliseconds). Logs go to stderr: stdout is one JSON line.
//
const [backend, ...args] = process.argv.slice(2);

async function open() {
  if (backend.startsWith('pg')) {
    const [url, schemaName] = args;
    const { PostgresStore } = await import('@mastra/pg');
    return new PostgresStore({ id: 'golden', connectionString: url, schemaName });
  }
  if (backend.startsWith('libsql')) {
    const { LibSQLStore } = await import('@mastra/libsql');
    return new LibSQLStore({ id: 'golden', url: `file:${args[0]}` });
  }
  throw new Error('usage: node make_dbs.mjs pg[-sample|-read] URL SCHEMA | libsql[-sample|-read] FILE');
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

// Mastra's camelCase records as written, for the test to compare field by field.
const written = {};

async function writeSample(store) {
  const memory = await store.getStore('memory');
  const jsonbThread = {
    id: 'jsonb-thread', resourceId: 'jsonb-user', title: TEXT, metadata: DATA,
    createdAt: WHEN, updatedAt: WHEN,
  };
  await memory.saveThread({ thread: jsonbThread });
  const jsonbResource = {
    id: 'jsonb-user', workingMemory: `# Memory\n${TEXT}`, metadata: DATA,
    createdAt: WHEN, updatedAt: WHEN,
  };
  await memory.saveResource({ resource: jsonbResource });
  const jsonbMessage = {
    id: 'jsonb-message', threadId: 'jsonb-thread', resourceId: 'jsonb-user', role: 'user',
    createdAt: WHEN, type: 'v2', content: { format: 2, parts: [{ type: 'text', text: TEXT }] },
  };
  await memory.saveMessages({ messages: [jsonbMessage] });
  // saveMessages bumped the thread's updatedAt to now: write it back as given.
  await memory.saveThread({ thread: jsonbThread });
  const jsonbRun = {
    workflowName: 'jsonb-workflow', runId: 'jsonb-run', resourceId: 'jsonb-user',
    snapshot: { runId: 'jsonb-run', status: 'success', value: {}, context: { input: DATA },
      activePaths: [], serializedStepGraph: [], suspendedPaths: {}, waitingPaths: {},
      result: DATA, timestamp: WHEN.getTime() },
  };
  const workflows = await store.getStore('workflows');
  await workflows.persistWorkflowSnapshot(jsonbRun);

  // The m-* records: every kind the interop test compares, with explicit timestamps.
  const { thread, resource, messages, run, score: toScore, spans } = sampleRecords('m');
  await memory.saveThread({ thread });
  await memory.saveResource({ resource });
  await memory.saveMessages({ messages });
  // saveMessages bumped the thread's updatedAt to now: write it back as given.
  await memory.saveThread({ thread });
  await workflows.persistWorkflowSnapshot(run);
  const scores = await store.getStore('scores');
  const { score } = await scores.saveScore(toScore);
  const observability = await store.getStore('observability');
  await observability.batchCreateSpans({ records: spans });
  Object.assign(written, {
    threads: [jsonbThread, thread], resources: [jsonbResource, resource],
    messages: [jsonbMessage, ...messages], runs: [jsonbRun, run], scores: [score], spans,
  });
}

function sampleRecords(prefix) {
  const threadId = `${prefix}-thread`;
  const resourceId = `${prefix}-user`;
  return {
    thread: { id: threadId, resourceId, title: `Mastra ${TEXT}`, metadata: DATA,
      createdAt: WHEN, updatedAt: at(1) },
    resource: { id: resourceId, workingMemory: `# User\n- name: Ada\n- ${TEXT}`,
      metadata: { plan: 'pro', seats: 3 }, createdAt: WHEN, updatedAt: at(2) },
    messages: sampleMessages(prefix, threadId, resourceId),
    run: { workflowName: `${prefix}-workflow`, runId: `${prefix}-run`, resourceId,
      snapshot: sampleSnapshot(`${prefix}-run`), createdAt: WHEN, updatedAt: at(3) },
    score: sampleScore(prefix),
    spans: sampleSpans(prefix),
  };
}

function at(ms) {
  return new Date(WHEN.getTime() + ms);
}

// Format 2 messages with every part type the test covers: text, a tool invocation with its
// result, reasoning (with details) and a file; plus content.metadata and toolInvocations.
function sampleMessages(prefix, threadId, resourceId) {
  const call = { state: 'result', toolCallId: `${prefix}-call-1`, toolName: 'weather',
    args: { city: 'Zürich', days: 3 }, result: { tempC: -2.5, sky: 'snow ❄' }, step: 0 };
  return [
    { id: `${prefix}-msg-1`, threadId, resourceId, role: 'user', type: 'v2', createdAt: at(10),
      content: { format: 2, parts: [{ type: 'text', text: TEXT }], content: TEXT,
        metadata: { client: 'web', n: 1 } } },
    { id: `${prefix}-msg-2`, threadId, resourceId, role: 'assistant', type: 'v2',
      createdAt: at(11),
      content: { format: 2, parts: [
        { type: 'step-start' },
        { type: 'reasoning', reasoning: 'Look the weather up.',
          details: [{ type: 'text', text: 'Look the weather up.', signature: 'sig' }] },
        { type: 'tool-invocation', toolInvocation: call },
      ], toolInvocations: [call], reasoning: 'Look the weather up.' } },
    { id: `${prefix}-msg-3`, threadId, resourceId, role: 'assistant', type: 'v2',
      createdAt: at(12),
      content: { format: 2, parts: [
        { type: 'text', text: 'Snow in Zürich, -2.5 °C.' },
        { type: 'file', mimeType: 'image/png', data: 'iVBORw0KGgo=' },
      ], experimental_attachments: [
        { name: 'chart.png', contentType: 'image/png', url: 'https://example.com/chart.png' },
      ] } },
  ];
}

function sampleSnapshot(runId) {
  return { runId, status: 'suspended', value: { step: 'ask' },
    context: { input: DATA, ask: { status: 'suspended', payload: { q: TEXT },
      startedAt: WHEN.getTime() } },
    activePaths: [0], serializedStepGraph: [{ type: 'step', step: { id: 'ask' } }],
    suspendedPaths: { ask: [0] }, waitingPaths: {}, result: null, timestamp: WHEN.getTime() };
}

function sampleScore(prefix) {
  return {
    id: `${prefix}-score`, scorerId: 'relevance', entityId: 'agent-1', entityType: 'AGENT',
    entity: { id: 'agent-1', name: 'Helper' }, runId: `${prefix}-score-run`,
    traceId: `${prefix}-trace`, spanId: `${prefix}-span-root`,
    scorer: { id: 'relevance', name: 'Relevance', description: TEXT },
    input: [{ role: 'user', content: TEXT }], output: { text: 'fine', n: 2.5 },
    score: 0.875, reason: `because ${TEXT}`, metadata: { judge: 'gpt', cost: 1e-7 },
    analyzeStepResult: { relevant: true }, analyzePrompt: 'Is it relevant?',
    generateReasonPrompt: 'Why?', requestContext: { user: 'ada' }, source: 'LIVE',
    resourceId: `${prefix}-user`, threadId: `${prefix}-thread`,
  };
}

function sampleSpans(prefix) {
  const traceId = `${prefix}-trace`;
  const common = { traceId, entityType: 'agent', entityId: 'agent-1', entityName: 'Helper',
    userId: 'ada', resourceId: `${prefix}-user`, threadId: `${prefix}-thread`,
    runId: 'run-9', environment: 'test', serviceName: 'interop', isEvent: false };
  return [
    { ...common, spanId: `${prefix}-span-root`, parentSpanId: null, name: 'agent run',
      spanType: 'agent_run', startedAt: at(20), endedAt: at(29),
      attributes: { model: 'gpt', tokens: 12 }, metadata: { text: TEXT }, tags: ['a', 'ü'],
      input: { messages: [TEXT] }, output: { text: 'done' }, requestContext: { user: 'ada' } },
    { ...common, spanId: `${prefix}-span-tool`, parentSpanId: `${prefix}-span-root`,
      name: 'tool call', spanType: 'tool_call', startedAt: at(21), endedAt: at(25),
      attributes: { toolId: 'weather' }, input: { city: 'Zürich' },
      error: { message: 'timeout', id: 'TOOL_TIMEOUT', category: 'USER' } },
  ];
}

// What composite-store wrote (the cs-* records), read through Mastra's API.
async function readComposite(store) {
  const memory = await store.getStore('memory');
  const workflows = await store.getStore('workflows');
  const scores = await store.getStore('scores');
  const observability = await store.getStore('observability');
  const { messages } = await memory.listMessages({ threadId: 'cs-thread', perPage: false });
  return {
    thread: await memory.getThreadById({ threadId: 'cs-thread' }),
    resource: await memory.getResourceById({ resourceId: 'cs-user' }),
    messages,
    snapshot: await workflows.loadWorkflowSnapshot({ workflowName: 'cs-workflow',
      runId: 'cs-run' }),
    run: await workflows.getWorkflowRunById({ runId: 'cs-run', workflowName: 'cs-workflow' }),
    score: await scores.getScoreById({ id: 'cs-score' }),
    scoresByRun: (await scores.listScoresByRunId({ runId: 'cs-score-run',
      pagination: { page: 0, perPage: 10 } })).scores,
    trace: await observability.getTrace({ traceId: 'cs-trace' }),
  };
}

if (backend === 'records') {
  console.log(JSON.stringify(sampleRecords(args[0])));
  process.exit(0);
}
const store = await open();
await store.init();
const names = Object.keys(store.stores ?? {}).sort();
for (const name of names) {
  const domain = store.stores[name];
  if (typeof domain?.init === 'function') await domain.init();
}
const out = { backend, domains: names,
  processTimeZone: Intl.DateTimeFormat().resolvedOptions().timeZone };
if (backend.startsWith('pg')) {
  // The time zone of a session opened as Mastra's are (the test runs them away from UTC).
  const { default: pg } = await import('pg');
  const client = new pg.Client({ connectionString: args[0] });
  await client.connect();
  out.sessionTimeZone = (await client.query('SHOW TimeZone')).rows[0].TimeZone;
  await client.end();
}
if (backend.endsWith('-sample')) {
  await writeSample(store);
  out.written = written;
}
if (backend.endsWith('-read')) out.read = await readComposite(store);
console.log(JSON.stringify(out));
await store.close?.();
