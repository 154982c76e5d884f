// identity.test.mjs - the fake Entra ID's client assertions and the fake
// IMDS's managed identity (tests/fakecloud/azure.c) against the official
// @azure/identity credentials: ClientCertificateCredential (an RS256 JWT
// with the certificate's thumbprint), WorkloadIdentityCredential (a
// federated token file) and ManagedIdentityCredential (IMDS, pointed at
// the fake through AZURE_POD_IDENTITY_AUTHORITY_HOST).  Each token the
// SDK gets must then be accepted by the fake's ARM.
// Run through run.sh like azure.test.mjs.
import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { createInterface } from "node:readline";
import { mkdtempSync, readFileSync, writeFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  ClientCertificateCredential,
  ManagedIdentityCredential,
  WorkloadIdentityCredential,
} from "@azure/identity";

const BIN = process.env.TW_FAKECLOUD;
const TENANT = "tradewind-fake-tenant";
const CLIENT = "tradewind-fake-client";
const SUB = "00000000-0000-0000-0000-00000000a2e0";
let proc, base, dir;

const control = async (method, path, body) => {
  const r = await fetch(base + path, {
    method,
    headers: { "content-type": "application/json" },
    body: body ? JSON.stringify(body) : undefined,
  });
  return { status: r.status, json: await r.json() };
};

// ARM answers the subscription with the token, or 401
const armStatus = async (token) =>
  (await fetch(`${base}/subscriptions/${SUB}?api-version=2022-12-01`, {
    headers: { authorization: `Bearer ${token}` },
  })).status;

before(async () => {
  assert.ok(BIN, "TW_FAKECLOUD must name the tradewind-fakecloud binary");
  dir = mkdtempSync(join(tmpdir(), "tw-az-identity-"));
  proc = spawn(BIN, ["--listen", "127.0.0.1:0", "--tls-cert", process.env.TW_TLS_CERT,
                     "--tls-key", process.env.TW_TLS_KEY],
               { stdio: ["ignore", "pipe", "inherit"] });
  const first = await new Promise((resolve, reject) => {
    const rl = createInterface({ input: proc.stdout });
    rl.once("line", resolve);
    proc.once("exit", (code) => reject(new Error(`fakecloud exited ${code}`)));
    setTimeout(() => reject(new Error("no listening line in 10 s")), 10000).unref();
  });
  base = /^listening (https:\/\/127\.0\.0\.1:\d+)$/.exec(first)[1];
  // the client's certificate: an RSA key and a self-signed certificate
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                           "-subj", "/CN=tradewind-client", "-keyout", join(dir, "key.pem"),
                           "-out", join(dir, "cert.pem")], { stdio: "ignore" });
  const cert = readFileSync(join(dir, "cert.pem"), "utf8");
  writeFileSync(join(dir, "client.pem"), readFileSync(join(dir, "key.pem"), "utf8") + cert);
  const r = await control("POST", "/_fake/azure/identity",
                          { certificate: cert, federated_token: "eyJhbGciOi.eyJzdWIi.c2ln" });
  assert.equal(r.status, 200);
});

after(() => {
  if (proc) proc.kill("SIGTERM");
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test("ClientCertificateCredential: the signed assertion is taken", async () => {
  const cred = new ClientCertificateCredential(TENANT, CLIENT,
    { certificatePath: join(dir, "client.pem") },
    { authorityHost: base, disableInstanceDiscovery: true });
  const t = await cred.getToken(`${base}/.default`);
  assert.match(t.token, /^fake\./);
  assert.ok(t.expiresOnTimestamp > Date.now());
  assert.equal(await armStatus(t.token), 200);
  const s = await control("POST", "/_fake/azure/identity", {});
  assert.ok(s.json.assertion_tokens >= 1, JSON.stringify(s.json));
});

test("ClientCertificateCredential: another certificate is refused", async () => {
  execFileSync("openssl", ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
                           "-subj", "/CN=stranger", "-keyout", join(dir, "k2.pem"),
                           "-out", join(dir, "c2.pem")], { stdio: "ignore" });
  writeFileSync(join(dir, "stranger.pem"),
                readFileSync(join(dir, "k2.pem"), "utf8") + readFileSync(join(dir, "c2.pem"), "utf8"));
  const cred = new ClientCertificateCredential(TENANT, CLIENT,
    { certificatePath: join(dir, "stranger.pem") },
    { authorityHost: base, disableInstanceDiscovery: true });
  await assert.rejects(cred.getToken(`${base}/.default`), /AADSTS700027/);
});

test("WorkloadIdentityCredential: the federated token file", async () => {
  writeFileSync(join(dir, "fed"), "eyJhbGciOi.eyJzdWIi.c2ln\n");
  const cred = new WorkloadIdentityCredential({
    tenantId: TENANT, clientId: CLIENT, tokenFilePath: join(dir, "fed"),
    authorityHost: base, disableInstanceDiscovery: true });
  const t = await cred.getToken(`${base}/.default`);
  assert.equal(await armStatus(t.token), 200);
});

test("ManagedIdentityCredential: IMDS with Metadata: true", async () => {
  process.env.AZURE_POD_IDENTITY_AUTHORITY_HOST = base;
  const cred = new ManagedIdentityCredential();
  const t = await cred.getToken(`${base}/.default`);
  assert.match(t.token, /^fake\.msi\./);
  assert.equal(await armStatus(t.token), 200);
  // the real service's refusal of a request without the header
  const r = await fetch(`${base}/metadata/identity/oauth2/token?api-version=2018-02-01&resource=x`);
  assert.equal(r.status, 400);
  const s = await control("POST", "/_fake/azure/identity", {});
  assert.ok(s.json.msi_tokens >= 1, JSON.stringify(s.json));
});
