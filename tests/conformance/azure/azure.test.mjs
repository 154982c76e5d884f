// azure.test.mjs - tradewind-fakecloud's Azure module against the official
// Azure SDK for JavaScript: @azure/identity's ClientSecretCredential (the
// fake's OpenID configuration and token endpoint) and @azure/arm-compute
// (ARM, long-running operations), pinned in package-lock.json.
//
// Each test asserts what the SDK parsed, not merely that it did not throw.
// Run by tests/azure.cmake through run.sh, which makes a throwaway
// certificate (TW_TLS_CERT, TW_TLS_KEY) and trusts it through
// NODE_EXTRA_CA_CERTS; TW_FAKECLOUD names the binary.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { createInterface } from "node:readline";
import { ComputeManagementClient } from "@azure/arm-compute";
import { ClientSecretCredential } from "@azure/identity";

const BIN = process.env.TW_FAKECLOUD;
const TENANT = "tradewind-fake-tenant";
const CLIENT = "tradewind-fake-client";
const SECRET = "tradewind-fake-azure-secret";
const SUB = "00000000-0000-0000-0000-00000000a2e0";
const RG = "tradewind";
let proc, base;

before(async () => {
  assert.ok(BIN, "TW_FAKECLOUD must name the tradewind-fakecloud binary");
  assert.ok(process.env.TW_TLS_CERT, "run through run.sh (TLS files)");
  proc = spawn(
    BIN,
    ["--listen", "127.0.0.1:0", "--seed", "5", "--pending-ms", "300",
     "--tls-cert", process.env.TW_TLS_CERT, "--tls-key", process.env.TW_TLS_KEY],
    { stdio: ["ignore", "pipe", "inherit"] },
  );
  const first = await new Promise((resolve, reject) => {
    const rl = createInterface({ input: proc.stdout });
    rl.once("line", resolve);
    proc.once("exit", (code) => reject(new Error(`fakecloud exited ${code}`)));
    setTimeout(() => reject(new Error("no listening line in 10 s")), 10000).unref();
  });
  const m = /^listening (https:\/\/127\.0\.0\.1:\d+)$/.exec(first);
  assert.ok(m, `first line: ${first}`);
  base = m[1];
  // Quick operations, polled at once: Retry-After 0.
  await control("POST", "/_fake/azure/config", { retry_after_s: 0, delete_ms: 300 });
});

after(() => {
  if (proc) proc.kill("SIGTERM");
});

const control = async (method, path, body) => {
  const r = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, json: await r.json() };
};

const credential = (secret = SECRET) =>
  new ClientSecretCredential(TENANT, CLIENT, secret, {
    authorityHost: base,
    disableInstanceDiscovery: true,
  });

const client = (cred = credential()) =>
  new ComputeManagementClient(cred, SUB, {
    endpoint: base,
    credentials: { scopes: [`${base}/.default`] },
  });

const vmParams = (extra = {}) => ({
  location: "eastus",
  tags: { "tradewind:job": "job-42", "tradewind:tenant": "acme" },
  hardwareProfile: { vmSize: "Standard_D2s_v5" },
  storageProfile: {
    imageReference: { publisher: "Canonical", offer: "ubuntu-24_04-lts", sku: "server", version: "latest" },
    osDisk: { createOption: "FromImage", deleteOption: "Delete", managedDisk: { storageAccountType: "StandardSSD_LRS" } },
  },
  osProfile: {
    computerName: "job42",
    adminUsername: "tradewind",
    linuxConfiguration: {
      disablePasswordAuthentication: true,
      ssh: { publicKeys: [{ path: "/home/tradewind/.ssh/authorized_keys", keyData: "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFake" }] },
    },
  },
  networkProfile: {
    networkInterfaces: [{ id: `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Network/networkInterfaces/nic1`, primary: true }],
  },
  ...extra,
});

const spot = { priority: "Spot", evictionPolicy: "Delete", billingProfile: { maxPrice: -1 } };

test("ClientSecretCredential gets a token from the fake identity platform", async () => {
  const t = await credential().getToken(`${base}/.default`);
  assert.match(t.token, /^fake\./);
  assert.ok(t.expiresOnTimestamp > Date.now() + 3000 * 1000, "expiry about an hour ahead");
});

