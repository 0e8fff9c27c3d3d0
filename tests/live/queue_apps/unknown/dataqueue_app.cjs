// @nicnocquee/dataqueue 1.24 (PostgreSQL) driven by its own code: its CLI's `migrate`
// (node-pg-migrate over the package's migrations), addJob(), createProcessor().start().
// Usage: node dataqueue_app.cjs CELL   (healthy | backlog | failed | stuck | worker-slow)
// Env: DB_NAME. Table job_queue: status pending -> processing (locked_at, locked_by,
// attempts + 1) -> completed | failed. 'failed' is both "will retry" (attempts < max_attempts,
// next_attempt_at = now + 2^attempts min) and "failed for good" (next_attempt_at NULL);
// error_history jsonb, failure_reason. reclaimStuckJobs() puts 'processing' jobs older than
// 10 min (its default) back to 'pending'.
const path = require("node:path");
const { spawn, spawnSync } = require("node:child_process");
const { initJobQueue } = require("@nicnocquee/dataqueue");

const URL = `postgres://postgres@127.0.0.1:5432/${process.env.DB_NAME}`;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const handlers = {
  ok: async () => {},
  boom: async () => { throw new Error("boom"); },
  slow: async () => { await sleep(600000); },
};

async function count(jq, where) {
  const r = await jq.getPool().query(`SELECT count(*)::int AS n FROM job_queue WHERE ${where}`);
  return r.rows[0].n;
}

async function until(what, cond, ms = 90000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

function migrate() {
  const modules = process.env.NODE_PATH.split(path.delimiter)[0];
  const pkg = path.join(modules, "@nicnocquee", "dataqueue");
  const r = spawnSync(process.execPath, [path.join(pkg, "cli.cjs"), "migrate"], {
    cwd: path.dirname(modules), stdio: "pipe",
    env: { ...process.env, PG_DATAQUEUE_DATABASE: URL },
  });
  if (r.status !== 0) throw new Error(`migrate failed: ${r.stderr}`);
}

async function main(cell) {
  const jq = initJobQueue({ databaseConfig: { connectionString: URL } });
  if (cell === "worker-slow") {
    jq.createProcessor(handlers, { batchSize: 3, jobType: "slow" }).startInBackground();
    await sleep(600000);
    return;
  }
  migrate();
  const add = async (n, jobType, maxAttempts = 3) => {
    for (let i = 0; i < n; i++) await jq.addJob({ jobType, payload: {}, maxAttempts });
  };
  if (cell === "healthy") {
    await add(5, "ok");
    await jq.createProcessor(handlers, { batchSize: 10 }).start();
  } else if (cell === "backlog") {
    await add(300, "ok");
  } else if (cell === "failed") {
    await add(10, "boom", 2);
    await jq.createProcessor(handlers, { batchSize: 10 }).start();  // attempt 1: retry in 2 min
    await jq.getPool().query("UPDATE job_queue SET next_attempt_at = now() WHERE status = 'failed'");
    await jq.createProcessor(handlers, { batchSize: 10 }).start();  // attempt 2: failed for good
  } else if (cell === "stuck") {
    await add(3, "slow");
    const worker = spawn(process.execPath, [__filename, "worker-slow"],
      { stdio: "ignore", detached: true, env: process.env });
    try {
      await until("3 processing", async () => (await count(jq, "status = 'processing'")) === 3);
    } finally {
      process.kill(-worker.pid, "SIGKILL");
    }
  } else {
    throw new Error(`unknown cell ${cell}`);
  }
  await jq.getPool().end();
}

main(process.argv[2]).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
