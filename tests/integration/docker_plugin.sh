#!/bin/bash
# docker_plugin: s3pipe-docker-plugin's protocol, spoken with curl over its
# unix socket, against the test S3 server and real s3pipe daemons.
#  - every endpoint, and every error path: unknown volume on each, bad
#    volume names, bad option names, unknown options, bad URIs and channel
#    names, credential-shaped and plugin-owned options, a double create
#    with other options, a double remove, a remove while mounted, an
#    unmount of an unknown ID, a failing mount (no such bucket), requests
#    without Name or ID, bodies that are not JSON or too large, unknown
#    paths, methods other than POST; nothing is written for a refused
#    create;
#  - reference counting over two mount IDs: the data read through the
#    mountpoint equals the objects, the second ID shares the daemon, the
#    same ID twice counts once, the mount survives the first Unmount and is
#    gone (no mount, no daemon, no mountpoint) after the last; a daemon
#    killed under a mount in use is replaced by the next Mount; a mount
#    held up by a slow listing does not hold up requests for other volumes;
#  - a restart: SIGTERM with a volume mounted leaves the daemon serving; the
#    plugin started again lists the volume with the same daemon and
#    unmounts it; a daemon killed (-9) while the plugin is down leaves a
#    stale mount, which the next start cleans up, and the volume mounts
#    again; a corrupt record is skipped;
#  - a second plugin on the same socket or state directory refuses to
#    start; socket activation (systemd-socket-activate); the shipped units
#    (systemd-analyze verify);
#  - no secret in the state directory or the plugin's log: the server's
#    only key has a distinctive secret, which reaches s3pipe through the
#    plugin's environment.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd curl

SECRET="PluginSecret-$RANDOM$RANDOM-Vx8"
S3_SERVER_ARGS=(--key "AKIDPLUGINTEST01:$SECRET")
export AWS_ACCESS_KEY_ID=AKIDPLUGINTEST01 AWS_SECRET_ACCESS_KEY="$SECRET"
s3_start
. "$S3PIPE_SRCDIR/tests/docker_lib.sh"
PLUGIN_SOCK="$TEST_TMP/p.sock"

s3_mb data
s3_seed data train/ 6 200003
s3_seed data val/ 3 70001
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"
expected_cat "$S3_LOCAL/data" val/ >"$TEST_TMP/val.exp"

plugin_start
MNT="$PLUGIN_STATE/mounts"

# ---- one plugin per socket, one per state directory ----
second_refused() {	# NEEDLE SOCKET STATE
	local rc=0
	timeout -k 5 20 "$S3PIPE_DOCKER_PLUGIN" --socket "$2" --state-dir "$3" \
		--s3pipe "$S3PIPE" </dev/null >"$TEST_TMP/second.log" 2>&1 || rc=$?
	assert_eq 1 "$rc" "exit status of a second plugin ($1)"
	grep -qF -- "$1" "$TEST_TMP/second.log" ||
		fail "a second plugin did not say '$1': $(cat "$TEST_TMP/second.log")"
	note "ok: a second plugin refused: $(tail -n 1 "$TEST_TMP/second.log")"
}
second_refused "another plugin is listening on $PLUGIN_SOCK" "$PLUGIN_SOCK" "$TEST_TMP/state2"
second_refused "another plugin uses the state directory" "$TEST_TMP/p2.sock" "$PLUGIN_STATE"
[ ! -e "$TEST_TMP/p2.sock" ] || fail "a refused plugin left its socket"
plugin_ok Plugin.Activate '' >/dev/null

