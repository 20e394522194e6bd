"""Part C: the run-all shell script, which reproduces the sweep without Python.

The course wants one unattended script that compiles everything, sweeps sizes x threads with perf
stat on both ends and stores a CSV. It sets up the topology copylab uses (lib/copylab/topology.py:
two namespaces joined by veth, server 198.18.0.1/30, client 198.18.0.2, no default route), runs the
programs with the flags of docs/contracts.md the way lib/copylab/point.py does, and writes rows
whose columns carry the results contract's names. The grid at its top comes from the sweep's
meta.json; environment variables override it.
"""

from __future__ import annotations

import re

from .. import escape
from ..errors import CopylabError
from ..pointspec import POINT_DEFAULTS

# perf stat's events, most to least: the script keeps the first list perf accepts here. Hardware
# events read <not supported> in most VMs; msr/tsc/ (TSC reference cycles) stands in for cycles
# there, as in copylab (lib/copylab/perf.py); an unknown event makes perf refuse the whole list.
EVENT_LISTS = (
    "task-clock,context-switches,cpu-migrations,cycles,instructions,cache-misses,"
    "L1-dcache-load-misses,LLC-load-misses,msr/tsc/",
    "task-clock,context-switches,cpu-migrations,cycles,instructions,cache-misses,"
    "L1-dcache-load-misses,LLC-load-misses",
    "task-clock,context-switches,cpu-migrations",
)


ROLL = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,31}")  # bundle.ROLL_PATTERN
# what each grid variable may hold: the script checks the same patterns at run time, after the
# environment had its say, and copylab checks the values it writes against them first
PATTERNS = {
    "IMPLS": r"[a-z][a-z0-9_]*( [a-z][a-z0-9_]*)*",
    "MODES": r"(throughput|latency)( (throughput|latency))*",
    "MSG_SIZES": r"[1-9][0-9]*( [1-9][0-9]*)*",
    "THREADS": r"[1-9][0-9]*( [1-9][0-9]*)*",
    "REPETITIONS": r"[1-9][0-9]*",
    "DURATION_S": r"[0-9]+(\.[0-9]+)?",
    "WARMUP_S": r"[0-9]+(\.[0-9]+)?",
    "PIN_SERVER": r"([0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)?",
    "PIN_CLIENT": r"([0-9]+(-[0-9]+)?(,[0-9]+(-[0-9]+)?)*)?",
    "VERIFY": r"[01]",
    "RECEIVES": r"[a-z]+( [a-z]+)*",
}


def _words(values) -> str:
    return " ".join(str(v) for v in values)


def grid_values(params: dict) -> dict[str, str]:
    """The sweep's grid as the script's variables (copylab run's defaults where the sweep did not
    record its own). A value that does not fit its pattern is a CopylabError naming the key."""
    pins = {k: "" if params.get(k) in (None, "") else str(params[k]) for k in ("pin_server", "pin_client")}
    values = {
        "IMPLS": _words(params["impls"]), "MODES": _words(params["modes"]),
        "MSG_SIZES": _words(params["msg_sizes"]), "THREADS": _words(params["threads"]),
        "REPETITIONS": str(params.get("repetitions") or 1),
        "DURATION_S": f"{float(params.get('duration_s') or POINT_DEFAULTS['duration_s']):g}",
        "WARMUP_S": f"{float(params.get('warmup_s') or POINT_DEFAULTS['warmup_s']):g}",
        "PIN_SERVER": pins["pin_server"], "PIN_CLIENT": pins["pin_client"],
        "VERIFY": "1" if params.get("verify") else "0",
        "RECEIVES": _words(params["receive"]) if params.get("receive") else "default",
    }
    for name, value in values.items():
        if not re.fullmatch(PATTERNS[name], value):
            raise CopylabError(f"the sweep's grid (meta.json params) gives {name} = {value!r}, which the run-all "
                               "script cannot take")
    return values


WHAT = {  # (an empty value from the caller counts, what it is)
    "IMPLS": (False, "implementations: a1 a2 a3"),
    "MODES": (False, "throughput and/or latency"),
    "MSG_SIZES": (False, "bytes per message"),
    "THREADS": (False, "client threads = connections"),
    "REPETITIONS": (False, "measurements per point"),
    "DURATION_S": (False, "measured seconds per point"),
    "WARMUP_S": (False, "seconds discarded before the window"),
    "PIN_SERVER": (True, "taskset CPU list of the server (sender); empty: not pinned"),
    "PIN_CLIENT": (True, "taskset CPU list of the client (receiver); empty: not pinned"),
    "VERIFY": (False, "1: the client checks every received byte"),
    "RECEIVES": (False, "how the client reads (its --receive): message and/or bulk; default: its own"),
}


