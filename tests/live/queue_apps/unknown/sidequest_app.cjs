// sidequest 1.16 (PostgreSQL and MySQL/MariaDB backends, knex migrations) driven by its own API:
// Sidequest.start() migrates and runs workers, Sidequest.build(Job).enqueue() enqueues.
// Usage: node sidequest_app.cjs CELL   (healthy | backlog | failed | stuck | worker-slow)
// Env: DB_ENGINE (postgresql | mariadb), DB_NAME.
// sidequest_jobs: state waiting -> claimed (claimed_by, claimed_at) -> running (attempted_at,
// attempt) -> completed | failed (failed_at, errors) | canceled. A 'running' job older than its
// timeout (else releaseStaleJobsMaxStaleMs, 10 min) is stale and released by the engine's
// routine; maxAttempts(2) + retryDelay(0) make a failing job fail for good after 2 tries.
const { spawn } = require("node:child_process");
const { Sidequest } = require("sidequest");
const { OkJob, BoomJob, SlowJob } = require("./sidequest_jobs.cjs");

const DB = process.env.DB_NAME;
const backend = process.env.DB_ENGINE === "mariadb"
  ? { driver: "@sidequest/mysql-backend", config: `mysql://root@127.0.0.1:3306/${DB}` }
  : { driver: "@sidequest/postgres-backend", config: `postgres://postgres@127.0.0.1:5432/${DB}` };
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function count(where) {
  const knex = Sidequest.getBackend().knex || Sidequest.getBackend().backend?.knex;
  const rows = await knex("sidequest_jobs").whereRaw(where).count({ n: "*" });
  return Number(rows[0].n);
}

async function until(what, cond, ms = 90000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function start(queues) {
  await Sidequest.start({
    backend, queues, dashboard: { enabled: false }, logger: { level: "error" },
    releaseStaleJobsIntervalMin: false, cleanupFinishedJobsIntervalMin: false,
    jobPollingInterval: 100, fork: false,  // in-process runtime: its fork has a fixed 5 s start timeout
  });
}

async function main(cell) {
  if (cell === "worker-slow") {
    await start([{ name: "slow", concurrency: 3 }]);
    await sleep(600000);
    return;
  }
  // enqueue-only: configure() migrates and does not run workers
  await Sidequest.configure({ backend, dashboard: { enabled: false }, logger: { level: "error" } });
  if (cell === "healthy") {
    for (let i = 0; i < 5; i++) await Sidequest.build(OkJob).queue("default").enqueue();
  } else if (cell === "backlog") {
    for (let i = 0; i < 300; i++) await Sidequest.build(OkJob).queue("default").enqueue();
  } else if (cell === "failed") {
    for (let i = 0; i < 10; i++) {
      await Sidequest.build(BoomJob).queue("default").maxAttempts(2).retryDelay(0).enqueue();
    }
  } else if (cell === "stuck") {
    for (let i = 0; i < 3; i++) await Sidequest.build(SlowJob).queue("slow").enqueue();
  } else {
    throw new Error(`unknown cell ${cell}`);
  }
  if (cell === "healthy" || cell === "failed") {
    await Sidequest.stop();
    await start([{ name: "default", concurrency: 4 }]);
    const done = cell === "healthy" ? "state = 'completed'" : "state = 'failed'";
    await until(done, async () => (await count(done)) === (cell === "healthy" ? 5 : 10));
  } else if (cell === "stuck") {
    const worker = spawn(process.execPath, [__filename, "worker-slow"],
      { stdio: "ignore", detached: true, env: process.env });
    try {
      await until("3 running slow jobs", async () => (await count("state = 'running'")) === 3);
    } finally {
      process.kill(-worker.pid, "SIGKILL");
    }
  }
  await Sidequest.stop();
}

main(process.argv[2]).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
