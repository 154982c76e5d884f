// ecs.test.mjs - tradewind-fakecloud's ECS module against the official
// Alibaba Cloud SDK for JavaScript (@alicloud/ecs20140526, pinned in
// package-lock.json), in both of its signature forms: ACS3-HMAC-SHA256
// (its default) and the legacy HMAC-SHA1 (signatureAlgorithm "v2").
//
// Each test asserts the fields the SDK parsed out of the fake's answers,
// and the fake's own state as witness.  Run by tests/alibaba.cmake after
// `npm ci`; TW_FAKECLOUD names the binary.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import Ecs20140526 from "@alicloud/ecs20140526";
import OpenApi from "@alicloud/openapi-client";

const Ecs = Ecs20140526.default;
const $Ecs = Ecs20140526;
const BIN = process.env.TW_FAKECLOUD;
const AK = "AKIDTRADEWINDFAKE";
const SK = "tradewind-fake-secret";
let proc, endpoint, hostport;

before(async () => {
  assert.ok(BIN, "TW_FAKECLOUD must name the tradewind-fakecloud binary");
  proc = spawn(BIN, ["--listen", "127.0.0.1:0", "--seed", "5", "--pending-ms", "0"], {
    stdio: ["ignore", "pipe", "inherit"],
  });
  const first = await new Promise((resolve, reject) => {
    const rl = createInterface({ input: proc.stdout });
    rl.once("line", resolve);
    proc.once("exit", (code) => reject(new Error(`fakecloud exited ${code}`)));
    setTimeout(() => reject(new Error("no listening line in 10 s")), 10000).unref();
  });
  const m = /^listening (http:\/\/(127\.0\.0\.1:\d+))$/.exec(first);
  assert.ok(m, `first line: ${first}`);
  endpoint = m[1];
  hostport = m[2];
});

after(() => {
  if (proc) proc.kill("SIGTERM");
});

const client = (sig, secret = SK) => {
  const cfg = new OpenApi.Config({
    accessKeyId: AK, accessKeySecret: secret, regionId: "cn-hangzhou",
    endpoint: hostport, protocol: "HTTP",
  });
  if (sig === "v2") cfg.signatureAlgorithm = "v2";
  return new Ecs(cfg);
};

const control = async (method, path, body) => {
  const r = await fetch(endpoint + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, json: await r.json() };
};

const spotRun = (token, extra = {}) =>
  new $Ecs.RunInstancesRequest({
    regionId: "cn-hangzhou", zoneId: "cn-hangzhou-i",
    imageId: "ubuntu_22_04_x64_20G_alibase_20240101.vhd",
    instanceType: "ecs.g7.large", instanceChargeType: "PostPaid",
    spotStrategy: "SpotWithPriceLimit", spotPriceLimit: 0.5, spotDuration: 1,
    spotInterruptionBehavior: "Terminate", amount: 1, clientToken: token,
    tag: [new $Ecs.RunInstancesRequestTag({ key: "tradewind:job", value: token })],
    ...extra,
  });

