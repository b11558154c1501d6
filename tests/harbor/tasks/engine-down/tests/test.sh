#!/bin/bash
# Nothing to do: this task's engine fails, and the trial must end as an
# agent error, not a success.
mkdir -p /logs/verifier
echo 0 > /logs/verifier/reward.txt
