#!/bin/sh
# Passes when calc.sh prints 4.
[ "$(sh calc.sh)" = 4 ] && echo "check passed" || { echo "check failed: $(sh calc.sh)"; exit 1; }
