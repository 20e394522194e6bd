#!/usr/bin/env bash
# Install the Debian packages copylab needs, only those missing. As root: apt-get (update once,
# then install). Otherwise: one message listing them, exit 1. Off Debian: check the commands only.
set -euo pipefail

packages=(
  gcc make libc6-dev          # the native programs
  liburing-dev                # the io_uring senders (uring, uring_zc); without it they are skipped
  linux-perf                  # perf stat
  iproute2 util-linux ethtool # ip netns / veth, taskset, offload settings for meta.json
  python3-venv                # make's .venv
  chromium                    # kaleido renders the static figures with it
  pandoc texlive-xetex texlive-fonts-recommended texlive-plain-generic  # nbconvert --to pdf
  fonts-noto-core fonts-noto-cjk fonts-symbola  # the PDF: Devanagari, CJK, Hebrew... names; emoji (XeTeX: Symbola)
  fonts-noto-color-emoji      # emoji in report.html and the figures (Chromium)
  poppler-utils               # pdftotext/pdftoppm: the report tests read the PDF
  strace                      # the tests read the programs' system calls (ACKs, looks for STOP)
  iperf3 sockperf             # the peers measured beside A1/A2/A3 (throughput, latency)
  openssh-client              # topology ssh: the other hosts
  openssh-server              # the tests emulate two ssh hosts in namespaces
)

if ! command -v dpkg-query >/dev/null 2>&1; then
  missing=()
  for cmd in cc make perf ip taskset chromium xelatex pandoc pdftoppm strace iperf3 sockperf ssh; do
    command -v "$cmd" >/dev/null 2>&1 || missing+=("$cmd")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "copylab: not a Debian system; install these commands yourself: ${missing[*]}" >&2
  fi
  exit 0
fi

missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
[ ${#missing[@]} -eq 0 ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
  echo "copylab: missing Debian packages: ${missing[*]} -- install them with: sudo apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "copylab: installing Debian packages: ${missing[*]}" >&2
apt-get update -q
DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
