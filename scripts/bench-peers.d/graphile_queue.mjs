// graphile-worker's processing rate: JOBS no-op jobs queued first, then one
// worker process runs them CONCURRENCY at a time with the library's
// defaults. The clock runs from the first job's start until the jobs table
// is empty (graphile-worker writes a completion without waiting for it, so
// the last completion is only done once the table says so). Prints
// `jobs_per_second=N`.
//
//   NO_LOG_SUCCESS=1 node graphile_queue.mjs DATABASE_URL JOBS CONCURRENCY
import { EventEmitter } from "node:events";
import { performance } from "node:perf_hooks";
import pg from "pg";
import { run, runMigrations } from "graphile-worker";

const [connectionString, jobsArg, concurrencyArg] = process.argv.slice(2);
const jobs = Number(jobsArg);
const concurrency = Number(concurrencyArg);

const pool = new pg.Pool({ connectionString, max: 1 });
const remaining = async () =>
  (await pool.query("select count(*)::int as n from graphile_worker.jobs")).rows[0].n;

await runMigrations({ connectionString });
await pool.query(
  `select graphile_worker.add_jobs(array(
     select row('noop', '{}'::json, null, null, null, null, null, null)::graphile_worker.job_spec
     from generate_series(1, $1)))`,
  [jobs],
);
if ((await remaining()) !== jobs) throw new Error(`expected ${jobs} queued jobs`);

const events = new EventEmitter();
let started = 0;
let completed = 0;
let failed = 0;
const allCompleted = new Promise((resolve) => {
  events.on("job:start", () => {
    if (started === 0) started = performance.now();
  });
  events.on("job:error", () => {
    failed += 1;
  });
  events.on("job:complete", () => {
    completed += 1;
    if (completed === jobs) resolve();
  });
});
const runner = await run({
  connectionString,
  concurrency,
  noHandleSignals: true,
  events,
  taskList: { noop: async () => {} },
});
await allCompleted;
while ((await remaining()) > 0) {
  // The last completions are in flight: the table tells when they landed.
}
const seconds = (performance.now() - started) / 1000;
await runner.stop();
await pool.end();
if (failed > 0) throw new Error(`${failed} jobs failed`);
console.log(`jobs_per_second=${Math.round(jobs / seconds)}`);
