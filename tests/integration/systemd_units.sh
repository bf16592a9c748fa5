#!/bin/bash
# systemd_units: the units s3pipe ships, checked two ways.
#  - systemd-analyze verify (--man=no: the man pages need not be installed)
#    passes on each, with nothing printed (verify
#    exits 0 on an unknown key or a bad value and only warns, so any
#    output fails the test); also on the .mount and .automount units that
#    systemd-fstab-generator makes from a documented fstab line.
#  - what the units would run, run the way systemd would: s3pipe@.service's
#    ExecStartPre and ExecStart with %i and the environment file expanded
#    by systemd's rules ($VAR splits into words, ${VAR} stays one), then
#    the checks systemd relies on (Type=forking: the command returns once
#    the mount is ready, and PIDFile names the daemon), then the stop
#    (SIGTERM to that pid: unmounted, daemon gone, pid file removed); and
#    the fstab line's mount, as mount(8) would call the helper.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd systemd-analyze "apt-get install systemd"
GENERATOR=/lib/systemd/system-generators/systemd-fstab-generator
[ -x "$GENERATOR" ] || fail "$GENERATOR not found (apt-get install systemd)"
s3_start

s3_mb data
s3_seed data train/ 4 100003
s3_seed data validation/ 2 70001
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"
expected_cat "$S3_LOCAL/data" validation/ >"$TEST_TMP/validation.exp"

BINDIR=$(dirname "$(realpath -m "$S3PIPE")")
UNITS="$TEST_TMP/units"
mkdir -p "$UNITS"

# A unit template with @bindir@/@sbindir@ filled in as `make` does, but
# pointing at the binaries under test (verify checks that they exist).
unit_from() {	# TEMPLATE.in OUT
	sed -e "s|@bindir@|$BINDIR|g" -e "s|@sbindir@|$BINDIR|g" "$1" >"$2"
}

verify_quiet() {	# UNIT...
	local rc=0
	(cd "$UNITS" && systemd-analyze verify --man=no "$@") >"$TEST_TMP/verify.out" 2>&1 || rc=$?
	if [ "$rc" -ne 0 ] || [ -s "$TEST_TMP/verify.out" ]; then
		cat "$TEST_TMP/verify.out" >&2
		fail "systemd-analyze verify $* exited $rc with the output above"
	fi
	note "ok: systemd-analyze verify $*"
}

# ---- s3pipe@.service: verify ----
unit_from "$S3PIPE_SRCDIR/contrib/systemd/s3pipe@.service.in" "$UNITS/s3pipe@.service"
grep -q '@bindir@' "$S3PIPE_SRCDIR/contrib/systemd/s3pipe@.service.in" ||
	fail "s3pipe@.service.in does not name @bindir@ (the installed path)"
verify_quiet "$UNITS/s3pipe@.service"
# the check can fail: a misspelt key is caught
sed 's/^Type=forking/Type=forked/' "$UNITS/s3pipe@.service" >"$UNITS/broken@.service"
if (cd "$UNITS" && systemd-analyze verify --man=no "$UNITS/broken@.service") >"$TEST_TMP/verify.out" 2>&1 &&
	[ ! -s "$TEST_TMP/verify.out" ]; then
	fail "systemd-analyze verify took a unit with Type=forked without a word"
fi
rm -f "$UNITS/broken@.service"

# ---- s3pipe@.service: run as systemd would ----
# the value of KEY in the unit's [Service] section (the last one given)
unit_key() {	# UNIT KEY
	sed -n "s/^$2=//p" "$1" | tail -n 1
}

# EnvironmentFile: VAR=value lines, '#' comments, no shell expansion
declare -A UNIT_ENV=()
load_env_file() {	# FILE
	local line
	while IFS= read -r line || [ -n "$line" ]; do
		case $line in '' | '#'* | ';'*) continue ;; esac
		UNIT_ENV[${line%%=*}]=${line#*=}
	done <"$1"
}

