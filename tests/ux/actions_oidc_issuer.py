#!/usr/bin/env python3
"""actions_oidc_issuer.py DIR - a loopback stand-in for GitHub's token
service, for tests/ux/actions_oidc.sh: the OIDC discovery document and JWK
Set of an issuer whose RSA key is DIR/key.pem, and the job's token endpoint
(ACTIONS_ID_TOKEN_REQUEST_URL) answering {"value": JWT} for ?audience=
to a caller with the request token of DIR/request.token.  Tokens are signed
with `openssl dgst`, carry GitHub's claims for acme/train on main, and
last as long as GitHub's (five minutes).  Writes its port to DIR/port and
counts the tokens it minted in DIR/minted."""
import base64, json, os, subprocess, sys, time, urllib.parse
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

d = sys.argv[1]
key = os.path.join(d, "key.pem")
req_token = open(os.path.join(d, "request.token")).read().strip()


def b64(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


mod = subprocess.run(["openssl", "rsa", "-in", key, "-noout", "-modulus"],
                     check=True, capture_output=True, text=True).stdout
n = bytes.fromhex(mod.strip().split("=", 1)[1])
JWKS = {"keys": [{"kty": "RSA", "kid": "gha-1", "use": "sig", "alg": "RS256",
                  "n": b64(n), "e": "AQAB"}]}


def mint(iss, aud):
    now = int(time.time())
    head = {"alg": "RS256", "typ": "JWT", "kid": "gha-1"}
    claims = {"iss": iss, "aud": aud, "sub": "repo:acme/train:ref:refs/heads/main",
              "repository": "acme/train", "repository_owner": "acme",
              "ref": "refs/heads/main", "workflow": "train",
              "iat": now, "nbf": now, "exp": now + 300,
              "jti": b64(os.urandom(9))}
    inp = (b64(json.dumps(head).encode()) + "." +
           b64(json.dumps(claims).encode())).encode()
    sig = subprocess.run(["openssl", "dgst", "-sha256", "-sign", key],
                         input=inp, check=True, capture_output=True).stdout
    return inp.decode() + "." + b64(sig)


class H(BaseHTTPRequestHandler):
    def log_message(self, *a):
        pass

    def send(self, code, obj):
        body = json.dumps(obj).encode()
        self.send_response(code)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        iss = "http://127.0.0.1:%d" % self.server.server_port
        u = urllib.parse.urlparse(self.path)
        if u.path == "/.well-known/openid-configuration":
            return self.send(200, {"issuer": iss, "jwks_uri": iss + "/keys"})
        if u.path == "/keys":
            return self.send(200, JWKS)
        if u.path == "/token":
            if self.headers.get("Authorization", "").lower() != "bearer " + req_token:
                return self.send(401, {"message": "bad request token"})
            aud = urllib.parse.parse_qs(u.query).get("audience", [iss])[0]
            with open(os.path.join(d, "minted"), "a") as f:
                f.write(aud + "\n")
            return self.send(200, {"count": 1, "value": mint(iss, aud)})
        self.send(404, {"message": "not found"})


srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
with open(os.path.join(d, "port.tmp"), "w") as f:
    f.write(str(srv.server_port))
os.rename(os.path.join(d, "port.tmp"), os.path.join(d, "port"))
srv.serve_forever()
