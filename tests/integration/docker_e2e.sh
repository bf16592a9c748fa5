#!/bin/bash
# docker_e2e: s3pipe-docker-plugin under a real Docker daemon.
#
# The test starts a dockerd of its own (its data root under the test
# folder, a short exec root, no bridge, no iptables, the vfs storage
# driver) and stops it at the end; a dockerd or containerd that is missing
# or does not come up within 60 s fails the test.  The image is busybox,
# imported from a folder (no registry is reached).  The plugin listens on
# /run/docker/plugins/s3pipe-tPID.sock, so the driver is s3pipe-tPID, a
# name of this run alone.  Then:
#  - `docker volume create -d DRIVER -o train=s3://... -o endpoint_url=...`
#    makes a volume; a credential-shaped or unknown -o is refused by
#    `docker volume create` with the plugin's own message;
#  - `docker run --rm --network none -v VOL:/opt/ml/input/data` reads
#    train_0 and then train_1 in the container: their sha256 equal the
#    objects'; the volume is unmounted once the container is gone;
#  - two detached containers use the volume at once: one daemon serves
#    both (the plugin counts two mounts), both read, both exit 0;
#  - `docker volume rm` after both are gone leaves no mount and no daemon.
# Containers run as root with --network none; the s3pipe daemon runs on the
# host, where the test S3 server listens on the loopback address.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd curl
for cmd in dockerd containerd runc docker; do
	command -v "$cmd" >/dev/null ||
		fail "$cmd is required for this test (apt-get install docker.io; contrib/install-deps --tests)"
done
BUSYBOX=$(command -v busybox || true)
[ -n "$BUSYBOX" ] || fail "busybox is required for the test image (apt-get install busybox-static)"
ldd "$BUSYBOX" >/dev/null 2>&1 &&
	fail "$BUSYBOX is linked dynamically: the image needs a static one (apt-get install busybox-static)"

s3_start
s3_mb data
s3_seed data train/ 5 150001
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"
TRAIN_SHA=$(sha256 "$TEST_TMP/train.exp")

. "$S3PIPE_SRCDIR/tests/docker_lib.sh"
DRIVER="s3pipe-t$$"
PLUGIN_SOCK="/run/docker/plugins/$DRIVER.sock"
VOL="vol$$"
IMAGE="s3pipe-test-busybox:$$"
DATA=/opt/ml/input/data

# ---- a dockerd of the test's own ----
DOCKER_EXEC="/tmp/s3pd.$$" # unix socket paths are short
DOCKER_SOCK="$DOCKER_EXEC/docker.sock"
DOCKER_PID=
export DOCKER_CONFIG="$TEST_TMP/docker-config"
mkdir -p "$DOCKER_EXEC" "$TEST_TMP/docker" "$DOCKER_CONFIG"

dk() {
	timeout -k 5 90 docker -H "unix://$DOCKER_SOCK" "$@"
}

docker_cleanup() {
	local c
	if [ -n "$DOCKER_PID" ] && kill -0 "$DOCKER_PID" 2>/dev/null; then
		for c in $(dk ps -aq 2>/dev/null); do dk rm -f "$c" >/dev/null 2>&1; done
		dk volume rm -f "$VOL" >/dev/null 2>&1
		kill -TERM "$DOCKER_PID"
		wait_pids_gone 20 "$DOCKER_PID" || kill -KILL "$DOCKER_PID"
	fi
	# what a dockerd that was killed may leave mounted (shm, netns)
	awk -v a="$DOCKER_EXEC/" -v b="$TEST_TMP/docker/" \
		'index($5, a) == 1 || index($5, b) == 1 { print $5 }' /proc/self/mountinfo |
		sort -r | while read -r m; do umount -l "$m" 2>/dev/null; done
	rm -rf "$DOCKER_EXEC"
}
CLEANUP_HOOK="docker_cleanup; $CLEANUP_HOOK"

dockerd --data-root "$TEST_TMP/docker/data" --exec-root "$DOCKER_EXEC" \
	-H "unix://$DOCKER_SOCK" --pidfile "$DOCKER_EXEC/docker.pid" \
	--bridge=none --iptables=false --ip6tables=false --storage-driver vfs \
	</dev/null >"$TEST_TMP/dockerd.log" 2>&1 &
DOCKER_PID=$!
if ! wait_until 60 dk info -f '{{.ServerVersion}}' >/dev/null; then
	tail -n 15 "$TEST_TMP/dockerd.log" >&2
	kill -0 "$DOCKER_PID" 2>/dev/null || fail "dockerd exited during start-up (log above)"
	fail "dockerd did not answer on $DOCKER_SOCK within 60 s (log above)"
fi
note "dockerd $(dk info -f '{{.ServerVersion}}') is up"

# ---- the image: a static busybox and its links ----
ROOTFS="$TEST_TMP/rootfs"
mkdir -p "$ROOTFS/bin" "$ROOTFS/tmp" "$ROOTFS$DATA"
cp "$BUSYBOX" "$ROOTFS/bin/busybox"
for app in sh cat sha256sum ls sleep test seq; do
	ln -s busybox "$ROOTFS/bin/$app"
