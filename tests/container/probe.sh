#!/bin/sh
# Run inside a container: which containment does run_command get here, and
# what holds? Each check is one real `goat tools call run_command`, judged by
# what is on disk afterwards or what the command itself printed, never by
# GOAT's summary of it.
#
#   probe.sh WORKSPACE
#
# Needs `goat` on PATH and python3 (for the loopback listener and the
# connect check); prints one `check: result` line per check.
set -u
ws=${1:?usage: probe.sh WORKSPACE}
secret=goat-probe-secret-$$
port=47611
home=${HOME:-/tmp}

rm -rf "$ws" && mkdir -p "$ws" || exit 2
cd "$ws" || exit 2
git init -q . 2>/dev/null || mkdir -p .git
[ -f .git/config ] || echo '[core]' > .git/config
echo original > kept.txt
mkdir -p src
mkdir -p "$home/outside" && echo private > "$home/outside/secret" && chmod 600 "$home/outside/secret"
export GOAT_DB="$home/.local/share/goat/goat.db"
export GOAT_PROBE_SECRET="$secret"

python3 -m http.server "$port" --bind 127.0.0.1 >/dev/null 2>&1 &
listener=$!
sleep 1

# cmd LABEL COMMAND: run COMMAND as the model would, keep what it printed.
cmd() {
    goat tools call run_command "$(python3 -c 'import json,sys; print(json.dumps({"command": sys.argv[1]}))' "$2")" \
        --allow-commands > "/tmp/probe-$1.out" 2>&1
    echo $? > "/tmp/probe-$1.rc"
}
said() { grep -q "$2" "/tmp/probe-$1.out"; }
# A call GOAT could not start holds nothing back and proves nothing.
ran() { ! said "$1" 'could not be started'; }
row() { printf '%-28s %s\n' "$1:" "$2"; }
# check LABEL WHAT VERDICT: the verdict, or that the command never ran.
check() { if ran "$1"; then row "$2" "$3"; else row "$2" "not run ($(grep -o 'could not be started.*' "/tmp/probe-$1.out" | head -1))"; fi; }

row user "$(id -u)"
line=$(goat tools list 2>&1 | grep '^run_command')
case $line in
*"not offered"*) row containment "none: ${line#*not offered: }" ;;
*"namespace view: its changes"*) row containment namespace ;;
*Landlock-only*) why=${line##*: }; row containment "landlock (no view: ${why%)})" ;;
*) row containment "? $line" ;;
esac

cmd root 'echo made > made.txt'
check root "new file in repo root" "$([ -f made.txt ] && echo lands || echo refused)"

cmd subdir 'echo made > src/made.txt && mkdir -p src/target && echo x > src/target/out'
check subdir "new file, dir in src/" "$([ -f src/made.txt ] && [ -f src/target/out ] && echo lands || echo refused)"

cmd outside "echo x > '$home/outside/new'; echo x > /usr/local/goat-probe"
r=""
[ -e "$home/outside/new" ] && r="$r ~/outside" && rm -f "$home/outside/new"
[ -e /usr/local/goat-probe ] && r="$r /usr/local" && rm -f /usr/local/goat-probe
check outside "writes outside workspace" "${r:-none}"

cmd chmod "chmod 666 '$home/outside/secret'"
m=$(stat -c %a "$home/outside/secret")
check chmod "chmod outside workspace" "$([ "$m" = 600 ] && echo refused || echo "changed to $m")"
chmod 600 "$home/outside/secret"

cmd readhome "cat '$home/outside/secret'"
check readhome "reads ~ outside workspace" "$(said readhome '^private' && echo yes || echo no)"

cmd shadow 'cat /etc/shadow'
check shadow "reads /etc/shadow" "$(said shadow '^root:' && echo yes || echo no)"

cmd environ 'cat /proc/[0-9]*/environ 2>/dev/null | tr "\0" "\n" | grep -c GOAT_PROBE_SECRET='
check environ "reads GOAT's environ" "$(grep -q '^[1-9]' /tmp/probe-environ.out && echo yes || echo no)"

cmd net "python3 -c 'import socket; socket.create_connection((\"127.0.0.1\", $port), timeout=3); print(\"CONNECTED\")'"
check net "reaches container loopback" "$(said net '^CONNECTED' && echo yes || echo no)"

cmd newgit 'mkdir -p src/.git && echo "[core]" > src/.git/config'
check newgit "plants src/.git" "$([ -e src/.git ] && echo yes || echo no)"

cmd gitcfg 'echo "fsmonitor = evil" >> .git/config'
check gitcfg "changes .git/config" "$(grep -q evil .git/config && echo yes || echo no)"

cmd caps 'grep CapEff /proc/self/status || echo unreadable'
check caps "CapEff of the command" "$(grep -o 'CapEff:.*\|unreadable' /tmp/probe-caps.out | head -1 | tr -s ' \t' ' ')"

kill "$listener" 2>/dev/null
for f in /tmp/probe-*.out; do
    printf '\n--- %s (exit %s)\n' "$(basename "$f" .out)" "$(cat "${f%.out}.rc")"
    head -c 1500 "$f"
done > /tmp/probe-detail.txt
echo "(the calls' own output is in /tmp/probe-detail.txt)"
