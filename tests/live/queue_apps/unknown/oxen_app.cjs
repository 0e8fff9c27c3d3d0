// oxen-queue 0.1.12 (MySQL/MariaDB) driven by its own API: createTable(), addJobs(), process().
// Usage: node oxen_app.cjs CELL   (healthy | backlog | failed | stuck | worker-slow)
// Env: DB_NAME. Table oxen_queue: status waiting -> processing (batch_id, started_ts) ->
// success | error (result = the error's stack); created_ts is when the job may run. oxen has
// no retry counter: a work_fn that throws fails the job for good ('error'). A job 'processing'
// longer than process({timeout}) (60 s by default) is put back to 'waiting' by the next
// worker's recovery pass (every minute), or marked 'stuck' with recover_stuck_jobs: false.
const { spawn } = require("node:child_process");
const Oxen = require("oxen-queue");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const queue = (jobType) => new Oxen({
  mysql_config: { host: "127.0.0.1", port: 3306, user: "root", password: "",
    database: process.env.DB_NAME },
  job_type: jobType,
});

async function count(ox, where) {
  const [rows] = await ox.db.query(`SELECT count(*) AS n FROM oxen_queue WHERE ${where}`);
  return Number(rows[0].n);
}

async function until(what, cond, ms = 90000) {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(100);
  }
}

async function main(cell) {
  if (cell === "worker-slow") {
    const ox = queue("slow");
    ox.process({ work_fn: () => sleep(600000), concurrency: 3 });
    await sleep(600000);
    return;
  }
  const ox = queue(cell === "stuck" ? "slow" : "default");
  await ox.createTable();
  const add = (n, body) => ox.addJobs(Array.from({ length: n }, () => ({ body })));
  if (cell === "healthy") {
    await add(5, { task: "ok" });
    ox.process({ work_fn: async () => "ok", concurrency: 4 });
    await until("5 success", async () => (await count(ox, "status = 'success'")) === 5);
  } else if (cell === "backlog") {
    await add(300, { task: "ok" });
  } else if (cell === "failed") {
    await add(10, { task: "boom" });
    ox.process({ work_fn: async () => { throw new Error("boom"); }, concurrency: 4 });
    await until("10 error", async () => (await count(ox, "status = 'error'")) === 10);
  } else if (cell === "stuck") {
    await add(3, { task: "slow" });
    const worker = spawn(process.execPath, [__filename, "worker-slow"],
      { stdio: "ignore", detached: true, env: process.env });
    try {
      await until("3 processing", async () => (await count(ox, "status = 'processing'")) === 3);
    } finally {
      process.kill(-worker.pid, "SIGKILL");
    }
  } else {
    throw new Error(`unknown cell ${cell}`);
  }
  ox.stopProcessing();
  await ox.db.end();
}

main(process.argv[2]).then(() => process.exit(0), (e) => { console.error(e); process.exit(1); });
