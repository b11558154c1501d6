#!/bin/sh
# Prints 2 + 2.
echo $((2 + 2 + 1))
