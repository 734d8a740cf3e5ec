#!/usr/bin/env bash
echo "demo: not built yet" >&2; exit 1
