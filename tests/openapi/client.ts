// client.ts - a client generated from api/openapi.yaml (openapi-typescript
// writes schema.d.ts, openapi-fetch sends the requests): submits a job,
// waits for it to finish, and reads its events.  tsc --strict checks every
// path, parameter and body below against the document, so a route or field
// the document lacks fails the build of this file.
//
//   node out/client.js BASE_URL
//
// Exits 0 when the job succeeded and every answer had the documented shape.
import createClient from "openapi-fetch";
import type { paths, components } from "./schema.js";

type Job = components["schemas"]["Job"];
type JobSpec = components["schemas"]["JobSpec"];

const base = process.argv[2];
if (!base) {
  console.error("usage: client.js BASE_URL");
  process.exit(2);
}
const client = createClient<paths>({ baseUrl: base });

function fail(msg: string): never {
  console.error(`client: ${msg}`);
  process.exit(1);
}

const spec: JobSpec = {
  name: "openapi-client",
  tenant: "default",
  resources: { cpus: "1+" },
  duration: "2s",
  run: "echo hello from a generated client",
};

const created = await client.POST("/v1/jobs", {
  body: spec,
  params: { header: { "Idempotency-Key": `openapi-client-${process.pid}` } },
});
if (created.error || !created.data)
  fail(`submit: ${created.response.status} ${JSON.stringify(created.error)}`);
if (created.response.status !== 201)
  fail(`submit: expected 201, got ${created.response.status}`);
const id: string = created.data.id;
if (!/^j-[0-9a-z]+$/.test(id)) fail(`submit: odd job id ${id}`);
console.log(`submitted ${id} (${created.data.state})`);

const terminal = new Set(["succeeded", "failed", "cancelled"]);
let job: Job | undefined;
const deadline = Date.now() + 90_000;
let last = "";
for (;;) {
  const got = await client.GET("/v1/jobs/{id}", {
    params: { path: { id } },
  });
  if (got.error || !got.data)
    fail(`get: ${got.response.status} ${JSON.stringify(got.error)}`);
  job = got.data;
  if (job.state !== last) {
    console.log(`${id}: ${job.state} (${job.reason})`);
    last = job.state;
  }
  if (terminal.has(job.state)) break;
  if (Date.now() > deadline) fail(`${id} still ${job.state} after 90 s`);
  await new Promise((r) => setTimeout(r, 250));
}
if (job.state !== "succeeded")
  fail(`${id} ended ${job.state}: ${job.reason}`);
if (job.exit_code !== 0) fail(`${id} exit code ${job.exit_code}`);

const events = await client.GET("/v1/jobs/{id}/events", {
  params: { path: { id } },
});
if (events.error || !events.data)
  fail(`events: ${events.response.status}`);
const list = JSON.stringify(events.data);
if (!list.includes("succeeded")) fail(`events do not show the success: ${list}`);

const page = await client.GET("/v1/jobs", {
  params: { query: { state: "succeeded", limit: 10 } },
});
if (page.error || !page.data) fail(`list: ${page.response.status}`);
if (!page.data.items.some((j) => j.id === id))
  fail(`${id} missing from GET /v1/jobs?state=succeeded`);

// A refused spec comes back as the documented problem body.
const bad = await client.POST("/v1/jobs", {
  body: { name: "bad", resources: { cpus: "eight" } } as JobSpec,
});
if (bad.response.status !== 400) fail(`bad spec: got ${bad.response.status}`);
const problem = bad.error as components["schemas"]["Problem"] | undefined;
if (!problem || typeof problem.title !== "string")
  fail(`bad spec: no problem body: ${JSON.stringify(bad.error)}`);
console.log(`ok: ${id} succeeded; a bad spec was refused: ${problem.detail ?? problem.title}`);