def grid_block(params: dict, sweep: str) -> str:
    """The grid as data: `NAME=value` lines of a quoted here-document the script reads (never runs),
    then `NAME=${NAME:-$GRID_NAME}` lines: the environment overrides any of them."""
    values = {"SWEEP": " ".join(escape.clean(sweep).split()), **grid_values(params)}
    data = "\n".join(f"{name}={value}" for name, value in values.items())
    # ${PIN_SERVER-x}: PIN_SERVER= from the caller means "not pinned"; ${IMPLS:-x}: empty means the default
    lines = [(f"{name}=${{{name}{'-' if empty_counts else ':-'}$GRID_{name}}}", why)
             for name, (empty_counts, why) in WHAT.items()]
    width = max(len(line) for line, _ in lines)
    assign = "\n".join(f"{line:<{width}}  # {why}" for line, why in lines)
    return f"""read_grid <<'COPYLAB_GRID'\n{data}\nCOPYLAB_GRID\n{assign}"""


def run_all_script(roll: str, sweep: str, params: dict) -> str:
    if not ROLL.fullmatch(roll):
        raise CopylabError(f"roll number {roll!r} is not a plain identifier")  # checked before, kept by design
    checks = "\n".join(f"check_grid {name} {escape.shell('^' + pattern + '$')}" for name, pattern in PATTERNS.items())
    return (_TEMPLATE.replace("@ROLL@", roll)
            .replace("@GRID@", grid_block(params, sweep))
            .replace("@GRID_CHECKS@", checks)
            .replace("@EVENT_LISTS@", " ".join(f'"{e}"' for e in EVENT_LISTS)))


