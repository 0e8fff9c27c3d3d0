// graphile-worker driven by its own API for tests/live/test_queue_graphile.py (NODE_PATH set).
// node graphile.js setup | add <task> <n> [queueName] | drain | hang
const { run, runOnce, runMigrations, makeWorkerUtils } = require('graphile-worker');

const connectionString = process.env.PG_URL;
const taskList = {
  ok: async () => {},
  boom: async () => { throw new Error('boom'); },
  slow: () => new Promise(() => {}),
};
const logFactory = () => () => {};
const { Logger } = require('graphile-worker');
const logger = new Logger(logFactory);

async function main() {
  const [cmd, task, n, queueName] = process.argv.slice(2);
  if (cmd === 'setup') {
    await runMigrations({ connectionString, logger });
  } else if (cmd === 'add' || cmd === 'add-overdue') {
    const utils = await makeWorkerUtils({ connectionString, logger });
    for (let i = 0; i < Number(n); i++) {
      await utils.addJob(task, { i }, { maxAttempts: task === 'boom' ? 2 : 25,
                                       ...(queueName ? { queueName } : {}),
                                       ...(cmd === 'add-overdue'
                                         ? { runAt: new Date(Date.now() - 3600e3) } : {}) });
    }
    await utils.release();
  } else if (cmd === 'drain') {
    // runOnce runs what is due now; retries come back after exp(attempts) seconds, so loop
    // until no job can still run within the next 30 s
    const { Pool } = require('pg');
    const pool = new Pool({ connectionString });
    const due = "SELECT count(*)::int AS n FROM graphile_worker._private_jobs WHERE locked_at IS NULL"
      + " AND attempts < max_attempts AND run_at < now() + interval '30 seconds'";
    while ((await pool.query(due)).rows[0].n > 0) {
      await runOnce({ connectionString, taskList, logger });
      await new Promise((r) => setTimeout(r, 300));
    }
    await pool.end();
  } else if (cmd === 'hang') {
    await run({ connectionString, taskList, concurrency: 5, pollInterval: 200, logger });
    console.log('working');
    await new Promise(() => {});
  }
}
main().then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
