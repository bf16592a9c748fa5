#!/bin/bash
# tls: the test server over HTTPS with a self-signed certificate made here.
# Refused by default (exit 1, one line naming the certificate problem, no
# mount); accepted with --ca-bundle FILE, with AWS_CA_BUNDLE=FILE, and with
# --no-verify-ssl; a --ca-bundle that does not sign the server's
# certificate is refused too.  Every read is byte-exact.
. "$(cd "$(dirname "$0")/.." && pwd)/lib.sh"
require_fuse
require_cmd openssl

make_cert() {	# NAME: NAME.pem (certificate) and NAME.key, for 127.0.0.1
	openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=127.0.0.1" \
		-addext "subjectAltName=IP:127.0.0.1" \
		-keyout "$TEST_TMP/$1.key" -out "$TEST_TMP/$1.pem" 2>"$TEST_TMP/openssl.err" ||
		fail "openssl could not make a certificate: $(cat "$TEST_TMP/openssl.err")"
}
make_cert server
make_cert other

S3_SERVER_ARGS=(--tls-cert "$TEST_TMP/server.pem" --tls-key "$TEST_TMP/server.key")
s3_start
case $S3_URL in https://*) ;; *) fail "the server did not start with TLS: $S3_URL" ;; esac
# seeding with curl: trust the test's own certificate
export CURL_CA_BUNDLE="$TEST_TMP/server.pem"

s3_mb data
s3_seed data train/ 4 300001
expected_cat "$S3_LOCAL/data" train/ >"$TEST_TMP/train.exp"
unset AWS_CA_BUNDLE

# refused: exit 1, one line, no mount (OPTIONS... MOUNTPOINT)
refused() {
	local what=$1 mp rc=0
	shift
	mp=$(new_mountpoint)
	"$S3PIPE" "$@" --endpoint-url "$S3_URL" train=s3://data/train/ "$mp" \
		2>"$TEST_TMP/err" </dev/null || rc=$?
	track_mount "$mp"
	[ "$rc" -eq 1 ] || fail "$what: exit $rc, expected 1 ($(cat "$TEST_TMP/err"))"
	assert_eq 1 "$(wc -l <"$TEST_TMP/err")" "$what: lines of error output"
	assert_match 'tls verification failed .*(self-signed|certificate)' "$(cat "$TEST_TMP/err")" "$what: message"
	assert_not_mounted "$mp"
}

# accepted: the mount reads byte-exact (OPTIONS...)
accepted() {
	local what=$1 mp
	shift
	mp=$(new_mountpoint)
	mount_ok "$@" --endpoint-url "$S3_URL" train=s3://data/train/ "$mp"
	tcat "$mp/train_0" >"$TEST_TMP/out" || fail "$what: reading train_0 failed"
	assert_file_eq "$TEST_TMP/train.exp" "$TEST_TMP/out" "train_0 ($what)"
	unmount "$mp"
}

refused "default verification"
refused "a --ca-bundle that did not sign it" --ca-bundle "$TEST_TMP/other.pem"
AWS_CA_BUNDLE="$TEST_TMP/other.pem" refused "an AWS_CA_BUNDLE that did not sign it"
accepted "--ca-bundle" --ca-bundle "$TEST_TMP/server.pem"
AWS_CA_BUNDLE="$TEST_TMP/server.pem" accepted "AWS_CA_BUNDLE"
accepted "--no-verify-ssl" --no-verify-ssl
note "ok"