test("a wrong client secret is refused with AADSTS7000215", async () => {
  await assert.rejects(credential("wrong").getToken(`${base}/.default`), (e) => {
    assert.match(e.message, /AADSTS7000215/);
    return true;
  });
});

test("create through the long-running operation, then get, then delete", async () => {
  const c = client();
  const vm = await c.virtualMachines.createOrUpdate(RG, "conf-spot-1", vmParams({ ...spot, zones: ["2"] }), {
    updateIntervalInMs: 50,
  });
  assert.equal(vm.name, "conf-spot-1");
  assert.equal(vm.id, `/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Compute/virtualMachines/conf-spot-1`);
  assert.equal(vm.type, "Microsoft.Compute/virtualMachines");
  assert.equal(vm.location, "eastus");
  assert.deepEqual(vm.zones, ["2"]);
  assert.equal(vm.provisioningState, "Succeeded");
  assert.equal(vm.priority, "Spot");
  assert.equal(vm.evictionPolicy, "Delete");
  assert.equal(vm.billingProfile.maxPrice, -1);
  assert.equal(vm.hardwareProfile.vmSize, "Standard_D2s_v5");
  assert.equal(vm.tags["tradewind:job"], "job-42");
  assert.match(vm.vmId, /^[0-9a-f-]{36}$/);
  assert.equal(vm.osProfile.adminUsername, "tradewind");

  const got = await c.virtualMachines.get(RG, "conf-spot-1", { expand: "instanceView" });
  const codes = got.instanceView.statuses.map((s) => s.code);
  assert.ok(codes.includes("PowerState/running"), codes.join(","));
  assert.ok(codes.includes("ProvisioningState/succeeded"), codes.join(","));
  assert.equal(got.instanceView.computerName, "job42");

  const view = await c.virtualMachines.instanceView(RG, "conf-spot-1");
  assert.ok(view.statuses.some((s) => s.code === "PowerState/running"));

  await c.virtualMachines.delete(RG, "conf-spot-1", { updateIntervalInMs: 50 });
  await assert.rejects(c.virtualMachines.get(RG, "conf-spot-1"), (e) => {
    assert.equal(e.statusCode, 404);
    assert.equal(e.code, "ResourceNotFound");
    return true;
  });
});

test("a failed operation surfaces the allocation failure", async () => {
  await control("POST", "/_fake/faults", { kind: "capacity", service: "azure", count: 1 });
  await assert.rejects(
    client().virtualMachines.createOrUpdate(RG, "conf-fail-1", vmParams(), { updateIntervalInMs: 50 }),
    (e) => {
      assert.match(e.message, /AllocationFailed/);
      return true;
    },
  );
  // The VM stays, Failed, with the reason in its instance view.
  const got = await client().virtualMachines.get(RG, "conf-fail-1", { expand: "instanceView" });
  assert.equal(got.provisioningState, "Failed");
  assert.ok(got.instanceView.statuses.some((s) => s.code === "ProvisioningState/failed/AllocationFailed"));
  await client().virtualMachines.delete(RG, "conf-fail-1", { updateIntervalInMs: 50 });
});

test("a synchronous 409 is a RestError with Azure's code", async () => {
  await control("POST", "/_fake/faults", { kind: "quota", service: "azure", count: 1 });
  await assert.rejects(
    client().virtualMachines.createOrUpdate(RG, "conf-quota-1", vmParams(spot), { updateIntervalInMs: 50 }),
    (e) => {
      assert.equal(e.name, "RestError");
      assert.equal(e.statusCode, 409);
      assert.equal(e.code, "OperationNotAllowed");
      assert.match(e.message, /LowPriorityCores quota/);
      return true;
    },
  );
  await control("POST", "/_fake/faults", { kind: "capacity", status: 409, count: 1 });
  await assert.rejects(
    client().virtualMachines.createOrUpdate(RG, "conf-sku-1", vmParams(), { updateIntervalInMs: 50 }),
    (e) => {
      assert.equal(e.statusCode, 409);
      assert.equal(e.code, "SkuNotAvailable");
      return true;
    },
  );
  // Validation: no network profile.
  const bad = vmParams();
  delete bad.networkProfile;
  await assert.rejects(client().virtualMachines.createOrUpdate(RG, "conf-bad-1", bad), (e) => {
    assert.equal(e.statusCode, 400);
    assert.equal(e.code, "InvalidParameter");
    return true;
  });
});