for (const sig of ["acs3", "v2"]) {
  test(`RunInstances with SpotStrategy, then DescribeInstances (${sig})`, async () => {
    const ecs = client(sig);
    const run = await ecs.runInstances(spotRun(`job-${sig}`));
    assert.equal(run.statusCode, 200);
    const ids = run.body.instanceIdSets.instanceIdSet;
    assert.equal(ids.length, 1);
    assert.match(ids[0], /^i-bp[0-9a-z]{18}$/);
    assert.match(run.body.requestId, /^[0-9A-F-]{36}$/);
    assert.ok(run.body.tradePrice > 0 && run.body.tradePrice <= 0.5);

    const d = await ecs.describeInstances(new $Ecs.DescribeInstancesRequest({
      regionId: "cn-hangzhou", instanceIds: JSON.stringify(ids),
    }));
    assert.equal(d.body.totalCount, 1);
    const inst = d.body.instances.instance[0];
    assert.equal(inst.instanceId, ids[0]);
    assert.equal(inst.zoneId, "cn-hangzhou-i");
    assert.equal(inst.instanceType, "ecs.g7.large");
    assert.equal(inst.spotStrategy, "SpotWithPriceLimit");
    assert.equal(inst.spotPriceLimit, 0.5);
    assert.equal(inst.spotDuration, 1);
    assert.equal(inst.cpu, 2);
    assert.equal(inst.memory, 8192);
    assert.ok(["Pending", "Running"].includes(inst.status));
    assert.match(inst.creationTime, /^\d{4}-\d\d-\d\dT\d\d:\d\dZ$/);
    assert.deepEqual(inst.tags.tag.map((t) => [t.tagKey, t.tagValue]),
      [["tradewind:job", `job-${sig}`]]);
    assert.equal(inst.vpcAttributes.privateIpAddress.ipAddress.length, 1);

    // The fake's witness: one instance for the token, spot as asked.
    const st = await control("GET", "/_fake/alibaba/state");
    const mine = st.json.instances.filter((i) => i.ClientToken === `job-${sig}`);
    assert.equal(mine.length, 1);
    assert.equal(mine[0].SpotStrategy, "SpotWithPriceLimit");

    // The same client token again: the same instance, not a second one.
    const again = await ecs.runInstances(spotRun(`job-${sig}`));
    assert.deepEqual(again.body.instanceIdSets.instanceIdSet, ids);
  });

  test(`OperationDenied.NoStock reaches the SDK as its error (${sig})`, async () => {
    const r = await control("POST", "/_fake/alibaba/stock", {
      instance_type: "ecs.gn7-c12g1.3xlarge", zone: "cn-hangzhou-j", status: "WithoutStock",
    });
    assert.equal(r.status, 200);
    await assert.rejects(
      client(sig).runInstances(spotRun(`nostock-${sig}`, {
        instanceType: "ecs.gn7-c12g1.3xlarge", zoneId: "cn-hangzhou-j",
        spotStrategy: "SpotAsPriceGo", spotPriceLimit: undefined,
      })),
      (e) => {
        assert.equal(e.code, "OperationDenied.NoStock");
        assert.equal(e.statusCode, 403);
        assert.match(e.data.RequestId, /^[0-9A-F-]{36}$/);
        return true;
      });
  });

  test(`a wrong secret is SignatureDoesNotMatch (${sig})`, async () => {
    await assert.rejects(
      client(sig, "not-the-secret").describeInstances(
        new $Ecs.DescribeInstancesRequest({ regionId: "cn-hangzhou" })),
      (e) => {
        assert.equal(e.code, "SignatureDoesNotMatch");
        assert.equal(e.statusCode, 400);
        return true;
      });
    const st = await control("GET", "/_fake/alibaba/state");
    assert.ok(st.json.errors.SignatureDoesNotMatch >= 1);
  });
}

test("DescribeInstances pages with MaxResults and NextToken", async () => {
  const ecs = client("acs3");
  for (let i = 0; i < 3; i++) await ecs.runInstances(spotRun(`page-${i}`));
  const seen = [];
  let token, pages = 0;
  do {
    const r = await ecs.describeInstances(new $Ecs.DescribeInstancesRequest({
      regionId: "cn-hangzhou", maxResults: 2, nextToken: token,
      tag: [new $Ecs.DescribeInstancesRequestTag({ key: "tradewind:job" })],
    }));
    pages++;
    assert.ok(r.body.instances.instance.length <= 2);
    seen.push(...r.body.instances.instance.map((i) => i.instanceId));
    token = r.body.nextToken;
  } while (token);
  assert.ok(seen.length >= 5);
  assert.equal(new Set(seen).size, seen.length);
  assert.equal(pages, Math.ceil(seen.length / 2));
});

test("DescribeSpotPriceHistory and DescribePrice in CNY", async () => {
  const ecs = client("acs3");
  const h = await ecs.describeSpotPriceHistory(new $Ecs.DescribeSpotPriceHistoryRequest({
    regionId: "cn-hangzhou", instanceType: "ecs.g7.large", networkType: "vpc",
    zoneId: "cn-hangzhou-i",
  }));
  assert.equal(h.body.currency, "CNY");
  const rows = h.body.spotPrices.spotPriceType;
  assert.ok(rows.length >= 3);
  for (const r of rows) {
    assert.equal(r.zoneId, "cn-hangzhou-i");
    assert.ok(r.spotPrice > 0 && r.spotPrice <= r.originPrice);
  }
  const p = await ecs.describePrice(new $Ecs.DescribePriceRequest({
    regionId: "cn-hangzhou", resourceType: "instance", instanceType: "ecs.g7.large",
    priceUnit: "Hour", period: 1,
  }));
  assert.equal(p.body.priceInfo.price.currency, "CNY");
  assert.equal(p.body.priceInfo.price.tradePrice, 0.693);
});

