#!/bin/sh
# setup: runs in the unpacked workdir
echo "setup in $(basename "$PWD")"
