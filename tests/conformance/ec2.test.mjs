// ec2.test.mjs - tradewind-fakecloud against the official AWS SDK for
// JavaScript (@aws-sdk/client-ec2, pinned in package-lock.json).
//
// Each test starts the fake on port 0 (its first stdout line names the
// address), points an EC2Client at it and asserts what the SDK parsed:
// the SDK accepts empty or namespace-less XML without complaint, so
// "no error" alone proves nothing.  Run by tests/fakecloud.cmake after
// `npm ci`; TW_FAKECLOUD names the binary.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import {
  EC2Client,
  RunInstancesCommand,
  DescribeInstancesCommand,
  DescribeSpotPriceHistoryCommand,
  DescribeInstanceTypesCommand,
  DescribeAvailabilityZonesCommand,
  TerminateInstancesCommand,
  paginateDescribeInstances,
  DescribeRegionsCommand,
  DescribeAddressesCommand,
  CreateTagsCommand,
  DeleteTagsCommand,
  DescribeTagsCommand,
  DescribeInstanceStatusCommand,
  DescribeSpotInstanceRequestsCommand,
} from "@aws-sdk/client-ec2";

const BIN = process.env.TW_FAKECLOUD;
const CREDS = { accessKeyId: "AKIDTRADEWINDFAKE", secretAccessKey: "tradewind-fake-secret" };
let proc, endpoint;