# ---- the fixed answers ----
out=$(plugin_ok Plugin.Activate '')
assert_eq '["VolumeDriver"]' "$(jfield "$out" 's.Implements')" "Activate"
out=$(plugin_ok VolumeDriver.Capabilities '{}')
assert_eq local "$(jfield "$out" 's.Capabilities.Scope')" "Capabilities"
out=$(plugin_ok VolumeDriver.List '{}')
assert_eq 0 "$(jfield "$out" 's.Volumes.length')" "List at start"
# Docker's content type
ctype=$(curl -sS --unix-socket "$PLUGIN_SOCK" -X POST -o /dev/null \
	-w '%{content_type}' http://plugin/VolumeDriver.List)
assert_eq application/vnd.docker.plugins.v1.2+json "$ctype" "Content-Type"

# ---- create: refusals; nothing may be written for any of them ----
OPTS="\"endpoint_url\":\"$S3_URL\",\"region\":\"us-east-1\""
create_err() {	# JSON NEEDLE
	plugin_err 200 VolumeDriver.Create "$1" "$2"
}
create_err '{"Name":"x","Opts":{}}' "invalid volume name"
create_err '{"Name":"-vol","Opts":{}}' "invalid volume name"
create_err '{"Name":"a/b","Opts":{}}' "invalid volume name"
create_err '{"Opts":{}}' "Name is missing"
create_err '{"Name":"bad","Opts":{"train":"s3://data/train/","bad name":"1",'"$OPTS"'}}' \
	"invalid option name 'bad name'"
create_err '{"Name":"bad","Opts":{"train":"s3://data/train/","-f":"1",'"$OPTS"'}}' \
	"invalid option name '-f'"
create_err '{"Name":"bad","Opts":{"train":"s3://data/train/","bogus_option":"1",'"$OPTS"'}}' \
	"unknown option '-o bogus_option'"
create_err '{"Name":"bad","Opts":{"train":"s3://data/train/","epochs":"x",'"$OPTS"'}}' \
	"invalid number 'x' for -o epochs"
# a comma cannot smuggle in a second option
create_err '{"Name":"bad","Opts":{"train":"s3://data/train/","epochs":"2,pid_file=/tmp/x",'"$OPTS"'}}' \
	"invalid number '2,pid_file=/tmp/x'"
create_err '{"Name":"bad","Opts":{"train":"s3://b/train/",'"$OPTS"'}}' \
	"invalid bucket name 'b'"
create_err '{"Name":"bad","Opts":{"train":"manifest+s3://data",'"$OPTS"'}}' "train"
long=$(printf 'c%.0s' {1..70})
create_err '{"Name":"bad","Opts":{"'"$long"'":"s3://data/train/",'"$OPTS"'}}' \
	"invalid channel name"
create_err '{"Name":"bad","Opts":{'"$OPTS"'}}' "channel"
create_err '{"Name":"bad","Opts":{"train":1,'"$OPTS"'}}' "must be a string"
create_err '{"Name":"bad","Opts":["train"]}' "Opts must be an object"
for key in aws_secret_access_key AWS_ACCESS_KEY_ID aws-session-token secret_key \
	token password; do
	create_err '{"Name":"bad","Opts":{"train":"s3://data/train/","'"$key"'":"'"$SECRET"'",'"$OPTS"'}}' \
		"credentials are not volume options"
done
for key in pid_file pid-file foreground f debug d check_options help version mountpoint; do
	create_err '{"Name":"bad","Opts":{"train":"s3://data/train/","'"$key"'":"",'"$OPTS"'}}' \
		"option '$key' is the plugin's own"
done
[ ! -e "$PLUGIN_STATE/volumes/bad.json" ] || fail "a refused create wrote a record"
assert_eq "" "$(find "$PLUGIN_STATE/volumes" "$MNT" "$PLUGIN_STATE/run" -mindepth 1)" \
	"state after refused creates"
out=$(plugin_ok VolumeDriver.List '{}')
assert_eq 0 "$(jfield "$out" 's.Volumes.length')" "List after refused creates"

# ---- create ----
CREATE_V1='{"Name":"v1","Opts":{"train":"s3://data/train/","val":"s3://data/val/","epochs":"2",'"$OPTS"'}}'
plugin_ok VolumeDriver.Create "$CREATE_V1" >/dev/null
[ -s "$PLUGIN_STATE/volumes/v1.json" ] || fail "no record for v1"
# the same again: fine; without options (Docker naming a volume): fine;
# with other options: refused
plugin_ok VolumeDriver.Create "$CREATE_V1" >/dev/null
plugin_ok VolumeDriver.Create '{"Name":"v1"}' >/dev/null
create_err '{"Name":"v1","Opts":{"train":"s3://data/val/",'"$OPTS"'}}' "exists with other options"
plugin_ok VolumeDriver.Create '{"Name":"nobucket","Opts":{"train":"s3://no-such-bucket/x/",'"$OPTS"'}}' >/dev/null

out=$(plugin_ok VolumeDriver.List '{}')
assert_eq "nobucket v1" "$(jfield "$out" 's.Volumes.map(v => v.Name).join(" ")')" "List"
assert_eq "$MNT/v1" "$(jfield "$out" 's.Volumes.find(v => v.Name == "v1").Mountpoint')" "List Mountpoint"
out=$(plugin_ok VolumeDriver.Get '{"Name":"v1"}')
assert_eq v1 "$(jfield "$out" 's.Volume.Name')" "Get Name"
assert_eq "$MNT/v1" "$(jfield "$out" 's.Volume.Mountpoint')" "Get Mountpoint"
assert_eq 0 "$(jfield "$out" 's.Volume.Status.Mounts')" "Get Status.Mounts"
assert_eq s3://data/train/ "$(jfield "$out" 's.Volume.Status.Channels.train')" "Get Status.Channels"
assert_match '^[0-9]{4}-[0-9]{2}-[0-9]{2}T' "$(jfield "$out" 's.Volume.CreatedAt')" "Get CreatedAt"
out=$(plugin_ok VolumeDriver.Path '{"Name":"v1"}')
assert_eq "$MNT/v1" "$(jfield "$out" 's.Mountpoint')" "Path"

# ---- unknown volume, on every endpoint that names one ----
for ep in Remove Path Get; do
	plugin_err 200 "VolumeDriver.$ep" '{"Name":"nosuch"}' "volume 'nosuch' does not exist"
done
for ep in Mount Unmount; do
	plugin_err 200 "VolumeDriver.$ep" '{"Name":"nosuch","ID":"c1"}' "volume 'nosuch' does not exist"
done
plugin_err 200 VolumeDriver.Mount '{"Name":"v1"}' "ID is missing"
plugin_err 200 VolumeDriver.Get '{}' "Name is missing"
plugin_err 200 VolumeDriver.Unmount '{"Name":"v1","ID":"c1"}' "has no mount with ID 'c1'"

# ---- HTTP-level errors ----
plugin_err 404 VolumeDriver.Bogus '{}' "unknown endpoint"
plugin_err 404 Plugin.Nope '' "unknown endpoint"
plugin_err 400 VolumeDriver.Get 'not json' "not JSON"
plugin_err 400 VolumeDriver.Get '[1,2]' "not a JSON object"
head -c $((1024 * 1024 + 10)) /dev/zero | tr '\0' ' ' >"$TEST_TMP/big"
out=$(curl -sS --unix-socket "$PLUGIN_SOCK" -X POST --data-binary @"$TEST_TMP/big" \
	-w '\n%{http_code}' http://plugin/VolumeDriver.List)
assert_eq 413 "${out##*$'\n'}" "status of a body over 1 MiB"
assert_match 'larger than' "$(jfield "${out%$'\n'*}" s.Err)" "Err of a body over 1 MiB"
out=$(curl -sS --unix-socket "$PLUGIN_SOCK" -w '\n%{http_code}' http://plugin/VolumeDriver.List)
assert_eq 405 "${out##*$'\n'}" "status of a GET"

# ---- a mount that fails: s3pipe's message, nothing left behind ----
plugin_err 200 VolumeDriver.Mount '{"Name":"nobucket","ID":"c1"}' "no-such-bucket"
assert_not_mounted "$MNT/nobucket"
[ ! -e "$MNT/nobucket" ] || fail "a failed mount left its mountpoint"
assert_eq "" "$(daemon_of "$MNT/nobucket")" "daemon after a failed mount"
out=$(plugin_ok VolumeDriver.Get '{"Name":"nobucket"}')
assert_eq 0 "$(jfield "$out" 's.Volume.Status.Mounts')" "Mounts after a failed mount"
plugin_ok VolumeDriver.Remove '{"Name":"nobucket"}' >/dev/null

# ---- reference counting over two mount IDs ----
out=$(plugin_ok VolumeDriver.Mount '{"Name":"v1","ID":"c1"}')
mp=$(jfield "$out" s.Mountpoint)
assert_eq "$MNT/v1" "$mp" "Mount's Mountpoint"
assert_mounted "$mp"
pid1=$(daemon_of "$mp")
[ -n "$pid1" ] || fail "no s3pipe daemon serves $mp"
assert_eq "$pid1" "$(cat "$PLUGIN_STATE/run/v1.pid")" "pid file of v1"
tcat "$mp/train_0" >"$TEST_TMP/out" || fail "reading train_0 failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_0 through the plugin's mount"
assert_eq "$(sha256 "$TEST_TMP/train.exp")" "$(sha256sum "$mp/train_0" | cut -d' ' -f1)" \
	"sha256 of train_0"
tcat "$mp/val_0" >"$TEST_TMP/out" || fail "reading val_0 failed"
assert_file_eq "$TEST_TMP/val.exp" "$TEST_TMP/out" "val_0 through the plugin's mount"
# the mount is made with allow_other (containers may run as any user)
awk -v mp="$mp" '$5 == mp' /proc/self/mountinfo | grep -q 'allow_other' ||
	fail "$mp is not mounted with allow_other: $(awk -v mp="$mp" '$5 == mp' /proc/self/mountinfo)"

out=$(plugin_ok VolumeDriver.Mount '{"Name":"v1","ID":"c2"}')
assert_eq "$mp" "$(jfield "$out" s.Mountpoint)" "second Mount's Mountpoint"
plugin_ok VolumeDriver.Mount '{"Name":"v1","ID":"c2"}' >/dev/null # counts once
assert_eq "$pid1" "$(daemon_pids "$mp" | tr '\n' ' ' | sed 's/ $//')" "daemons after the second Mount"
out=$(plugin_ok VolumeDriver.Get '{"Name":"v1"}')
assert_eq 2 "$(jfield "$out" 's.Volume.Status.Mounts')" "Mounts with two IDs"
assert_eq "$pid1" "$(jfield "$out" 's.Volume.Status.Pid')" "Status.Pid"
assert_eq '["c1","c2"]' "$(json_eval s.MountIDs <"$PLUGIN_STATE/volumes/v1.json")" "recorded mount IDs"
plugin_err 200 VolumeDriver.Remove '{"Name":"v1"}' "volume 'v1' is in use by 2 mount(s)"
plugin_err 200 VolumeDriver.Unmount '{"Name":"v1","ID":"c3"}' "has no mount with ID 'c3'"

plugin_ok VolumeDriver.Unmount '{"Name":"v1","ID":"c1"}' >/dev/null
assert_mounted "$mp"
kill -0 "$pid1" 2>/dev/null || fail "the daemon exited after the first of two Unmounts"
tcat "$mp/train_1" >"$TEST_TMP/out" || fail "reading train_1 after the first Unmount failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_1 after the first Unmount"
plugin_err 200 VolumeDriver.Unmount '{"Name":"v1","ID":"c1"}' "has no mount with ID 'c1'"
plugin_ok VolumeDriver.Unmount '{"Name":"v1","ID":"c2"}' >/dev/null
assert_not_mounted "$mp"
wait_pids_gone 5 "$pid1" || fail "the daemon ($pid1) still runs after the last Unmount"
[ ! -e "$mp" ] || fail "the mountpoint is still there after the last Unmount"
[ ! -e "$PLUGIN_STATE/run/v1.pid" ] || fail "the pid file is still there after the last Unmount"
assert_eq '[]' "$(json_eval s.MountIDs <"$PLUGIN_STATE/volumes/v1.json")" "recorded mount IDs after unmounting"
# one ID, mounted twice, is one reference
plugin_ok VolumeDriver.Mount '{"Name":"v1","ID":"c4"}' >/dev/null
plugin_ok VolumeDriver.Mount '{"Name":"v1","ID":"c4"}' >/dev/null
plugin_ok VolumeDriver.Unmount '{"Name":"v1","ID":"c4"}' >/dev/null
assert_not_mounted "$mp"

# ---- a daemon that dies while the plugin runs: the next Mount mounts
# again, and the last Unmount still cleans up ----
plugin_ok VolumeDriver.Mount '{"Name":"v1","ID":"d1"}' >/dev/null
pid1=$(daemon_of "$mp")
kill -KILL "$pid1"
wait_pids_gone 5 "$pid1" || fail "kill -9 did not end the daemon"
plugin_ok VolumeDriver.Mount '{"Name":"v1","ID":"d2"}' >/dev/null
grep -q "volume 'v1': its mount or daemon (pid $pid1) is gone; mounting it again" "$PLUGIN_LOG" ||
	fail "no log line for mounting a dead mount again"
pid2=$(daemon_of "$mp")
[ -n "$pid2" ] && [ "$pid2" != "$pid1" ] || fail "no new daemon after the old one died ($pid1 -> $pid2)"
tcat "$mp/val_0" >"$TEST_TMP/out" || fail "reading val_0 after mounting again failed"
assert_file_eq "$TEST_TMP/val.exp" "$TEST_TMP/out" "val_0 after mounting again"
plugin_ok VolumeDriver.Unmount '{"Name":"v1","ID":"d1"}' >/dev/null
assert_mounted "$mp"
plugin_ok VolumeDriver.Unmount '{"Name":"v1","ID":"d2"}' >/dev/null
assert_not_mounted "$mp"
wait_pids_gone 5 "$pid2" || fail "the daemon ($pid2) still runs after the last Unmount"

# ---- a slow mount holds up only its own volume ----
s3_seed data slowp/ 1 1000
plugin_ok VolumeDriver.Create '{"Name":"slow","Opts":{"train":"s3://data/slowp/",'"$OPTS"'}}' >/dev/null
fault_arm 'kind=delay&seconds=4&list=1&count=1&match=slowp'
t0=$(date +%s%N)
curl -sS --unix-socket "$PLUGIN_SOCK" -X POST --max-time 60 -o "$TEST_TMP/slow.out" \
	--data-binary '{"Name":"slow","ID":"w1"}' http://plugin/VolumeDriver.Mount &
slow_curl=$!
# the delay is taken (no longer armed) once the listing is held up
delay_taken() { [ "$(s3_curl -sS -f "$S3_URL/__fault" | json_eval s.length)" = 0 ]; }
wait_until 5 delay_taken || fail "the slow mount's listing was not delayed"
t1=$(date +%s%N)
plugin_ok VolumeDriver.Mount '{"Name":"v1","ID":"o1"}' >/dev/null
plugin_ok VolumeDriver.Get '{"Name":"slow"}' >/dev/null
plugin_ok VolumeDriver.List '{}' >/dev/null
plugin_ok VolumeDriver.Unmount '{"Name":"v1","ID":"o1"}' >/dev/null
t2=$(date +%s%N)
[ $(((t2 - t1) / 1000000)) -lt 2500 ] ||
	fail "requests for other volumes took $(((t2 - t1) / 1000000)) ms during a slow mount"
wait "$slow_curl" || fail "the slow Mount's curl failed"
assert_eq "$MNT/slow" "$(json_eval s.Mountpoint <"$TEST_TMP/slow.out")" "the slow Mount: $(cat "$TEST_TMP/slow.out")"
[ $(((t2 - t0) / 1000000)) -lt 4000 ] || fail "the other requests finished only after the slow mount"
plugin_ok VolumeDriver.Unmount '{"Name":"slow","ID":"w1"}' >/dev/null
plugin_ok VolumeDriver.Remove '{"Name":"slow"}' >/dev/null
fault_clear

# ---- restart with a volume mounted ----
plugin_ok VolumeDriver.Mount '{"Name":"v1","ID":"r1"}' >/dev/null
pid1=$(daemon_of "$mp")
plugin_stop
[ ! -e "$PLUGIN_SOCK" ] || fail "the plugin left its socket behind"
assert_mounted "$mp"
kill -0 "$pid1" 2>/dev/null || fail "the daemon stopped with the plugin"
printf '{"Name": "broken", "Opts": ' >"$PLUGIN_STATE/volumes/broken.json"
printf '{"Name": "other", "Opts": {}, "CreatedAt": "x", "MountIDs": []}' \
	>"$PLUGIN_STATE/volumes/wrongname.json"
plugin_start
grep -q "skipping .*broken.json" "$PLUGIN_LOG" || fail "no log line for the corrupt record"
grep -q "skipping .*wrongname.json" "$PLUGIN_LOG" || fail "no log line for the misnamed record"
out=$(plugin_ok VolumeDriver.List '{}')
assert_eq "v1" "$(jfield "$out" 's.Volumes.map(v => v.Name).join(" ")')" "List after the restart"
out=$(plugin_ok VolumeDriver.Get '{"Name":"v1"}')
assert_eq 1 "$(jfield "$out" 's.Volume.Status.Mounts')" "Mounts after the restart"
assert_eq "$pid1" "$(jfield "$out" 's.Volume.Status.Pid')" "daemon after the restart"
assert_eq "$pid1" "$(daemon_of "$mp")" "the daemon serving after the restart"
tcat "$mp/train_0" >"$TEST_TMP/out" || fail "reading train_0 after the restart failed"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_0 after the restart"
plugin_ok VolumeDriver.Unmount '{"Name":"v1","ID":"r1"}' >/dev/null
assert_not_mounted "$mp"
wait_pids_gone 5 "$pid1" || fail "the daemon still runs after Unmount following a restart"

# ---- a daemon killed while the plugin is down: a stale mount ----
plugin_ok VolumeDriver.Mount '{"Name":"v1","ID":"s1"}' >/dev/null
pid1=$(daemon_of "$mp")
plugin_stop
kill -KILL "$pid1"
wait_pids_gone 5 "$pid1" || fail "kill -9 did not end the daemon"
assert_mounted "$mp" # dead, but still there
plugin_start
grep -q "volume 'v1': stale state cleaned up" "$PLUGIN_LOG" || fail "no log line for the stale mount"
assert_not_mounted "$mp"
out=$(plugin_ok VolumeDriver.Get '{"Name":"v1"}')
assert_eq 0 "$(jfield "$out" 's.Volume.Status.Mounts')" "Mounts after the stale clean-up"
plugin_err 200 VolumeDriver.Unmount '{"Name":"v1","ID":"s1"}' "has no mount with ID 's1'"
plugin_ok VolumeDriver.Mount '{"Name":"v1","ID":"s2"}' >/dev/null
assert_mounted "$mp"
tcat "$mp/val_0" >"$TEST_TMP/out" || fail "reading val_0 after the stale clean-up failed"
assert_file_eq "$TEST_TMP/val.exp" "$TEST_TMP/out" "val_0 after the stale clean-up"
plugin_ok VolumeDriver.Unmount '{"Name":"v1","ID":"s2"}' >/dev/null
assert_not_mounted "$mp"

# ---- remove ----
plugin_ok VolumeDriver.Remove '{"Name":"v1"}' >/dev/null
plugin_err 200 VolumeDriver.Remove '{"Name":"v1"}' "volume 'v1' does not exist"
[ ! -e "$PLUGIN_STATE/volumes/v1.json" ] || fail "Remove left the record"
out=$(plugin_ok VolumeDriver.List '{}')
assert_eq 0 "$(jfield "$out" 's.Volumes.length')" "List after Remove"
plugin_stop

# ---- socket activation: systemd's socket (fd 3), left in place ----
require_cmd systemd-socket-activate "apt-get install systemd"
ACT_SOCK="$TEST_TMP/act.sock"
systemd-socket-activate -l "$ACT_SOCK" "$S3PIPE_DOCKER_PLUGIN" \
	--socket "$TEST_TMP/unused.sock" --state-dir "$PLUGIN_STATE" \
	--s3pipe "$S3PIPE" </dev/null >>"$PLUGIN_LOG" 2>&1 &
PLUGIN_PID=$!
track_pid "$PLUGIN_PID"
PLUGIN_SOCK=$ACT_SOCK
wait_until 15 curl -sf --unix-socket "$ACT_SOCK" -X POST http://plugin/Plugin.Activate \
	-o /dev/null || fail "no answer on the socket-activated socket"
plugin_ok VolumeDriver.Create '{"Name":"act","Opts":{"train":"s3://data/train/",'"$OPTS"'}}' >/dev/null
[ ! -e "$TEST_TMP/unused.sock" ] || fail "the plugin bound --socket despite the socket from systemd"
grep -q "serving on the socket from systemd" "$PLUGIN_LOG" || fail "no log line for the socket from systemd"
plugin_ok VolumeDriver.Remove '{"Name":"act"}' >/dev/null
plugin_stop
PLUGIN_SOCK=

# ---- the units it ships ----
require_cmd systemd-analyze "apt-get install systemd"
UNITS="$TEST_TMP/units"
mkdir -p "$UNITS"
BINDIR=$(dirname "$(realpath -m "$S3PIPE")")
sed -e "s|@bindir@|$BINDIR|g" -e "s|@sbindir@|$(dirname "$(realpath -m "$S3PIPE_DOCKER_PLUGIN")")|g" \
	"$S3PIPE_SRCDIR/contrib/docker/s3pipe-docker-plugin.service.in" >"$UNITS/s3pipe-docker-plugin.service"
cp "$S3PIPE_SRCDIR/contrib/docker/s3pipe-docker-plugin.socket" "$UNITS/"
(cd "$UNITS" && systemd-analyze verify --man=no s3pipe-docker-plugin.socket \
	s3pipe-docker-plugin.service) >"$TEST_TMP/verify.out" 2>&1 || {
	cat "$TEST_TMP/verify.out" >&2
	fail "systemd-analyze verify failed on the plugin's units"
}
# verify warns without failing: anything said about these units fails
if grep -F s3pipe-docker-plugin "$TEST_TMP/verify.out" >&2; then
	fail "systemd-analyze verify warned about the plugin's units"
fi
grep -qx 'KillMode=process' "$UNITS/s3pipe-docker-plugin.service" || fail "the service lacks KillMode=process"

# ---- no secret anywhere the plugin writes ----
if grep -rqF -- "$SECRET" "$PLUGIN_STATE" "$PLUGIN_LOG"; then
	fail "the secret key appears in the state directory or the plugin log"
fi
grep -c 'VolumeDriver\.' "$PLUGIN_LOG" >/dev/null || fail "the plugin logged no request"
note "ok: plugin log has $(wc -l <"$PLUGIN_LOG") lines, no secret"