test("lists follow nextLink across pages", async () => {
  await control("POST", "/_fake/azure/config", { page_size: 1 });
  const c = client();
  for (const n of ["conf-list-1", "conf-list-2", "conf-list-3"])
    await c.virtualMachines.createOrUpdate(RG, n, vmParams(), { updateIntervalInMs: 50 });
  const names = [];
  for await (const vm of c.virtualMachines.list(RG)) names.push(vm.name);
  assert.deepEqual(names.sort(), ["conf-list-1", "conf-list-2", "conf-list-3"]);
  const state = await control("GET", "/_fake/azure/state");
  assert.ok(state.json.calls.ListVirtualMachines >= 3, JSON.stringify(state.json.calls));
  await control("POST", "/_fake/azure/config", { page_size: 100 });
});

test("an unknown bearer token is refused with 401", async () => {
  const fixed = { getToken: async () => ({ token: "not-issued-here", expiresOnTimestamp: Date.now() + 3600_000 }) };
  await assert.rejects(client(fixed).virtualMachines.get(RG, "conf-list-1"), (e) => {
    assert.equal(e.statusCode, 401);
    assert.equal(e.code, "InvalidAuthenticationToken");
    return true;
  });
});

test("virtualMachineSizes.list parses the location's sizes", async () => {
  const sizes = [];
  for await (const s of client().virtualMachineSizes.list("eastus")) sizes.push(s);
  const d2 = sizes.find((s) => s.name === "Standard_D2s_v5");
  assert.ok(d2, sizes.map((s) => s.name).join(","));
  assert.equal(d2.numberOfCores, 2);
  assert.equal(d2.memoryInMB, 8192);
  assert.equal(typeof d2.maxDataDiskCount, "number");
});

test("deallocate, start and powerOff run through their operations", async () => {
  const c = client();
  await c.virtualMachines.createOrUpdate(RG, "conf-power-1", vmParams(), { updateIntervalInMs: 50 });
  const power = async () =>
    (await c.virtualMachines.instanceView(RG, "conf-power-1")).statuses
      .map((s) => s.code).find((x) => x.startsWith("PowerState/"));
  await c.virtualMachines.beginDeallocateAndWait(RG, "conf-power-1", { updateIntervalInMs: 50 });
  assert.equal(await power(), "PowerState/deallocated");
  await c.virtualMachines.beginStartAndWait(RG, "conf-power-1", { updateIntervalInMs: 50 });
  assert.equal(await power(), "PowerState/running");
  await c.virtualMachines.beginPowerOffAndWait(RG, "conf-power-1", { updateIntervalInMs: 50 });
  assert.equal(await power(), "PowerState/stopped");
  await c.virtualMachines.beginDeleteAndWait(RG, "conf-power-1", { updateIntervalInMs: 50 });
  await assert.rejects(c.virtualMachines.get(RG, "conf-power-1"), (e) => e.statusCode === 404);
});

test("ARM echoes x-ms-correlation-request-id; DELETE's 202 names both monitors", async () => {
  const t = await credential().getToken(`${base}/.default`);
  const h = { authorization: `Bearer ${t.token}`, "x-ms-correlation-request-id": "conf-corr-7" };
  const r = await fetch(`${base}/subscriptions/${SUB}?api-version=2022-12-01`, { headers: h });
  assert.equal(r.status, 200);
  assert.equal(r.headers.get("x-ms-correlation-request-id"), "conf-corr-7");
  assert.match(r.headers.get("x-ms-request-id") ?? "", /^[0-9a-f-]{36}$/);
  assert.equal((await r.json()).subscriptionId, SUB);
  await client().virtualMachines.createOrUpdate(RG, "conf-del-1", vmParams(), { updateIntervalInMs: 50 });
  const d = await fetch(
    `${base}/subscriptions/${SUB}/resourceGroups/${RG}/providers/Microsoft.Compute/virtualMachines/conf-del-1?api-version=2024-07-01`,
    { method: "DELETE", headers: h },
  );
  assert.equal(d.status, 202);
  assert.match(d.headers.get("location") ?? "", /\/operations\/.*monitor=true/);
  assert.match(d.headers.get("azure-asyncoperation") ?? "", /\/operations\//);
});
