#!/bin/bash
# 1 when the project's own check passes.
mkdir -p /logs/verifier
if cd /app && sh check.sh; then
    echo 1 > /logs/verifier/reward.txt
else
    echo 0 > /logs/verifier/reward.txt
fi
