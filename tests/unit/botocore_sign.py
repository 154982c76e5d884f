#!/usr/bin/python3
"""Signs requests with botocore's SigV4Auth for test_sigv4's differential
test: one JSON object per line on stdin, one answer per line on stdout.

In:  {"method", "url", "headers": [[name, value], ...], "body_b64",
      "access_key", "secret_key", "token" (or null), "region", "service",
      "amz_date": "YYYYMMDDTHHMMSSZ"}
Out: {"authorization", "canonical_request"} or {"error"}

The clock is frozen per request by replacing the function botocore.auth
reads the time from; repeated header names are kept (HTTPHeaders appends).
"""
import base64
import datetime
import json
import sys

import botocore.auth as auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

_now = [None]


def _frozen():
    return _now[0]


if hasattr(auth, "get_current_datetime"):
    auth.get_current_datetime = _frozen
else:  # older botocore reads datetime.datetime.utcnow()
    class _DT(datetime.datetime):
        @classmethod
        def utcnow(cls):
            return _now[0]

    class _Mod:
        datetime = _DT

    auth.datetime = _Mod


class CapturingSigV4(auth.SigV4Auth):
    def canonical_request(self, request):
        self.last_cr = super().canonical_request(request)
        return self.last_cr


def sign(c):
    _now[0] = datetime.datetime.strptime(c["amz_date"], "%Y%m%dT%H%M%SZ")
    req = AWSRequest(method=c["method"], url=c["url"],
                     data=base64.b64decode(c["body_b64"]))
    for name, value in c["headers"]:
        req.headers[name] = value  # appends: repeated names stay repeated
    creds = Credentials(c["access_key"], c["secret_key"], c.get("token"))
    signer = CapturingSigV4(creds, c["service"], c["region"])
    signer.add_auth(req)
    return {"authorization": req.headers["Authorization"],
            "canonical_request": signer.last_cr}


def main():
    for line in sys.stdin:
        if not line.strip():
            continue
        try:
            out = sign(json.loads(line))
        except Exception as e:  # report, keep the line count aligned
            out = {"error": f"{type(e).__name__}: {e}"}
        sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