_TEMPLATE = r'''#!/usr/bin/env bash
# @ROLL@ PA02 Part C: compile the programs, sweep the grid below, store one CSV row per point.
#
# Server and client run in two network namespaces joined by a veth pair (server 198.18.0.1,
# client 198.18.0.2, a /30 with no default route: nothing leaves them), each under `perf stat -x,`
# when perf is installed. Needs root (namespaces). The namespaces are removed at the end, on error
# and on Ctrl-C.
#
#   sudo ./@ROLL@_Part_C_run_all.sh
#   sudo env MSG_SIZES=4096 THREADS=1 DURATION_S=0.2 ./@ROLL@_Part_C_run_all.sh    # a smaller grid
#
# Output, in RESULTS_DIR (default results/ beside this script):
#   results.csv        one row per point: the results contract's columns (sums of both sides for
#                      cycles, cache misses and context switches; srv_* = server = sender,
#                      cli_* = client = receiver; empty = not measured here)
#   <point>/           server.json, client.json (the programs' JSON), *.stderr, server.perf and
#                      client.perf (perf stat -x, output); <point> encodes every parameter:
#                      a1_throughput_4096B_1thr_rep0_d1.5s_w0.5s
# A re-run rewrites results.csv and replaces each point's folder.
# Counters: the client's skip the warm-up (perf stat -D); the server's cover its whole run.
set -euo pipefail

die() { echo "$PROG: $*" >&2; exit 2; }

# read_grid: NAME=value lines on stdin -> GRID_NAME variables (data: nothing in them is run)
read_grid() {
	local line
	while IFS= read -r line; do
		printf -v "GRID_${line%%=*}" '%s' "${line#*=}"
	done
}

# The grid of the submitted results (sweep $GRID_SWEEP below); the environment overrides any of them.
@GRID@
RESULTS_DIR=${RESULTS_DIR:-results}
PORT=${PORT:-5201}

SERVER_ADDR=198.18.0.1
CLIENT_ADDR=198.18.0.2
PREFIX_LEN=30
SRV_NS="@ROLL@-srv-$$"
CLI_NS="@ROLL@-cli-$$"
SRV_IF=pa02-srv
CLI_IF=pa02-cli
LISTEN_TIMEOUT_S=10
STOP_TIMEOUT_S=10
PROG=$(basename "$0")
# check_grid NAME PATTERN: the variable NAME, whoever set it, must match PATTERN (values are
# split into words and looped over, so nothing else may reach a command line)
check_grid() {
	local value=${!1}
	[[ $value =~ $2 ]] || die "$1 must match $2, got '$value'"
}
COLUMNS_CSV="impl,mode,msg_size,threads,rep,throughput_gbps,latency_us,cycles,l1_misses,llc_misses,context_switches,bytes,duration_s,point_id,status,error,cycles_source,srv_cycles,cli_cycles,srv_l1_misses,cli_l1_misses,srv_llc_misses,cli_llc_misses,srv_cache_misses,cli_cache_misses,srv_context_switches,cli_context_switches,srv_task_clock_ms,cli_task_clock_ms,receive"

[ "$(id -u)" -eq 0 ] || die "needs root to create network namespaces: run it with sudo"
for tool in ip make cc setsid env awk sed; do
	command -v "$tool" >/dev/null 2>&1 || die "needs '$tool' (Debian: apt-get install iproute2 make gcc)"
done
@GRID_CHECKS@
[[ $PORT =~ ^[1-9][0-9]{0,4}$ ]] || die "PORT must be a port number, got '$PORT'"
if [ -n "$PIN_SERVER$PIN_CLIENT" ] && ! command -v taskset >/dev/null 2>&1; then
	die "PIN_SERVER/PIN_CLIENT need taskset (apt-get install util-linux)"
fi

cd "$(dirname "$(readlink -f "$0")")"
make -s
for impl in $IMPLS; do
	[ -x "./${impl}_server" ] || die "IMPLS: there is no program ${impl}_server (built: a1 a2 a3)"
done

work=$(mktemp -d)
server_pgid=""
cleanup() {
	local status=$?
	trap - EXIT INT TERM
	if [ -n "$server_pgid" ]; then kill -KILL -- "-$server_pgid" 2>/dev/null || true; fi
	local ns
	for ns in "$SRV_NS" "$CLI_NS"; do
		if [ -e "/run/netns/$ns" ]; then
			ip netns pids "$ns" 2>/dev/null | xargs -r kill -KILL 2>/dev/null || true
			ip netns del "$ns" 2>/dev/null || true
		fi
	done
	rm -rf "$work"
	exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# perf: the first event list it accepts; cycles from the PMU, else TSC reference cycles
PERF_EVENTS=""
CYCLES_EVENT=""
CYCLES_SOURCE=""
if command -v perf >/dev/null 2>&1; then
	for events in @EVENT_LISTS@; do
		if LC_ALL=C perf stat -x, -o "$work/probe.perf" -e "$events" -- true >/dev/null 2>&1; then
			PERF_EVENTS=$events
			break
		fi
	done
fi

# perf_value FILE EVENT: the event's count in perf stat -x, output; empty if absent or unsupported
perf_value() {
	[ -s "$1" ] || return 0
	awk -F, -v want="$2" 'BEGIN { OFMT = "%.10g" }
		/^#/ || NF < 3 || $1 == "" { next }
		{
			ev = $3
			sub(/:[ukhHGIpPSDW]+$/, "", ev)            # cycles:u -> cycles
			sub(/\/[ukhHGIpPSDW]+$/, "/", ev)           # msr/tsc/u -> msr/tsc/
			if (sub(/^cpu_[a-z]+\//, "", ev)) sub(/\/$/, "", ev)   # hybrid CPUs: cpu_core/cycles/
		}
		ev != want { next }
		$1 ~ /^[0-9]+(\.[0-9]+)?$/ { sum += $1; seen = 1; next }
		{ unsupported = 1 }
		END { if (seen && !unsupported) print sum }' "$1"
}

if [ -n "$PERF_EVENTS" ]; then
	if [ -n "$(perf_value "$work/probe.perf" cycles)" ]; then
		CYCLES_EVENT=cycles CYCLES_SOURCE=pmu
	elif [ -n "$(perf_value "$work/probe.perf" msr/tsc/)" ]; then
		CYCLES_EVENT=msr/tsc/ CYCLES_SOURCE=tsc
	fi
	echo "$PROG: perf stat -e $PERF_EVENTS (cycles: ${CYCLES_SOURCE:-not measurable here})"
else
	echo "$PROG: perf is not installed or does not run: the counter columns stay empty"
fi

# json_value FILE KEY: KEY's value in the one-line JSON object a program printed; empty for null
json_value() {
	{ sed -n "s/.*\"$2\":\([^,}]*\).*/\1/p" "$1" 2>/dev/null || true; } | tail -n 1 | sed 's/^"\(.*\)"$/\1/; s/^null$//'
}

# last_error FILE: the last line of a program's stderr that is not a progress message
last_error() {
	{ grep -v -e '^listening on' -e '^window ' -e '^Events ' "$1" 2>/dev/null || true; } | tail -n 1
}

# sum A B: A + B, empty when either is
sum() { awk -v a="$1" -v b="$2" 'BEGIN { OFMT = "%.10g"; if (a != "" && b != "") print a + b }'; }

# csv_text TEXT: a CSV field (quoted when not empty, quotes doubled)
csv_text() { if [ -n "$1" ]; then local t=${1//\"/\"\"}; printf '"%s"' "$t"; fi; }

stop_server() {
	[ -n "$server_pgid" ] || return 0
	kill -INT -- "-$server_pgid" 2>/dev/null || true   # the server prints its JSON, perf its counts
	local i
	for ((i = 0; i < STOP_TIMEOUT_S * 20; i++)); do
		kill -0 "$server_pgid" 2>/dev/null || break
		sleep 0.05
	done
	if kill -0 "$server_pgid" 2>/dev/null; then
		kill -KILL -- "-$server_pgid" 2>/dev/null || true
		echo "server did not stop within ${STOP_TIMEOUT_S} s of SIGINT" >>"$1/server.stderr"
	fi
	wait "$server_pgid" 2>/dev/null || true
	server_pgid=""
}

# run_point IMPL MODE SIZE THREADS RECEIVE REP: measure one point, append its row to results.csv
run_point() {
	local impl=$1 mode=$2 size=$3 threads=$4 receive=$5 rep=$6
	local recv_part=""
	if [ "$receive" != default ]; then recv_part="_r$receive"; fi
	local point="${impl}_${mode}_${size}B_${threads}thr${recv_part}_rep${rep}_d${DURATION_S}s_w${WARMUP_S}s"
	local dir="$RESULTS_DIR/$point"
	rm -rf "$dir"
	mkdir -p "$dir"

	# own session, SIGINT not ignored (bash ignores it in background jobs): one signal stops
	# perf and the server together, as Ctrl-C would
	local server=(setsid env --default-signal=INT)
	if [ -n "$PIN_SERVER" ]; then server+=(taskset -c "$PIN_SERVER"); fi
	if [ -n "$PERF_EVENTS" ]; then server+=(perf stat "-x," -o "$dir/server.perf" -e "$PERF_EVENTS" --); fi
	server+=("./${impl}_server" --bind "$SERVER_ADDR" --port "$PORT" --msg-size "$size" --mode "$mode" --json)
	LC_ALL=C ip netns exec "$SRV_NS" "${server[@]}" </dev/null >"$dir/server.json" 2>"$dir/server.stderr" &
	server_pgid=$!
	local i
	for ((i = 0; i < LISTEN_TIMEOUT_S * 20; i++)); do
		if grep -qs '^listening on' "$dir/server.stderr" || ! kill -0 "$server_pgid" 2>/dev/null; then break; fi
		sleep 0.05
	done

	local client=()
	if [ -n "$PIN_CLIENT" ]; then client+=(taskset -c "$PIN_CLIENT"); fi
	if [ -n "$PERF_EVENTS" ]; then
		client+=(perf stat "-x," -o "$dir/client.perf" -e "$PERF_EVENTS")
		local warm_ms
		warm_ms=$(awk -v w="$WARMUP_S" 'BEGIN { printf "%d", w * 1000 }')
		if [ "$warm_ms" -gt 0 ]; then client+=(-D "$warm_ms"); fi
		client+=(--)
	fi
	client+=(./client --connect "$SERVER_ADDR" --port "$PORT" --msg-size "$size" --mode "$mode"
		--threads "$threads" --duration "$DURATION_S" --warmup "$WARMUP_S" --json)
	if [ "$VERIFY" = 1 ]; then client+=(--verify); fi
	if [ "$receive" != default ]; then client+=(--receive "$receive"); fi

	local status=ok error=""
	if ! grep -qs '^listening on' "$dir/server.stderr"; then
		status=failed error="server did not listen: $(last_error "$dir/server.stderr")"
	elif ! LC_ALL=C ip netns exec "$CLI_NS" "${client[@]}" </dev/null >"$dir/client.json" 2>"$dir/client.stderr"; then
		status=failed error="client failed: $(last_error "$dir/client.stderr")"
	fi
	stop_server "$dir"

	local cj="$dir/client.json" sp="$dir/server.perf" cp="$dir/client.perf"
	local gbps latency bytes duration
	gbps=$(json_value "$cj" throughput_gbps)
	latency=$(json_value "$cj" latency_us)
	bytes=$(json_value "$cj" bytes)
	duration=$(json_value "$cj" duration_s)
	if [ "$status" = ok ] && [ -z "$gbps" ]; then status=failed error="client printed no JSON result"; fi
	if [ "$status" = ok ] && [ -z "$(json_value "$dir/server.json" bytes)" ]; then
		status=failed error="server printed no JSON result: $(last_error "$dir/server.stderr")"
	fi

	local side key srv_cycles="" cli_cycles="" values=()
	if [ -n "$CYCLES_EVENT" ]; then
		srv_cycles=$(perf_value "$sp" "$CYCLES_EVENT")
		cli_cycles=$(perf_value "$cp" "$CYCLES_EVENT")
	fi
	values+=("$srv_cycles" "$cli_cycles")
	for key in L1-dcache-load-misses LLC-load-misses cache-misses context-switches task-clock; do
		for side in "$sp" "$cp"; do values+=("$(perf_value "$side" "$key")"); done
	done
	# values: srv/cli cycles, l1, llc, cache misses, context switches, task clock
	local cycles l1 llc cs
	cycles=$(sum "${values[0]}" "${values[1]}")
	l1=$(sum "${values[2]}" "${values[3]}")
	llc=$(sum "${values[4]}" "${values[5]}")
	cs=$(sum "${values[8]}" "${values[9]}")
	local source=""
	if [ -n "$cycles" ]; then source=$CYCLES_SOURCE; fi
	local row="$impl,$mode,$size,$threads,$rep,$gbps,$latency,$cycles,$l1,$llc,$cs,$bytes,$duration"
	row+=",$point,$status,$(csv_text "$error"),$source"
	local v
	for v in "${values[@]}"; do row+=",$v"; done
	if [ "$receive" = default ]; then row+=","; else row+=",$receive"; fi
	echo "$row" >>"$RESULTS_DIR/results.csv"

	if [ "$status" = ok ]; then
		echo "$PROG: $point: ${gbps} Gbit/s, latency ${latency} us"
	else
		echo "$PROG: $point: FAILED: $error" >&2
		failed=$((failed + 1))
	fi
}

ip netns add "$SRV_NS"
ip netns add "$CLI_NS"
ip link add "$SRV_IF" netns "$SRV_NS" type veth peer name "$CLI_IF" netns "$CLI_NS"
ip -n "$SRV_NS" addr add "$SERVER_ADDR/$PREFIX_LEN" dev "$SRV_IF"
ip -n "$CLI_NS" addr add "$CLIENT_ADDR/$PREFIX_LEN" dev "$CLI_IF"
for ns in "$SRV_NS" "$CLI_NS"; do ip -n "$ns" link set lo up; done
ip -n "$SRV_NS" link set "$SRV_IF" up
ip -n "$CLI_NS" link set "$CLI_IF" up
for ((i = 0; i < 100; i++)); do   # veth links come up asynchronously
	if ip -n "$CLI_NS" -o link show dev "$CLI_IF" | grep -q LOWER_UP; then break; fi
	sleep 0.05
done

mkdir -p "$RESULTS_DIR"
echo "$COLUMNS_CSV" >"$RESULTS_DIR/results.csv"
failed=0
points=0
for impl in $IMPLS; do
	for mode in $MODES; do
		for size in $MSG_SIZES; do
			for threads in $THREADS; do
				for receive in $RECEIVES; do
					for ((rep = 0; rep < REPETITIONS; rep++)); do
						run_point "$impl" "$mode" "$size" "$threads" "$receive" "$rep"
						points=$((points + 1))
					done
				done
			done
		done
	done
done
echo "$PROG: $points point(s), $failed failed: $RESULTS_DIR/results.csv"
[ "$failed" -eq 0 ]
'''
