#!/bin/sh
# run.sh - conformance tests of tradewind-fakecloud's EC2 module with the
# official AWS SDK (@aws-sdk/client-ec2, pinned in package-lock.json).
# Usage and exit codes: see common.sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
node_min=18
node_why="fetch, node:test"
modules="@aws-sdk/client-ec2"
. "$here/common.sh"
conf_main "$@"