before(async () => {
  assert.ok(BIN, "TW_FAKECLOUD must name the tradewind-fakecloud binary");
  proc = spawn(BIN, ["--listen", "127.0.0.1:0", "--seed", "11", "--pending-ms", "0"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const first = await new Promise((resolve, reject) => {
    const rl = createInterface({ input: proc.stdout });
    rl.once("line", resolve);
    proc.once("exit", (code) => reject(new Error(`fakecloud exited ${code}`)));
    setTimeout(() => reject(new Error("no listening line in 10 s")), 10000).unref();
  });
  const m = /^listening (http:\/\/127\.0\.0\.1:\d+)$/.exec(first);
  assert.ok(m, `first line: ${first}`);
  endpoint = m[1];
});

after(() => {
  if (proc) proc.kill("SIGTERM");
});

const client = (over = {}) =>
  new EC2Client({ region: "us-east-1", endpoint, credentials: CREDS, maxAttempts: 1, ...over });

const control = async (method, path, body) => {
  const r = await fetch(endpoint + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, json: await r.json() };
};

const spotRequest = (token) => ({
  ImageId: "ami-12345678",
  InstanceType: "m5.large",
  MinCount: 1,
  MaxCount: 1,
  ClientToken: token,
  Placement: { AvailabilityZone: "us-east-1b" },
  InstanceMarketOptions: {
    MarketType: "spot",
    SpotOptions: { MaxPrice: "0.09", SpotInstanceType: "one-time", InstanceInterruptionBehavior: "terminate" },
  },
  TagSpecifications: [{ ResourceType: "instance", Tags: [{ Key: "broker-job", Value: "job-42" }] }],
});

test("RunInstances with spot options is parsed field by field", async () => {
  const out = await client().send(new RunInstancesCommand(spotRequest("conf-spot-1")));
  assert.equal(out.$metadata.httpStatusCode, 200);
  assert.match(out.$metadata.requestId ?? "", /^[0-9a-f-]{36}$/);
  assert.match(out.ReservationId, /^r-[0-9a-f]{17}$/);
  assert.equal(out.Instances.length, 1);
  const i = out.Instances[0];
  assert.match(i.InstanceId, /^i-[0-9a-f]{17}$/);
  assert.equal(i.InstanceLifecycle, "spot");
  assert.match(i.SpotInstanceRequestId, /^sir-[0-9a-f]{8}$/);
  assert.equal(i.InstanceType, "m5.large");
  assert.equal(i.ImageId, "ami-12345678");
  assert.equal(i.Placement.AvailabilityZone, "us-east-1b");
  assert.equal(i.State.Name, "pending");
  assert.equal(i.State.Code, 0);
  assert.ok(i.LaunchTime instanceof Date && !Number.isNaN(i.LaunchTime.getTime()));
  assert.deepEqual(i.Tags, [{ Key: "broker-job", Value: "job-42" }]);
  assert.equal(i.ClientToken, "conf-spot-1");

  // The same client token answers with the same instance.
  const again = await client().send(new RunInstancesCommand(spotRequest("conf-spot-1")));
  assert.equal(again.Instances[0].InstanceId, i.InstanceId);
});

test("DescribeInstances: state, type, tags and paging with NextToken", async () => {
  await control("POST", "/_fake/reset");
  const ec2 = client();
  const run = await ec2.send(
    new RunInstancesCommand({
      ImageId: "ami-12345678",
      InstanceType: "c5.xlarge",
      MinCount: 7,
      MaxCount: 7,
      TagSpecifications: [{ ResourceType: "instance", Tags: [{ Key: "team", Value: "conformance" }] }],
    }),
  );
  const launched = run.Instances.map((i) => i.InstanceId).sort();
  assert.equal(launched.length, 7);

  const filters = [{ Name: "tag:team", Values: ["conformance"] }];
  const page1 = await ec2.send(new DescribeInstancesCommand({ Filters: filters, MaxResults: 5 }));
  const ids1 = page1.Reservations.flatMap((r) => r.Instances.map((i) => i.InstanceId));
  assert.equal(ids1.length, 5);
  assert.equal(typeof page1.NextToken, "string");
  assert.ok(page1.NextToken.length > 0);
  const first = page1.Reservations[0].Instances[0];
  assert.equal(first.State.Name, "running"); // --pending-ms 0
  assert.equal(first.State.Code, 16);
  assert.equal(first.InstanceType, "c5.xlarge");
  assert.deepEqual(first.Tags, [{ Key: "team", Value: "conformance" }]);
  assert.equal(page1.Reservations[0].OwnerId, "123456789012");

  const page2 = await ec2.send(
    new DescribeInstancesCommand({ Filters: filters, MaxResults: 5, NextToken: page1.NextToken }),
  );
  const ids2 = page2.Reservations.flatMap((r) => r.Instances.map((i) => i.InstanceId));
  assert.equal(ids2.length, 2);
  assert.equal(page2.NextToken, undefined);
  assert.deepEqual([...ids1, ...ids2].sort(), launched);

  // The SDK's own paginator follows the tokens to the end.
  const seen = [];
  for await (const page of paginateDescribeInstances({ client: ec2, pageSize: 5 }, { Filters: filters })) {
    for (const r of page.Reservations) for (const i of r.Instances) seen.push(i.InstanceId);
  }
  assert.deepEqual(seen.sort(), launched);
});

test("DescribeSpotPriceHistory: SpotPrice strings and Date timestamps", async () => {
  const out = await client().send(
    new DescribeSpotPriceHistoryCommand({
      InstanceTypes: ["p5.48xlarge"],
      ProductDescriptions: ["Linux/UNIX"],
      StartTime: new Date(Date.now() - 24 * 3600 * 1000),
      MaxResults: 10,
    }),
  );
  assert.equal(out.SpotPriceHistory.length, 10);
  assert.equal(typeof out.NextToken, "string");
  for (const p of out.SpotPriceHistory) {
    assert.equal(p.InstanceType, "p5.48xlarge");
    assert.equal(p.ProductDescription, "Linux/UNIX");
    assert.equal(typeof p.SpotPrice, "string");
    assert.match(p.SpotPrice, /^\d+\.\d{6}$/);
    assert.ok(Number(p.SpotPrice) > 0 && Number(p.SpotPrice) <= 55.04);
    assert.ok(p.Timestamp instanceof Date && !Number.isNaN(p.Timestamp.getTime()));
    assert.match(p.AvailabilityZone, /^us-east-1[a-f]$/);
  }
  const ts = out.SpotPriceHistory.map((p) => p.Timestamp.getTime());
  assert.deepEqual([...ts].sort((a, b) => b - a), ts, "newest first");
});

test("DescribeInstanceTypes and DescribeAvailabilityZones", async () => {
  const t = await client().send(new DescribeInstanceTypesCommand({ InstanceTypes: ["p4de.24xlarge"] }));
  const it = t.InstanceTypes[0];
  assert.equal(it.InstanceType, "p4de.24xlarge");
  assert.equal(it.VCpuInfo.DefaultVCpus, 96);
  assert.equal(it.GpuInfo.Gpus[0].Name, "A100");
  assert.equal(it.GpuInfo.Gpus[0].Count, 8);
  assert.equal(it.GpuInfo.Gpus[0].MemoryInfo.SizeInMiB, 81920);
  assert.deepEqual(it.ProcessorInfo.SupportedArchitectures, ["x86_64"]);
  const z = await client({ region: "us-west-2" }).send(new DescribeAvailabilityZonesCommand({}));
  assert.equal(z.AvailabilityZones.length, 4);
  assert.equal(z.AvailabilityZones[0].ZoneName, "us-west-2a");
  assert.equal(z.AvailabilityZones[0].ZoneId, "usw2-az1");
  assert.equal(z.AvailabilityZones[0].RegionName, "us-west-2");
  assert.equal(z.AvailabilityZones[0].State, "available");
});

test("TerminateInstances reports CurrentState and PreviousState", async () => {
  const ec2 = client();
  const run = await ec2.send(
    new RunInstancesCommand({ ImageId: "ami-12345678", InstanceType: "m6g.large", MinCount: 1, MaxCount: 1 }),
  );
  const id = run.Instances[0].InstanceId;
  const out = await ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
  assert.equal(out.TerminatingInstances.length, 1);
  const s = out.TerminatingInstances[0];
  assert.equal(s.InstanceId, id);
  assert.deepEqual(s.CurrentState, { Code: 32, Name: "shutting-down" });
  assert.deepEqual(s.PreviousState, { Code: 16, Name: "running" });
});

test("a wrong secret is SignatureDoesNotMatch with status 403", async () => {
  const bad = client({ credentials: { ...CREDS, secretAccessKey: "wrong" } });
  await assert.rejects(bad.send(new DescribeInstancesCommand({})), (e) => {
    assert.equal(e.name, "SignatureDoesNotMatch");
    assert.equal(e.$metadata.httpStatusCode, 403);
    assert.equal(e.$fault, "client");
    assert.match(e.$metadata.requestId ?? "", /^[0-9a-f-]{36}$/);
    return true;
  });
});

test("faults surface as the SDK's modelled errors", async () => {
  await control("POST", "/_fake/reset");
  const ec2 = client();
  let r = await control("POST", "/_fake/faults", {
    kind: "capacity", instance_type: "p5.48xlarge", zone: "us-east-1c", count: 1,
  });
  assert.equal(r.status, 201);
  await assert.rejects(
    ec2.send(new RunInstancesCommand({
      ImageId: "ami-12345678", InstanceType: "p5.48xlarge", MinCount: 1, MaxCount: 1,
      Placement: { AvailabilityZone: "us-east-1c" },
    })),
    (e) => e.name === "InsufficientInstanceCapacity" && e.$metadata.httpStatusCode === 500,
  );
  await control("POST", "/_fake/faults", { kind: "throttle", action: "DescribeInstances", count: 1 });
  await assert.rejects(ec2.send(new DescribeInstancesCommand({})), (e) =>
    e.name === "RequestLimitExceeded" && e.$metadata.httpStatusCode === 503);
  // With retries on, the SDK rides over one throttle.
  await control("POST", "/_fake/faults", { kind: "throttle", action: "DescribeInstances", count: 1 });
  const ok = await client({ maxAttempts: 3 }).send(new DescribeInstancesCommand({}));
  assert.equal(ok.$metadata.attempts, 2);
  const state = await control("GET", "/_fake/ec2/state");
  assert.ok(state.json.errors.RequestLimitExceeded >= 2);
});

test("DescribeRegions lists the catalog's regions", async () => {
  const out = await client().send(new DescribeRegionsCommand({}));
  const names = out.Regions.map((r) => r.RegionName).sort();
  assert.deepEqual(names, ["eu-west-1", "us-east-1", "us-west-2"]);
  const r = out.Regions.find((x) => x.RegionName === "us-west-2");
  assert.equal(r.Endpoint, "ec2.us-west-2.amazonaws.com");
  assert.equal(r.OptInStatus, "opt-in-not-required");
  const one = await client().send(new DescribeRegionsCommand({ RegionNames: ["eu-west-1"] }));
  assert.equal(one.Regions.length, 1);
});

test("DescribeAddresses answers an empty set", async () => {
  const out = await client().send(new DescribeAddressesCommand({}));
  assert.deepEqual(out.Addresses, []);
  await assert.rejects(client().send(new DescribeAddressesCommand({ PublicIps: ["198.51.100.7"] })),
    (e) => e.name === "InvalidAddress.NotFound" && e.$metadata.httpStatusCode === 400);
});

test("CreateTags tags an instance; DescribeTags and DescribeInstances see it", async () => {
  const ec2 = client();
  const run = await ec2.send(
    new RunInstancesCommand({ ImageId: "ami-12345678", InstanceType: "m5.large", MinCount: 1, MaxCount: 1 }),
  );
  const id = run.Instances[0].InstanceId;
  const ct = await ec2.send(new CreateTagsCommand({ Resources: [id], Tags: [{ Key: "tw-job", Value: "j-7" }] }));
  assert.equal(ct.$metadata.httpStatusCode, 200);
  const tags = await ec2.send(new DescribeTagsCommand({ Filters: [{ Name: "resource-id", Values: [id] }] }));
  assert.deepEqual(tags.Tags, [{ ResourceId: id, ResourceType: "instance", Key: "tw-job", Value: "j-7" }]);
  const d = await ec2.send(new DescribeInstancesCommand({ Filters: [{ Name: "tag:tw-job", Values: ["j-7"] }] }));
  assert.equal(d.Reservations.length, 1);
  assert.equal(d.Reservations[0].Instances[0].InstanceId, id);
  assert.deepEqual(d.Reservations[0].Instances[0].Tags, [{ Key: "tw-job", Value: "j-7" }]);
  await assert.rejects(ec2.send(new CreateTagsCommand({ Resources: ["i-0123456789abcdef0"], Tags: [{ Key: "k", Value: "v" }] })),
    (e) => e.name === "InvalidInstanceID.NotFound");
});

test("DeleteTags: by key, by key and value, or every tag", async () => {
  const ec2 = client();
  const run = await ec2.send(
    new RunInstancesCommand({
      ImageId: "ami-12345678", InstanceType: "m5.large", MinCount: 1, MaxCount: 1,
      TagSpecifications: [{ ResourceType: "instance", Tags: [
        { Key: "a", Value: "1" }, { Key: "b", Value: "2" }, { Key: "c", Value: "3" }] }],
    }),
  );
  const id = run.Instances[0].InstanceId;
  const keys = async () => {
    const t = await ec2.send(new DescribeTagsCommand({ Filters: [{ Name: "resource-id", Values: [id] }] }));
    return t.Tags.map((x) => x.Key).sort();
  };
  const del = await ec2.send(new DeleteTagsCommand({ Resources: [id], Tags: [{ Key: "a" }, { Key: "b", Value: "no" }] }));
  assert.equal(del.$metadata.httpStatusCode, 200);
  assert.deepEqual(await keys(), ["b", "c"]);
  await ec2.send(new DeleteTagsCommand({ Resources: [id], Tags: [{ Key: "b", Value: "2" }] }));
  assert.deepEqual(await keys(), ["c"]);
  await ec2.send(new DeleteTagsCommand({ Resources: [id] }));
  assert.deepEqual(await keys(), []);
  await assert.rejects(ec2.send(new DeleteTagsCommand({ Resources: ["i-0123456789abcdef0"] })),
    (e) => e.name === "InvalidInstanceID.NotFound");
});

test("DescribeInstanceStatus: running only, or all with IncludeAllInstances", async () => {
  const ec2 = client();
  const run = await ec2.send(
    new RunInstancesCommand({ ImageId: "ami-12345678", InstanceType: "c5.xlarge", MinCount: 1, MaxCount: 1 }),
  );
  const id = run.Instances[0].InstanceId;
  const st = await ec2.send(new DescribeInstanceStatusCommand({ InstanceIds: [id] }));
  assert.equal(st.InstanceStatuses.length, 1); // --pending-ms 0: running at once
  const s = st.InstanceStatuses[0];
  assert.equal(s.InstanceId, id);
  assert.deepEqual(s.InstanceState, { Code: 16, Name: "running" });
  assert.ok(["ok", "initializing"].includes(s.SystemStatus.Status));
  assert.equal(s.InstanceStatus.Details[0].Name, "reachability");
  await ec2.send(new TerminateInstancesCommand({ InstanceIds: [id] }));
  const none = await ec2.send(new DescribeInstanceStatusCommand({ InstanceIds: [id] }));
  assert.deepEqual(none.InstanceStatuses, []);
  const all = await ec2.send(new DescribeInstanceStatusCommand({ InstanceIds: [id], IncludeAllInstances: true }));
  assert.equal(all.InstanceStatuses[0].InstanceState.Name, "shutting-down");
  assert.equal(all.InstanceStatuses[0].InstanceStatus.Status, "not-applicable");
});

test("a spot RunInstances makes a spot request DescribeSpotInstanceRequests shows", async () => {
  const ec2 = client();
  const run = await ec2.send(new RunInstancesCommand(spotRequest("conf-sir-1")));
  const i = run.Instances[0];
  const out = await ec2.send(new DescribeSpotInstanceRequestsCommand({
    SpotInstanceRequestIds: [i.SpotInstanceRequestId],
  }));
  assert.equal(out.SpotInstanceRequests.length, 1);
  const r = out.SpotInstanceRequests[0];
  assert.equal(r.InstanceId, i.InstanceId);
  assert.equal(r.State, "active");
  assert.equal(r.Status.Code, "fulfilled");
  assert.equal(r.Type, "one-time");
  assert.equal(r.SpotPrice, "0.090000");
  assert.equal(r.LaunchSpecification.InstanceType, "m5.large");
  assert.equal(r.LaunchedAvailabilityZone, "us-east-1b");
  assert.equal(r.InstanceInterruptionBehavior, "terminate");
  assert.ok(r.CreateTime instanceof Date);
  const byToken = await ec2.send(new DescribeInstancesCommand({
    Filters: [{ Name: "client-token", Values: ["conf-sir-1"] },
      { Name: "instance-state-name", Values: ["pending", "running"] }],
  }));
  assert.equal(byToken.Reservations[0].Instances[0].InstanceId, i.InstanceId);
  assert.equal(byToken.Reservations[0].Instances[0].LaunchTime.getUTCMilliseconds(), 0);
});

test("an interruption notice marks the spot request: status-code filter, paged", async () => {
  const ec2 = client();
  const ids = [];
  for (let k = 0; k < 7; k++) {
    const run = await ec2.send(new RunInstancesCommand(spotRequest(`conf-sirn-${k}`)));
    ids.push(run.Instances[0].InstanceId);
  }
  const marked = ids.slice(0, 6);
  for (const id of marked) {
    const n = await control("POST", `/_fake/ec2/instances/${id}/interrupt`, { lead_ms: 120000 });
    assert.equal(n.status, 200);
  }
  const Filters = [
    { Name: "status-code", Values: ["marked-for-termination", "marked-for-stop"] },
    { Name: "state", Values: ["active"] },
  ];
  const seen = [];
  let NextToken, pages = 0;
  do {
    const out = await ec2.send(new DescribeSpotInstanceRequestsCommand({ Filters, MaxResults: 5, NextToken }));
    pages++;
    for (const r of out.SpotInstanceRequests) {
      assert.equal(r.State, "active");
      assert.equal(r.Status.Code, "marked-for-termination");
      assert.ok(r.Status.UpdateTime instanceof Date);
      assert.equal(r.InstanceInterruptionBehavior, "terminate");
      seen.push(r.InstanceId);
    }
    NextToken = out.NextToken;
  } while (NextToken);
  assert.equal(pages, 2);
  for (const id of marked) assert.ok(seen.includes(id), `${id} not marked`);
  assert.ok(!seen.includes(ids[6]), "an unmarked request answered");
  await ec2.send(new TerminateInstancesCommand({ InstanceIds: ids }));
  const after = await ec2.send(new DescribeSpotInstanceRequestsCommand({ Filters }));
  assert.ok(!after.SpotInstanceRequests.some((r) => ids.includes(r.InstanceId)));
  const closed = await ec2.send(new DescribeSpotInstanceRequestsCommand({
    Filters: [{ Name: "instance-id", Values: [ids[0]] }],
  }));
  assert.equal(closed.SpotInstanceRequests[0].State, "closed");
  assert.equal(closed.SpotInstanceRequests[0].Status.Code, "instance-terminated-by-user");
});
