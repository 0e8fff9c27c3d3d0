// pg-boss driven by its own API for tests/live/test_queue_pgboss.py.
// PGBOSS_ENTRY: the package's entry file (10.x CommonJS or 12.x ESM); PG_URL: the database.
// node pgboss.mjs setup | send <queue> <n> | drain <queue> | hang <queue>
const mod = await import(process.env.PGBOSS_ENTRY);
const PgBoss = mod.PgBoss ?? mod.default;
const [cmd, queue, n] = process.argv.slice(2);
const boss = new PgBoss({ connectionString: process.env.PG_URL, supervise: false, schedule: false });
boss.on('error', (e) => console.error(e.message));
await boss.start();
const db = boss.getDb();

async function pending(name) {
  const r = await db.executeSql(
    "SELECT count(*)::int AS n FROM pgboss.job WHERE name = $1 AND state < 'completed'", [name]);
  return r.rows[0].n;
}

if (cmd === 'setup') {
  await boss.createQueue('ok');
  await boss.createQueue('later');
  await boss.createQueue('boom', { retryLimit: 1, retryDelay: 0 });
  const slow = { expireInSeconds: process.env.HEARTBEAT ? 3600 : 60, retryLimit: 0 };
  if (process.env.HEARTBEAT) slow.heartbeatSeconds = 10;
  await boss.createQueue('slow', slow);
} else if (cmd === 'send') {
  for (let i = 0; i < Number(n); i++) await boss.send(queue, { i });
} else if (cmd === 'drain') {
  await boss.work(queue, { pollingIntervalSeconds: 0.5, batchSize: 10 }, async (jobs) => {
    if (queue === 'boom') throw new Error('boom');
  });
  while (await pending(queue) > 0) await new Promise((r) => setTimeout(r, 200));
} else if (cmd === 'supervise') {
  await boss.supervise(queue);  // 12: fails jobs whose heartbeat or expiry passed
} else if (cmd === 'hang') {
  await boss.work(queue, { pollingIntervalSeconds: 0.5, batchSize: 3 },
    () => new Promise(() => {}));
  console.log('working');
  await new Promise(() => {});  // until SIGKILL
}
await boss.stop({ graceful: false, wait: false });
process.exit(0);
