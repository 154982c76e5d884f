#!/bin/sh
# run: reads its configuration from the workdir
echo "train: $(cat config/lr.txt)"
if [ -e scratch.ckpt ]; then echo "scratch.ckpt was uploaded"; else echo "scratch.ckpt left out"; fi
