#!/bin/sh
# run.sh - conformance of tradewind-fakecloud's ECS module with the official
# Alibaba Cloud SDK (@alicloud/ecs20140526, pinned in package-lock.json).
# Usage and exit codes: see ../common.sh.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
node_min=18
node_why="fetch, node:test"
modules="@alicloud/ecs20140526"
. "$here/../common.sh"
conf_main "$@"