for (const sig of ["acs3", "v2"]) {
  test(`DescribeRegions and DescribeZones (${sig})`, async () => {
    const ecs = client(sig);
    const r = await ecs.describeRegions(new $Ecs.DescribeRegionsRequest({ acceptLanguage: "en-US" }));
    const regions = r.body.regions.region;
    assert.deepEqual(regions.map((x) => x.regionId), ["cn-hangzhou", "cn-shanghai", "ap-southeast-1"]);
    assert.equal(regions[0].regionEndpoint, "ecs.cn-hangzhou.aliyuncs.com");
    assert.equal(regions[2].localName, "Singapore");
    const z = await ecs.describeZones(new $Ecs.DescribeZonesRequest({ regionId: "cn-shanghai" }));
    const zones = z.body.zones.zone;
    assert.deepEqual(zones.map((x) => x.zoneId), ["cn-shanghai-l", "cn-shanghai-m", "cn-shanghai-n"]);
    assert.ok(zones[0].availableInstanceTypes.instanceTypes.includes("ecs.g7.large"));
    assert.ok(zones[0].availableResourceCreation.resourceTypes.includes("Instance"));
  });
}

test("DescribeImages and DescribeSecurityGroups", async () => {
  const ecs = client("v2");
  const im = await ecs.describeImages(new $Ecs.DescribeImagesRequest({
    regionId: "cn-hangzhou", imageOwnerAlias: "system", architecture: "x86_64", pageSize: 2,
  }));
  assert.equal(im.body.totalCount, 3);
  assert.equal(im.body.pageSize, 2);
  assert.equal(im.body.images.image.length, 2);
  assert.equal(im.body.images.image[0].OSType, "linux"); // the SDK keeps ECS's spelling
  assert.equal(im.body.images.image[0].status, "Available");
  const sg = await ecs.describeSecurityGroups(new $Ecs.DescribeSecurityGroupsRequest({ regionId: "cn-hangzhou" }));
  assert.equal(sg.body.totalCount, 1);
  assert.match(sg.body.securityGroups.securityGroup[0].securityGroupId, /^sg-bp[0-9a-z]{18}$/);
  assert.equal(sg.body.securityGroups.securityGroup[0].vpcId, "vpc-tradewindfake");
});

test("CreateInstance, StartInstance, StopInstance, DeleteInstance", async () => {
  const ecs = client("acs3");
  const created = await ecs.createInstance(new $Ecs.CreateInstanceRequest({
    regionId: "cn-hangzhou", zoneId: "cn-hangzhou-k", instanceType: "ecs.c7.xlarge",
    imageId: "ubuntu_24_04_x64_20G_alibase_20250722.vhd", clientToken: "conf-create-1",
  }));
  const id = created.body.instanceId;
  assert.match(id, /^i-bp[0-9a-z]{18}$/);
  assert.ok(created.body.orderId);
  const status = async () =>
    (await ecs.describeInstances(new $Ecs.DescribeInstancesRequest({
      regionId: "cn-hangzhou", instanceIds: JSON.stringify([id]),
    }))).body.instances.instance[0]?.status;
  assert.equal(await status(), "Stopped");
  await ecs.startInstance(new $Ecs.StartInstanceRequest({ instanceId: id }));
  assert.equal(await status(), "Running"); // --pending-ms 0
  await assert.rejects(ecs.deleteInstance(new $Ecs.DeleteInstanceRequest({ instanceId: id })), (e) => {
    assert.equal(e.code, "IncorrectInstanceStatus");
    assert.equal(e.statusCode, 403);
    return true;
  });
  await ecs.stopInstance(new $Ecs.StopInstanceRequest({ instanceId: id, stoppedMode: "StopCharging" }));
  assert.equal(await status(), "Stopping");
  await control("POST", "/_fake/clock", { advance_ms: 5000 });
  assert.equal(await status(), "Stopped");
  const del = await ecs.deleteInstance(new $Ecs.DeleteInstanceRequest({ instanceId: id }));
  assert.equal(del.statusCode, 200);
  assert.equal(await status(), undefined);
  await assert.rejects(ecs.stopInstance(new $Ecs.StopInstanceRequest({ instanceId: id })),
    (e) => e.code === "InvalidInstanceId.NotFound" && e.statusCode === 404);
});
