#!/usr/bin/env bash
# Makes sure the Chromium the browser tests drive is there (Debian's package at /usr/bin/chromium,
# or the path given): installs it with apt-get when this user may (root, apt-get present), and
# otherwise says how and exits 1. Never lets a test run go on without it: its browser tests would
# fail, and skipping them would hide that the dashboard was never tried.
# Uses shell builtins to decide, so that it behaves the same whatever PATH holds.
set -euo pipefail
chromium="${1:-/usr/bin/chromium}"
[ -x "$chromium" ] && exit 0

if [ "$EUID" -eq 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "test: installing Debian's chromium for the dashboard's browser tests (apt-get, about a minute)" >&2
  if apt-get update -qq && apt-get install -y -qq chromium >/dev/null && [ -x "$chromium" ]; then
    exit 0
  fi
  echo "test: apt-get could not install chromium at $chromium; see its messages above" >&2
  exit 1
fi

{
  echo "test: the browser tests need Chromium at $chromium, and it is missing."
  echo "Install Debian's package, then run the tests again:"
  echo "  sudo apt-get update && sudo apt-get install -y chromium"
  echo "(Other systems: install Chromium and link it to $chromium.)"
} >&2
exit 1