done
tar -C "$ROOTFS" -c . | dk import - "$IMAGE" >/dev/null || fail "docker import failed"

# ---- the plugin; Docker finds it by its socket ----
plugin_start

# ---- volume create: refusals carry the plugin's message ----
expect_create_error() {	# NEEDLE -o ARGS...
	local needle=$1 rc=0
	shift
	dk volume create -d "$DRIVER" "$@" "bad$$" >/dev/null 2>"$TEST_TMP/create.err" || rc=$?
	[ "$rc" -ne 0 ] || fail "docker volume create $* succeeded"
	grep -Fq -- "$needle" "$TEST_TMP/create.err" ||
		fail "docker volume create $*: stderr lacks '$needle': $(cat "$TEST_TMP/create.err")"
	note "ok: docker volume create refused: $(cat "$TEST_TMP/create.err")"
}
expect_create_error "credentials are not volume options" \
	-o train=s3://data/train/ -o endpoint_url="$S3_URL" -o aws_secret_access_key=nope
expect_create_error "unknown option '-o bogus'" \
	-o train=s3://data/train/ -o endpoint_url="$S3_URL" -o bogus=1
dk volume inspect "bad$$" >/dev/null 2>&1 && fail "a refused volume exists"

dk volume create -d "$DRIVER" -o train=s3://data/train/ -o endpoint_url="$S3_URL" \
	-o region=us-east-1 -o epochs=2 "$VOL" >/dev/null || fail "docker volume create failed"
dk volume ls --format '{{.Driver}} {{.Name}}' | grep -qx "$DRIVER $VOL" ||
	fail "docker volume ls does not list $VOL: $(dk volume ls)"
MP="$PLUGIN_STATE/mounts/$VOL"

# ---- one container reads both epochs ----
READ_BOTH="sha256sum $DATA/train_0 && i=0 && while ! test -e $DATA/train_1; do
	i=\$((i + 1)); test \$i -lt 200 || exit 3; sleep 0.05; done && sha256sum $DATA/train_1"
dk run --rm --network none -v "$VOL:$DATA" "$IMAGE" sh -c "$READ_BOTH" \
	>"$TEST_TMP/run1.out" 2>"$TEST_TMP/run1.err" ||
	fail "docker run failed: $(cat "$TEST_TMP/run1.err")"
assert_eq "$TRAIN_SHA  $DATA/train_0" "$(sed -n 1p "$TEST_TMP/run1.out")" "sha256 of train_0 in the container"
assert_eq "$TRAIN_SHA  $DATA/train_1" "$(sed -n 2p "$TEST_TMP/run1.out")" "sha256 of train_1 in the container"
wait_until 10 sh -c "! awk -v mp='$MP' '\$5 == mp { f = 1 } END { exit !f }' /proc/self/mountinfo" ||
	fail "$MP is still mounted after the container was removed"
assert_eq "" "$(daemon_of "$MP")" "daemon after the container was removed"

# ---- two containers at once ----
c1=$(dk run -d --network none -v "$VOL:$DATA" "$IMAGE" sh -c "sha256sum $DATA/train_0; sleep 4") ||
	fail "docker run -d (1) failed"
c2=$(dk run -d --network none -v "$VOL:$DATA" "$IMAGE" sh -c "sha256sum $DATA/train_0; sleep 4") ||
	fail "docker run -d (2) failed"
assert_mounted "$MP"
out=$(plugin_ok VolumeDriver.Get "{\"Name\":\"$VOL\"}")
assert_eq 2 "$(jfield "$out" 's.Volume.Status.Mounts')" "mounts while two containers run"
assert_eq 1 "$(daemon_pids "$MP" | wc -l)" "daemons while two containers run"
pid=$(daemon_of "$MP")
for c in "$c1" "$c2"; do
	assert_eq 0 "$(dk wait "$c")" "exit status of container ${c:0:12}"
	assert_eq "$TRAIN_SHA  $DATA/train_0" "$(dk logs "$c" 2>&1)" "sha256 in container ${c:0:12}"
done
dk rm "$c1" "$c2" >/dev/null || fail "docker rm failed"

# ---- volume rm: nothing left ----
dk volume rm "$VOL" >/dev/null || fail "docker volume rm failed"
assert_not_mounted "$MP"
wait_pids_gone 10 "$pid" || fail "the daemon ($pid) still runs after docker volume rm"
[ ! -e "$PLUGIN_STATE/volumes/$VOL.json" ] || fail "the plugin still has a record of $VOL"
out=$(plugin_ok VolumeDriver.List '{}')
assert_eq 0 "$(jfield "$out" 's.Volumes.length')" "the plugin's volumes at the end"
grep -q "VolumeDriver.Mount '$VOL'" "$PLUGIN_LOG" || fail "the plugin logged no Mount from Docker"
