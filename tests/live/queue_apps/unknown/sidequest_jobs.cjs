// Job classes for sidequest_app.cjs (sidequest runs them by this script's path in its workers).
const { Job } = require("sidequest");

class OkJob extends Job {
  async run() { return "ok"; }
}
class BoomJob extends Job {
  async run() { throw new Error("boom"); }
}
class SlowJob extends Job {
  async run() { await new Promise((r) => setTimeout(r, 600000)); }
}
module.exports = { OkJob, BoomJob, SlowJob };