# One command line of the unit, expanded as systemd does, into CMD: %i and
# %I the instance; ${VAR} one word; $VAR split on blanks; and no shell.
CMD=()
expand_command() {	# INSTANCE LINE
	local instance=$1 word var
	local -a words split
	CMD=()
	read -r -a words <<<"$2"
	for word in "${words[@]}"; do
		word=${word//%i/$instance}
		word=${word//%I/$instance}
		if [[ $word =~ ^\$\{([A-Za-z_][A-Za-z0-9_]*)\}$ ]]; then
			var=${BASH_REMATCH[1]}
			CMD+=("${UNIT_ENV[$var]:-}")
		elif [[ $word =~ ^\$([A-Za-z_][A-Za-z0-9_]*)$ ]]; then
			var=${BASH_REMATCH[1]}
			read -r -a split <<<"${UNIT_ENV[$var]:-}"
			CMD+=("${split[@]}")
		else
			[[ $word != *'$'* ]] || fail "cannot expand '$word' the way systemd does"
			CMD+=("$word")
		fi
	done
}

INSTANCE=demo
UNIT="$UNITS/s3pipe@.service"
[ "$(unit_key "$UNIT" Type)" = forking ] || fail "s3pipe@.service is not Type=forking"
env_file=$(unit_key "$UNIT" EnvironmentFile)
assert_eq "/etc/s3pipe/%i.conf" "$env_file" "EnvironmentFile of s3pipe@.service"
# the run directory systemd would make, under the test's own root
RUNROOT="$TEST_TMP/run"
MP="$TEST_TMP/mnt-unit/data"	# ExecStartPre makes it
cat >"$TEST_TMP/$INSTANCE.conf" <<EOF
# written by the test, in the example's shape
S3PIPE_MOUNTPOINT=$MP
S3PIPE_ARGS=--endpoint-url $S3_URL --epochs 2 train=s3://data/train/ validation=s3://data/validation/
EOF
load_env_file "$TEST_TMP/$INSTANCE.conf"
# the shipped example must load the same way and carry both variables
declare -A saved=()
for k in "${!UNIT_ENV[@]}"; do saved[$k]=${UNIT_ENV[$k]}; done
UNIT_ENV=()
load_env_file "$S3PIPE_SRCDIR/contrib/systemd/s3pipe.conf.example"
[ -n "${UNIT_ENV[S3PIPE_MOUNTPOINT]:-}" ] || fail "s3pipe.conf.example sets no S3PIPE_MOUNTPOINT"
[ -n "${UNIT_ENV[S3PIPE_ARGS]:-}" ] || fail "s3pipe.conf.example sets no S3PIPE_ARGS"
# the example's arguments parse (mounts nothing, asks nothing of S3)
expand_command "$INSTANCE" "$S3PIPE --check-options \$S3PIPE_ARGS \${S3PIPE_MOUNTPOINT}"
"${CMD[@]}" 2>"$TEST_TMP/check.err" || fail "the example's S3PIPE_ARGS are refused: $(cat "$TEST_TMP/check.err")"
UNIT_ENV=()
for k in "${!saved[@]}"; do UNIT_ENV[$k]=${saved[$k]}; done

pid_file=$(unit_key "$UNIT" PIDFile)
pid_file=${pid_file//%i/$INSTANCE}
run_dir=$(unit_key "$UNIT" RuntimeDirectory)
run_dir=${run_dir//%i/$INSTANCE}
assert_eq "/run/s3pipe/$INSTANCE/s3pipe.pid" "$pid_file" "PIDFile"
assert_eq "s3pipe/$INSTANCE" "$run_dir" "RuntimeDirectory"
# systemd makes /run/RuntimeDirectory; the test moves /run under its own root
mkdir -p "$RUNROOT/$run_dir"
relocate() {	# replace /run/ by the test's run root in CMD
	local i
	for i in "${!CMD[@]}"; do
		CMD[$i]=${CMD[$i]//\/run\//$RUNROOT/}
	done
}
expand_command "$INSTANCE" "$(unit_key "$UNIT" ExecStartPre)"
relocate
"${CMD[@]}" || fail "ExecStartPre failed: ${CMD[*]}"
[ -d "$MP" ] || fail "ExecStartPre did not make the mountpoint"
expand_command "$INSTANCE" "$(unit_key "$UNIT" ExecStart)"
relocate
assert_eq "$MP" "${CMD[-1]}" "ExecStart's last argument (the mountpoint)"
echo "$MP" >>"$TEST_TMP/mounts"
rc=0
timeout -k 5 60 "${CMD[@]}" </dev/null >"$TEST_TMP/start.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "ExecStart exited $rc: $(cat "$TEST_TMP/start.out")"
# Type=forking: once the command returned, the mount is there and the
# pid file names the daemon serving it
assert_mounted "$MP"
pid_local=${pid_file/\/run\//$RUNROOT/}
[ -s "$pid_local" ] || fail "no pid file at $pid_local after ExecStart returned"
pid=$(cat "$pid_local")
track_pid "$pid"
assert_eq "$pid" "$(daemon_pids "$MP")" "the pid file names the daemon"
tcat "$MP/train_0" >"$TEST_TMP/out" || fail "reading train_0 through the unit's mount"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_0 (s3pipe@.service)"
tcat "$MP/validation_0" >"$TEST_TMP/out" || fail "reading validation_0 through the unit's mount"
assert_file_eq "$TEST_TMP/validation.exp" "$TEST_TMP/out" "validation_0 (s3pipe@.service)"
# systemctl reload: ExecReload with $MAINPID, a new worker serves
UNIT_ENV[MAINPID]=$pid
worker=$(worker_pids "$MP")
expand_command "$INSTANCE" "$(unit_key "$UNIT" ExecReload)"
"${CMD[@]}" || fail "ExecReload failed: ${CMD[*]}"
wait_until 20 eval '[ -n "$(worker_pids "$MP")" ] && [ "$(worker_pids "$MP")" != "$worker" ]' ||
	fail "ExecReload: no new worker within 20 s"
tcat "$MP/train_1" >"$TEST_TMP/out" || fail "reading train_1 after a reload"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_1 after ExecReload"
assert_eq "$pid" "$(daemon_pids "$MP")" "the main pid after a reload"
# systemctl stop: SIGTERM to the main pid
kill -TERM "$pid"
wait_pids_gone 15 "$pid" || fail "the daemon ($pid) still runs 15 s after SIGTERM"
assert_not_mounted "$MP"
[ ! -e "$pid_local" ] || fail "the pid file outlived the daemon"
note "ok: s3pipe@$INSTANCE: started (forking, pid file), read, reloaded, stopped"

# ---- fstab with x-systemd.automount: the generated units ----
FSTAB_MP="$TEST_TMP/mnt-fstab"
mkdir -p "$FSTAB_MP"
opts="_netdev,x-systemd.automount,x-systemd.idle-timeout=0,nofail,channel=train,endpoint_url=$S3_URL,epochs=2"
printf 's3://data/train/ %s s3pipe %s 0 0\n' "$FSTAB_MP" "$opts" >"$TEST_TMP/fstab"
GEN="$TEST_TMP/gen"
mkdir -p "$GEN/normal" "$GEN/early" "$GEN/late"
SYSTEMD_FSTAB="$TEST_TMP/fstab" SYSTEMD_PROC_CMDLINE="" \
	"$GENERATOR" "$GEN/normal" "$GEN/early" "$GEN/late" 2>"$TEST_TMP/gen.err" ||
	fail "systemd-fstab-generator failed: $(cat "$TEST_TMP/gen.err")"
unit_name=$(systemd-escape --path --suffix=mount "$FSTAB_MP")
auto_name=${unit_name%.mount}.automount
[ -f "$GEN/normal/$unit_name" ] || fail "the generator made no $unit_name: $(ls -R "$GEN")"
[ -f "$GEN/normal/$auto_name" ] || fail "the generator made no $auto_name (x-systemd.automount)"
cp "$GEN/normal/$unit_name" "$GEN/normal/$auto_name" "$UNITS/"
verify_quiet "$UNITS/$unit_name" "$UNITS/$auto_name"
assert_eq s3pipe "$(unit_key "$UNITS/$unit_name" Type)" "Type= of the generated mount unit"
# a network file system: ordered after the network (_netdev)
grep -q 'remote-fs' <(ls -R "$GEN/normal") || fail "the fstab line did not make a remote-fs unit (_netdev)"
# the mount the unit makes: mount(8) runs /sbin/mount.s3pipe WHAT WHERE -o OPTIONS
what=$(unit_key "$UNITS/$unit_name" What)
where=$(unit_key "$UNITS/$unit_name" Where)
options=$(unit_key "$UNITS/$unit_name" Options)
assert_eq "$FSTAB_MP" "$where" "Where= of the generated mount unit"
echo "$where" >>"$TEST_TMP/mounts"
rc=0
timeout -k 5 60 "$MOUNT_S3PIPE" "$what" "$where" -o "$options" </dev/null \
	>"$TEST_TMP/mount.out" 2>&1 || rc=$?
[ "$rc" -eq 0 ] || fail "mount.s3pipe with the generated unit's options exited $rc: $(cat "$TEST_TMP/mount.out")"
track_mount "$where"
tcat "$where/train_0" >"$TEST_TMP/out" || fail "reading train_0 through the fstab mount"
assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_0 (fstab line)"
unmount "$where"
assert_not_mounted "$where"

note "ok"
