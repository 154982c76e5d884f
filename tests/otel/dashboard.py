#!/usr/bin/env python3
"""dashboard.py - configs/grafana/tradewind.json against a real /metrics.

Starts a tradewind-fakecloud (TW_FAKECLOUD) and a tradewindd (TW_DAEMON)
with tokens on and tracing on, submits a job and waits until it runs, then
scrapes /metrics as docs/observability.md tells Prometheus to (a bearer
token; none is refused), and checks that the dashboard parses, that every
panel has queries, and that every metric name each expr uses is one that
/metrics declares (# TYPE), a histogram's _bucket, _sum and _count
included.

usage: dashboard.py DASHBOARD.json WORKDIR"""
import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

dash_path, work = sys.argv[1], sys.argv[2]
procs = []


def fail(msg):
    print("dashboard: FAIL: " + msg, file=sys.stderr)
    for p in procs:
        p.terminate()
    sys.exit(1)


def start(name, argv, env=None):
    out = open(os.path.join(work, name + ".out"), "w+")
    err = open(os.path.join(work, name + ".err"), "w")
    p = subprocess.Popen(argv, stdout=out, stderr=err,
                         env={**os.environ, **(env or {})})
    procs.append(p)
    for _ in range(100):
        out.seek(0)
        m = re.search(r"^listening (http\S*)", out.read(), re.M)
        if m:
            return m.group(1)
        time.sleep(0.1)
    fail(name + " did not start")


def http(method, url, body=None, token=None):
    req = urllib.request.Request(url, data=body, method=method)
    if body is not None:
        req.add_header("Content-Type", "application/json")
    if token:
        req.add_header("Authorization", "Bearer " + token)
    try:
        with urllib.request.urlopen(req, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


# the dashboard first: it parses, and each panel asks something
dash = json.load(open(dash_path))
exprs = []
for p in dash["panels"]:
    if p["type"] == "row":
        continue
    if not p.get("targets"):
        fail("panel %r has no queries" % p["title"])
    for t in p["targets"]:
        if not t.get("expr"):
            fail("panel %r: a target without an expr" % p["title"])
        exprs.append((p["title"], t["expr"]))
print("dashboard: %d panels, %d queries" % (
    sum(p["type"] != "row" for p in dash["panels"]), len(exprs)))

os.makedirs(work, exist_ok=True)
fake = start("fakecloud", [os.environ["TW_FAKECLOUD"], "--listen",
                           "127.0.0.1:0", "--seed", "3", "--pending-ms", "200"])
db = os.path.join(work, "tradewind.db")
for f in ("tradewind.db", "tradewind.db-wal", "tradewind.db-shm",
          "admin.token"):
    try:
        os.unlink(os.path.join(work, f))
    except FileNotFoundError:
        pass
cfg = os.path.join(work, "tradewind.yaml")
open(cfg, "w").write("""listen: 127.0.0.1:0
db: %s
auth: {rate_limit_per_s: 0}
scheduler: {tick_ms: 200}
otel: {endpoint: "http://127.0.0.1:9/", flush_ms: 200}
providers:
  - name: aws-fake
    type: aws
    endpoint: %s
    regions: [us-east-1]
    access_key_env: TW_DB_AWS_ACCESS_KEY
    secret_key_env: TW_DB_AWS_SECRET_KEY
    image: ami-0123456789abcdef0
    metadata_url: %s/_fake/ec2/instances/{id}
""" % (db, fake, fake))
url = start("tradewindd", [os.environ["TW_DAEMON"], "--config", cfg],
            {"TW_DB_AWS_ACCESS_KEY": "AKIDTRADEWINDFAKE",
             "TW_DB_AWS_SECRET_KEY": "tradewind-fake-secret"})
token = open(os.path.join(work, "admin.token")).read().strip()

st, _ = http("GET", url + "/metrics")
if st != 401:
    fail("/metrics without a token answered %d, expected 401" % st)
spec = json.dumps({"name": "dash", "tenant": "default",
                   "resources": {"cpus": "1+"}, "duration": "30s",
                   "run": "sleep 30"}).encode()
st, body = http("POST", url + "/v1/jobs", spec, token)
if st != 201:
    fail("submit: %d %s" % (st, body))
job = json.loads(body)["id"]
for _ in range(300):
    st, body = http("GET", url + "/v1/jobs/" + job, token=token)
    if json.loads(body)["state"] == "running":
        break
    time.sleep(0.1)
else:
    fail("%s did not reach running" % job)

st, text = http("GET", url + "/metrics", token=token)
if st != 200:
    fail("/metrics: %d" % st)
types = dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, re.M))
samples = set(re.findall(r"^([a-z_:][a-z0-9_:]*)[{ ]", text, re.M))


def declared(name):
    if name in types:
        return True
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)]
        if name.endswith(suffix) and types.get(base) == "histogram":
            return True
    return False


used = set()
for title, e in exprs:
    for name in re.findall(r"\b(tradewind_[a-z0-9_]+)\b", e):
        used.add(name)
        if not declared(name):
            fail("panel %r: %s is not on /metrics" % (title, name))
# and what a running job must have given values to
for name in ("tradewind_queue_depth", "tradewind_spend_rate_usd_per_hour",
             "tradewind_launch_duration_seconds_bucket",
             "tradewind_queue_wait_seconds_bucket",
             "tradewind_scheduler_pass_duration_seconds_bucket"):
    if name not in samples:
        fail("%s has no sample after a job launched" % name)
spend = re.search(r'^tradewind_spend_rate_usd_per_hour\{tenant="default"\} '
                  r'([0-9.]+)$', text, re.M)
if not spend or float(spend.group(1)) <= 0:
    fail("the running job's tenant spends nothing: %r" % (spend and spend.group(0)))
print("dashboard: %d metric names, each on /metrics; spend rate %s $/h" % (
    len(used), spend.group(1)))
for p in procs:
    p.terminate()
for p in procs:
    p.wait()
