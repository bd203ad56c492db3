// Create databases with Mastra's own storage init(), for the golden schema snapshot.
//
//   npm ci                      (installs the pinned @mastra/* packages from npm)
//   node make_dbs.mjs pg POSTGRES_URL SCHEMA      -> PostgresStore init() in schema SCHEMA
//   node make_dbs.mjs libsql FILE                 -> LibSQLStore init() on file:FILE
//
// init() of the composite store initialises every domain store it holds; every domain's
// init() is also called by name below, so a domain that a later Mastra stops initialising
// from the composite init() still gets its tables (and the call is a no-op otherwise).
const [backend, ...args] = process.argv.slice(2);

async function open() {
  if (backend === 'pg') {
    const [url, schemaName] = args;
    const { PostgresStore } = await import('@mastra/pg');
    return new PostgresStore({ id: 'golden', connectionString: url, schemaName });
  }
  if (backend === 'libsql') {
    const { LibSQLStore } = await import('@mastra/libsql');
    return new LibSQLStore({ id: 'golden', url: `file:${args[0]}` });
  }
  throw new Error(`usage: node make_dbs.mjs pg URL SCHEMA | libsql FILE`);
}

const store = await open();
await store.init();
const names = Object.keys(store.stores ?? {}).sort();
for (const name of names) {
  const domain = store.stores[name];
  if (typeof domain?.init === 'function') await domain.init();
}
console.log(JSON.stringify({ backend, domains: names }));
await store.close?.();
