#!/usr/bin/env python3
"""The fake token and metadata endpoints (tests/fakecloud/creds.c) against
botocore's own clients and fetchers: STS AssumeRole (SigV4) and
AssumeRoleWithWebIdentity, IMDSv2 through InstanceMetadataFetcher, the ECS
container endpoint through ContainerMetadataFetcher; then an EC2 call
signed with each temporary key, which the fake accepts only with its
session token.  Usage: botocore_creds.py FAKECLOUD_BINARY.  Exit 77 when
botocore is missing."""
import json
import subprocess
import sys
import urllib.request

try:
    import botocore.session
    from botocore.utils import ContainerMetadataFetcher, InstanceMetadataFetcher
    from botocore.exceptions import ClientError
except ImportError:
    print("SKIPPED: botocore is not installed")
    sys.exit(77)

AK, SK = "AKIDTRADEWINDFAKE", "tradewind-fake-secret"


def control(base, path, body=None):
    req = urllib.request.Request(base + path, method="POST" if body else "GET",
                                 data=json.dumps(body).encode() if body else None,
                                 headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req) as r:
        return json.load(r)


def ec2(session, base, key):
    c = session.create_client("ec2", region_name="us-east-1",
                              endpoint_url=base + "/",
                              aws_access_key_id=key["AccessKeyId"],
                              aws_secret_access_key=key["SecretAccessKey"],
                              aws_session_token=key.get("SessionToken"))
    return c.describe_regions()


def main():
    proc = subprocess.Popen([sys.argv[1], "--listen", "127.0.0.1:0"],
                            stdout=subprocess.PIPE, text=True)
    try:
        base = proc.stdout.readline().split()[1]
        s = botocore.session.get_session()
        sts = s.create_client("sts", region_name="us-east-1",
                              endpoint_url=base + "/sts/",
                              aws_access_key_id=AK, aws_secret_access_key=SK)
        r = sts.assume_role(RoleArn="arn:aws:iam::123456789012:role/tw",
                            RoleSessionName="conformance", DurationSeconds=900)
        cr = r["Credentials"]
        assert cr["AccessKeyId"].startswith("ASIA"), cr
        assert r["AssumedRoleUser"]["Arn"].endswith("assumed-role/tw/conformance")
        regions = ec2(s, base, cr)["Regions"]
        assert regions, "EC2 refused the assumed role's key"
        # without its session token the temporary key is refused
        try:
            ec2(s, base, {"AccessKeyId": cr["AccessKeyId"],
                          "SecretAccessKey": cr["SecretAccessKey"]})
            raise AssertionError("EC2 took a temporary key without its token")
        except ClientError as e:
            assert e.response["Error"]["Code"] == "InvalidClientTokenId", e
        # the fake checks STS's constraints as STS does
        try:
            sts.assume_role(RoleArn="arn:aws:iam::12345:role/x", RoleSessionName="x1")
            raise AssertionError("a malformed RoleArn was accepted")
        except ClientError as e:
            assert e.response["Error"]["Code"] == "ValidationError", e

        # web identity: unsigned, the token checked
        control(base, "/_fake/creds", {"web_token": "eyJh.eyJz.c2ln"})
        from botocore import UNSIGNED
        from botocore.config import Config
        anon = s.create_client("sts", region_name="us-east-1",
                               endpoint_url=base + "/sts/",
                               config=Config(signature_version=UNSIGNED))
        w = anon.assume_role_with_web_identity(
            RoleArn="arn:aws:iam::123456789012:role/web",
            RoleSessionName="pod", WebIdentityToken="eyJh.eyJz.c2ln")
        assert w["Credentials"]["SessionToken"], w
        try:
            anon.assume_role_with_web_identity(
                RoleArn="arn:aws:iam::123456789012:role/web",
                RoleSessionName="pod", WebIdentityToken="eyJh.eyJz.b3RoZXI")
            raise AssertionError("a wrong web identity token was accepted")
        except ClientError as e:
            assert e.response["Error"]["Code"] == "InvalidIdentityToken", e

        # IMDSv2 through botocore's fetcher (token first, then the role)
        f = InstanceMetadataFetcher(timeout=2, num_attempts=1, config={
            "ec2_metadata_service_endpoint": base + "/",
            "ec2_metadata_v1_disabled": True})
        ic = f.retrieve_iam_role_credentials()
        assert ic.get("role_name") == "tradewind-node", ic
        ec2(s, base, {"AccessKeyId": ic["access_key"],
                      "SecretAccessKey": ic["secret_key"],
                      "SessionToken": ic["token"]})

        # the ECS container endpoint with its authorization token
        control(base, "/_fake/creds", {"container_token": "ecs-secret"})
        cf = ContainerMetadataFetcher()
        cc = cf.retrieve_full_uri(base + "/v2/credentials/abc",
                                  headers={"Authorization": "ecs-secret"})
        assert set(cc) >= {"AccessKeyId", "SecretAccessKey", "Token", "Expiration"}, cc
        ec2(s, base, {"AccessKeyId": cc["AccessKeyId"],
                      "SecretAccessKey": cc["SecretAccessKey"],
                      "SessionToken": cc["Token"]})

        counts = control(base, "/_fake/creds")
        assert counts["assume_role"] == 1 and counts["imds"] == 1 and \
            counts["container"] == 1 and counts["assume_role_web_identity"] == 1, counts
        print("ok: botocore reads every fake credential endpoint", counts)
    finally:
        proc.terminate()
        proc.wait()


if __name__ == "__main__":
    main()
