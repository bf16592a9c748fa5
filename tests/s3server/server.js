#!/usr/bin/env node
// Local S3 server for the s3pipe integration tests: s3rver run as a library
// (it is a Koa app) with our middleware placed first: the control routes,
// a SigV4 verifier, fault injection, then synthetic buckets. Optionally a second listener in
// the same process mocks the credential services (IMDSv2, container
// credentials, STS AssumeRoleWithWebIdentity, credential_process).
//
//   node server.js --dir DIR [--port PORT] [--address 127.0.0.1] [--verbose]
//       [--key AKID:SECRET]... [--no-verify] [--tls-cert FILE --tls-key FILE]
//       [--credentials-port PORT] [--credential-lifetime SECONDS]
//       [--container-token VALUE] [--web-identity-token VALUE]
//       [--key-store FILE]
//       [--synthetic BUCKET=N[:LAYOUT[:CONTENT]]]... [--synthetic-layout LAYOUT]
//       [--synthetic-delay-ms MS] [--synthetic-size MIN:MAX] [--synthetic-page-keys N]
//
// Prints exactly one line on stdout once it is listening (port 0 or none =
// a free port), nothing else on stdout, and exits 0 on SIGTERM/SIGINT:
//   ready http://ADDRESS:PORT                                   (plain)
//   ready https://ADDRESS:PORT                                  (--tls-*)
//   ready http://ADDRESS:PORT credentials http://ADDRESS:PORT2  (--credentials-port)
// The credentials listener is always plain http on the same address.
// stderr: one line per refused signed request ("auth: STATUS CODE METHOD
// PATH key=AKID: message", the first 200; all of them, with the canonical
// request, under --verbose), never a secret or a session token.
//
// Node 20's OpenSSL 3 has no DES, which s3rver uses for ListObjectsV2
// continuation tokens: without --openssl-legacy-provider every second page
// answers HTTP 500. If DES is missing this script re-executes itself with
// that flag (stdio inherited, signals forwarded, the child exits when the
// parent goes away).
//
// ---- SigV4 verification (on unless --no-verify) ----
// Keys: every --key AKID:SECRET (default S3RVER:S3RVER only when no --key is
// given) plus the temporary keys the credential mocks issue (each with a
// session token and an expiry; they stay known after expiry so a late use
// answers ExpiredToken). With --key-store FILE the temporary keys, IMDS
// tokens and the lifetime are saved there (mode 0600) and loaded at start,
// so they survive a restart; without it a restart forgets them.
//   - No Authorization header and no auth query parameters: anonymous, passed
//     through unchanged (tests seed data with anonymous curl).
//   - Authorization: AWS4-HMAC-SHA256 ...: verified as AWS S3 does
//     (canonical URI from the raw path, each segment decoded and re-encoded,
//     no double encoding, no dot-segment removal; canonical query decoded
//     and re-encoded, sorted; canonical headers from the raw headers;
//     payload hash = x-amz-content-sha256, which must be present; signing
//     key cached per (secret, date, region, service)). The region is taken
//     from the credential scope, the service must be s3, the scope date
//     must be x-amz-date's, x-amz-date within 15 minutes of now, host and
//     x-amz-date signed, every x-amz-* header present signed. Temporary keys
//     need x-amz-security-token present, signed and equal to the token
//     issued; a permanent key must not send one.
//   - Presigned URLs (X-Amz-Algorithm/Credential/Date/Expires/SignedHeaders/
//     Signature[/Security-Token] in the query) are verified too (payload
//     UNSIGNED-PAYLOAD unless an x-amz-content-sha256 header is sent);
//     expired ones get 403 AccessDenied. SigV2 (header or query): 400
//     InvalidRequest.
//   - Errors: 400 AuthorizationHeaderMalformed / AuthorizationQueryParametersError,
//     403 InvalidAccessKeyId, 403 SignatureDoesNotMatch (with StringToSign and
//     CanonicalRequest in the body, session token redacted), 403
//     RequestTimeTooSkewed, 403 AccessDenied (missing x-amz-date, unsigned
//     headers: HeadersNotSigned), 400 InvalidRequest (missing
//     x-amz-content-sha256), 400 XAmzContentSHA256Mismatch, 403 InvalidToken,
//     400 ExpiredToken. HEAD answers carry no body.
//   - Accepted requests lose Authorization, x-amz-security-token and the
//     presign parameters and reach s3rver as anonymous requests (which it
//     serves) with its dummy account set, so response-* overrides work.
//   - Rejected requests never reach fault injection nor its counters.
// Auth stats (S3 port; also on the credentials port):
//   GET    /__auth/stats   {verify, verified, unverified, anonymous:{METHOD:n},
//                           anonymousTotal, failed, failures:{CODE:n},
//                           keys:{AKID:{requests, failed, first, last,
//                           temporary}}, recent:[last 20 failures: {t, status,
//                           code, method, path, query, accessKeyId,
//                           canonicalRequest, stringToSign}]}
//                          (requests/first/last: verified requests only;
//                          first/last/t in ms since the epoch)
//   DELETE /__auth/stats   reset them
//
// ---- credential mocks (--credentials-port PORT; 0 = a free port) ----
// Every credential handed out is a fresh temporary key (ASIA + 16 chars, a
// 40-char secret, a ~300-char base64 session token) expiring now + lifetime
// (--credential-lifetime, default 3600 s, rounded up to a whole second).
//   PUT /latest/api/token           IMDSv2 token; needs
//                                   X-aws-ec2-metadata-token-ttl-seconds 1..21600
//                                   (400 otherwise), 403 with X-Forwarded-For
//   GET /latest/meta-data/iam/security-credentials/[s3pipe-test-role]
//                                   with X-aws-ec2-metadata-token (401 without:
//                                   IMDSv1 refused); also placement/region
//   GET /container/ANYTHING         container credentials; with
//                                   --container-token the Authorization header
//                                   must equal it (401 otherwise)
//   GET|POST /                      STS AssumeRoleWithWebIdentity (form body or
//                                   query); with --web-identity-token the token
//                                   must equal it (400 InvalidIdentityToken);
//                                   DurationSeconds (900..43200) can only
//                                   shorten the lifetime
//   GET /process                    credential_process JSON (Version 1)
// Control (either port; secrets and tokens never appear in stats or logs):
//   POST   /__creds?lifetime=N&fail=N&status=C  lifetime of keys issued from
//          now on; make the next N credential requests (every endpoint
//          above except the IMDS token PUT, once the request is otherwise
//          valid) answer C (default 500)
//   GET    /__creds            {lifetime, fail:{count, status}}
//   GET    /__creds/stats      {issued:[{via:"imds"|"container"|"sts"|"process",
//                              accessKeyId, expiration, t}], requests:{imdsToken,
//                              imdsRoles, imds, imdsOther, container, sts,
//                              process, other}, failed (injected failures),
//                              rejected (refused as invalid: 400/401/403/404)}
//   DELETE /__creds/stats      reset them (issued keys stay valid)
//
// ---- latency (S3 port): every request answered MS late, as S3 is ----
//   --latency-ms MS            from the start (default 0)
//   GET    /__latency          {ms}
//   POST   /__latency?ms=MS    from now on (0: off)
// Each S3 request (not the control ones) waits MS on a timer before it is
// verified and served: no CPU is spent waiting and the waits overlap, as a
// distant server's round trips do (the bench's S3-like latency, 20 ms).
//   --latency-flag FILE        FILE exists, holding MS, while MS > 0, and
//                              is removed at 0: the bench's fast GET front
//                              (nginx, tests/s3server/fastget.sh) reads it
//                              on every GET it serves and waits MS on a
//                              timer of its own (fastget_gate.js)
//
// ---- fault control (S3 port; '_' cannot appear in a bucket name) ----
//   POST   /__fault?kind=K&count=N[&match=S][&after=B][&seconds=T][&status=C][&list=1][&prob=P]
//   DELETE /__fault            clear every armed fault
//   GET    /__fault            the armed faults (JSON)
//   GET    /__fault/stats      counters (JSON)
//   DELETE /__fault/stats      reset the counters
// A fault applies to the next N GET-object requests whose path contains S
// (raw or percent-decoded), or with list=1 to the next N ListObjects requests
// whose path or query contains S. With prob=P (0 < P <= 1, default 1) a
// matching request takes the fault with probability P; the count goes down
// only when it fires (a SlowDown storm:
// kind=status&status=503&count=1000000&prob=0.3). Kinds:
//   status  answer &status=CODE (default 500) with an S3 XML error body
//           (503: SlowDown, otherwise InternalError unless the code maps)
//   cut     send the headers and B body bytes, then close the connection
//   stall   send B body bytes, stop sending for T seconds (default 30),
//           then close the connection
//   etag    replace the ETag response header with a different value
//   delay   wait T seconds (default 30) before answering at all; the event
//           records when the wait ended (answeredAt, ms since the epoch)
// Faults armed by separate POSTs queue up; a request takes the first armed
// fault that matches it. stats.ranges has one entry per GET object:
// {path, range, port, t, inflight} where inflight counts the GET-object
// requests being served when it arrived, itself included. Faults, fault
// stats and auth stats live in memory: a restart starts them afresh.
//
// ---- synthetic buckets (--synthetic BUCKET=N[:LAYOUT[:CONTENT]], repeatable) ----
// BUCKET serves N generated keys (10 million and more: no file per object,
// no per-key memory; s3rver never sees these requests, other buckets go to
// s3rver unchanged). Requests still pass SigV4 verification and fault
// injection first, and count in /__fault/stats (lists, gets, heads).
// Path-style only (/BUCKET, /BUCKET/KEY; the key is the raw path
// percent-decoded, '+' kept as '+'; in query values '+' is a space, as in
// a form, so a prefix with a '+' must send %2B, as SDKs and s3pipe do).
//   Keys: all under data/, strictly increasing in UTF-8 byte order (S3's
//   order), computed from an index: groups of prefix + zero-padded number +
//   suffix (or a sparse name, below), sorted by prefix bytes; shares per
//   mille of N (largest remainder, every group at least one key once N
//   allows). LAYOUT (per bucket, else --synthetic-layout, else uneven)
//   picks the groups. uneven:
//     data/img-x/NNNN.JPEG 10, data/img/train/n01/NNNNNN.JPEG 700 (the skew),
//     data/img/train/n02/NNNNNN.JPEG 50, data/img/val/NNNNNN.JPEG 30,
//     data/meta-NNNNNN.json 40, data/a/b/c/d/e/f/g/NNNNN.bin 10,
//     "data/with space+plus/NNNNN copy+1.bin" 20, data/ñ/NNNNN.txt 30,
//     data/ÿ/NNNNN.bin 30, data/日本/NNNNN.txt 30, data/ｶﾀｶﾅ/NNNNN.txt 20
//     (UTF-8 before the emoji, UTF-16 after it), data/😀/NNNNN.png 30;
//   skewed (real datasets' shards: one run of sequential names holds most
//   keys, the rest is deep, sparse or unicode):
//     data/train/shard-NNNNNNN.tar 700 (the run), data/val/shard-NNNNNN.tar 30,
//     data/logs/YYYY/MM/DD/HH/MMSS-XXXXXXXX.log 60 (sparse times from
//     2023-01-01, hex suffix), data/features/XX/XX/XXXXXXXXXXXX.npy 100
//     (sparse hex, as hashed names), data/users/LLLLLLLLL/profile.json 40
//     (sparse lowercase letters), data/ckpt/epoch-EEE/step-SSSSSSSSSSSS/
//     rank-R.pt 20 (sparse steps, 8 ranks a step), data/a/b/.../k/NNNNN.bin
//     10 (deep), data/manifest-NNNNNN.json 5, "data/with space+plus/NNNNN
//     copy+1.bin" 5, data/ñ/NNNNN.txt 10,
//     data/日本語/NNNNN.txt 10, data/ｶﾀｶﾅ/NNNNN.txt 5, data/😀/NNNNN.png 5.
//     A sparse name is the index's own slot of the name space (the space
//     divided by the group's keys) plus a hash within the slot: increasing
//     and computed, like the numbers.
//   Both: plus, for N >= 100 and counted in N, the literal keys data/ext/k,
//   data/ext/k0, data/ext/k00, data/last/a, data/last/b, data/dir/ (a
//   folder marker) and data/dir/inside. GET /__synthetic lists the groups.
//   Sizes: a folder marker 0; otherwise from a hash of the key: mostly
//   200..4000 bytes, ~1 key in 97 empty, ~1 in 1009 64 KiB..300 KiB; with
//   --synthetic-size MIN:MAX uniform in [MIN, MAX] and no exceptions.
//   ETag: '"' + 32 hex digits of a hash of KEY + ':' + SIZE + '"' (not the
//   content's md5; the listing's and the GET's ETags agree).
//   Bytes: the 32-char lowercase md5 hex of the key, repeated, cut at SIZE:
//     Python: (hashlib.md5(key.encode()).hexdigest() * (size // 32 + 1))[:size]
//   CONTENT (default text) gzip: each object one gzip member of stored
//     deflate blocks around the text bytes above (cut to fit its SIZE:
//     SIZE - 18 - 5 x blocks of at most 65,535), so gunzip gives them back;
//     csv: rows "1,2,3,4\n", the last row's last field padded with zeros
//     to end at SIZE (for --convert csv).  The ETag and sizes are the same.
//   Last-Modified: 2024-01-02T03:04:05Z for every object.
// Requests answered (anything else: 405 MethodNotAllowed for a method other
// than GET/HEAD, 501 NotImplemented for another sub-resource):
//   GET  /BUCKET?list-type=2  ListObjectsV2: prefix, start-after,
//        continuation-token (opaque; wins over start-after; a bad one is 400
//        InvalidArgument), max-keys (default 1000, at most 1000 returned, 0
//        allowed; --synthetic-page-keys N returns at most N however many
//        are asked for, as S3 may), encoding-type=url (Key, Prefix, StartAfter as S3 encodes
//        them: A-Za-z0-9-_.~ and / kept, space as '+', other bytes %XX),
//        fetch-owner ignored (no Owner). A non-empty delimiter answers 501
//        NotImplemented. Without list-type: ListObjects V1 with marker.
//        Every LIST page waits --synthetic-delay-ms first (default 0; a
//        timer, so concurrent pages overlap).
//   GET  /BUCKET/KEY  200, or 206 for Range bytes=A-B, bytes=A-, bytes=-N
//        (416 InvalidRange when unsatisfiable, an unparsable Range is
//        ignored); If-Match (412 PreconditionFailed), If-None-Match (304);
//        response-* overrides; 404 NoSuchKey for a key not in the bucket
//   HEAD /BUCKET/KEY  the same headers, no body (404 without a body)
//   HEAD /BUCKET, GET /BUCKET?location
// Control (S3 port, not authenticated, not counted in /__fault/stats):
//   GET    /__synthetic           {buckets:{NAME:{keys, layout, groups:[{prefix,
//                                 keys, first}]}}, delay, size, stats:{lists,
//                                 listKeys, gets, heads}} (synthetic requests)
//   POST   /__synthetic?delay=MS  the LIST delay from now on
//   GET    /__synthetic/stats     the stats alone
//   DELETE /__synthetic/stats     reset them
//   GET    /__synthetic/keys?bucket=B[&prefix=P][&start-after=K][&limit=N]
//          every key under P in listing order, streamed as text, one line per
//          key: encodeURIComponent(KEY) TAB SIZE TAB ETAG (the tests' ground
//          truth; Python: urllib.parse.unquote)
'use strict';

const path = require('path');
const crypto = require('crypto');
const fs = require('fs');
const http = require('http');
const { spawn } = require('child_process');

function hasDes() {
  try {
    crypto.createCipheriv('des', Buffer.alloc(8), Buffer.alloc(8));
    return true;
  } catch (err) {
    return false;
  }
}

function reexecWithLegacyProvider() {
  const args = [
    '--openssl-legacy-provider',
    ...process.execArgv,
    __filename,
    ...process.argv.slice(2),
  ];
  const env = Object.assign({}, process.env, { S3SERVER_REEXEC: '1' });
  const child = spawn(process.execPath, args, {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env,
  });
  for (const sig of ['SIGTERM', 'SIGINT', 'SIGHUP']) {
    process.on(sig, () => {
      try {
        child.kill(sig);
      } catch (err) {
        // already gone
      }
    });
  }
  child.on('error', err => {
    process.stderr.write(`server.js: cannot re-execute node: ${err.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    if (signal) process.exit(signal === 'SIGTERM' || signal === 'SIGINT' ? 0 : 1);
    process.exit(code === null ? 1 : code);
  });
}

function usage(msg) {
  if (msg) process.stderr.write(`server.js: ${msg}\n`);
  process.stderr.write(
    'usage: node server.js --dir DIR [--port PORT] [--address ADDR] [--verbose]\n' +
      '         [--key AKID:SECRET]... [--no-verify] [--tls-cert FILE --tls-key FILE]\n' +
      '         [--credentials-port PORT] [--credential-lifetime SECONDS]\n' +
      '         [--container-token VALUE] [--web-identity-token VALUE] [--key-store FILE]\n' +
      '         [--synthetic BUCKET=N[:LAYOUT[:CONTENT]]]... [--synthetic-layout uneven|skewed]\n' +
      '         [--synthetic-delay-ms MS] [--synthetic-size MIN:MAX] [--synthetic-page-keys N]\n' +
      '         [--latency-ms MS] [--latency-flag FILE]\n',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const opts = {
    dir: null,
    port: 0,
    address: '127.0.0.1',
    verbose: false,
    keys: [],
    verify: true,
    tlsCert: null,
    tlsKey: null,
    credentialsPort: null,
    credentialLifetime: 3600,
    containerToken: null,
    webIdentityToken: null,
    keyStore: null,
    synthetic: [], // [[bucket, N, layout or null]]
    syntheticLayout: 'uneven', // for buckets named without one
    syntheticDelayMs: 0,
    latencyMs: 0,
    latencyFlag: null, // a file that exists while latencyMs > 0
    syntheticSize: null, // [MIN, MAX] or null for the uneven default
    syntheticPageKeys: 1000, // keys a LIST page holds at most
  };
  const port = v => {
    if (!/^\d+$/.test(v) || Number(v) > 65535) usage(`bad port '${v}'`);
    return Number(v);
  };
  for (let i = 0; i < argv.length; i++) {
    let arg = argv[i];
    let value = null;
    const eq = arg.indexOf('=');
    if (arg.startsWith('--') && eq > 0) {
      value = arg.slice(eq + 1);
      arg = arg.slice(0, eq);
    }
    const need = () => {
      if (value !== null) return value;
      if (i + 1 >= argv.length) usage(`${arg} needs a value`);
      return argv[++i];
    };
    switch (arg) {
      case '--dir':
        opts.dir = need();
        break;
      case '--port':
        opts.port = port(need());
        break;
      case '--address':
        opts.address = need();
        break;
      case '--verbose':
      case '-v':
        opts.verbose = true;
        break;
      case '--key': {
        const v = need();
        const c = v.indexOf(':');
        if (c <= 0 || c === v.length - 1) usage("--key takes AKID:SECRET");
        opts.keys.push([v.slice(0, c), v.slice(c + 1)]);
        break;
      }
      case '--no-verify':
        opts.verify = false;
        break;
      case '--tls-cert':
        opts.tlsCert = need();
        break;
      case '--tls-key':
        opts.tlsKey = need();
        break;
      case '--credentials-port':
        opts.credentialsPort = port(need());
        break;
      case '--credential-lifetime': {
        const v = need();
        if (!/^\d+$/.test(v) || Number(v) < 1) usage(`bad lifetime '${v}'`);
        opts.credentialLifetime = Number(v);
        break;
      }
      case '--container-token':
        opts.containerToken = need();
        break;
      case '--web-identity-token':
        opts.webIdentityToken = need();
        break;
      case '--key-store':
        opts.keyStore = need();
        break;
      case '--synthetic': {
        // BUCKET=N[:LAYOUT]: the value itself holds an '=', so split on the last one
        const v = need();
        const e = v.lastIndexOf('=');
        const name = e > 0 ? v.slice(0, e) : '';
        const [n, layout, content, extra] = (e > 0 ? v.slice(e + 1) : '').split(':');
        if (
          !/^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$/.test(name) ||
          !/^\d+$/.test(n) ||
          Number(n) > 1e12 ||
          extra !== undefined ||
          (layout && !SYNTH_LAYOUTS[layout]) ||
          (content !== undefined && !SYNTH_CONTENTS.includes(content))
        )
          usage(
            `--synthetic takes BUCKET=N[:LAYOUT[:CONTENT]] (a bucket name, N keys, ` +
              `${Object.keys(SYNTH_LAYOUTS).join(' or ')} (empty: the default), ` +
              `${SYNTH_CONTENTS.join(', ')}), not '${v}'`,
          );
        if (opts.synthetic.some(([b]) => b === name)) usage(`synthetic bucket '${name}' given twice`);
        opts.synthetic.push([name, Number(n), layout || null, content || 'text']);
        break;
      }
      case '--synthetic-layout': {
        const v = need();
        if (!SYNTH_LAYOUTS[v]) usage(`--synthetic-layout takes ${Object.keys(SYNTH_LAYOUTS).join(' or ')}, not '${v}'`);
        opts.syntheticLayout = v;
        break;
      }
      case '--latency-flag':
        opts.latencyFlag = need();
        break;
      case '--latency-ms': {
        const v = need();
        if (!/^\d+(\.\d+)?$/.test(v)) usage(`bad --latency-ms '${v}'`);
        opts.latencyMs = Number(v);
        break;
      }
      case '--synthetic-delay-ms': {
        const v = need();
        if (!/^\d+(\.\d+)?$/.test(v)) usage(`bad --synthetic-delay-ms '${v}'`);
        opts.syntheticDelayMs = Number(v);
        break;
      }
      case '--synthetic-size': {
        const v = need();
        const m = /^(\d+):(\d+)$/.exec(v);
        if (!m || Number(m[1]) > Number(m[2]) || Number(m[2]) > Number.MAX_SAFE_INTEGER)
          usage(`--synthetic-size takes MIN:MAX bytes (MIN <= MAX), not '${v}'`);
        opts.syntheticSize = [Number(m[1]), Number(m[2])];
        break;
      }
      case '--synthetic-page-keys': {
        const v = need();
        if (!/^\d+$/.test(v) || Number(v) < 1 || Number(v) > 1000)
          usage(`--synthetic-page-keys takes 1 to 1000, not '${v}'`);
        opts.syntheticPageKeys = Number(v);
        break;
      }
      case '--help':
      case '-h':
        usage(null);
        break;
      default:
        usage(`unknown argument '${arg}'`);
    }
  }
  if (!opts.dir) usage('--dir is required');
  if (!opts.tlsCert !== !opts.tlsKey) usage('--tls-cert and --tls-key go together');
  if (opts.keys.length === 0) opts.keys.push(['S3RVER', 'S3RVER']);
  return opts;
}

// ---- shared helpers ----

const XML_SPECIAL = /[<>&'"]/;
// A response body written piece by piece into one growing Buffer (UTF-8):
// no string of the whole body is ever made.
class PageWriter {
  constructor(first, items) {
    this.buf = Buffer.allocUnsafe(Math.max(4096, 3 * first.length + 320 * items));
    this.off = 0;
    this.add(first);
  }

  add(str) {
    // a UTF-16 unit is at most 3 bytes of UTF-8
    if (this.off + 3 * str.length > this.buf.length) {
      const bigger = Buffer.allocUnsafe(2 * this.buf.length + 3 * str.length);
      this.buf.copy(bigger, 0, 0, this.off);
      this.buf = bigger;
    }
    this.off += this.buf.utf8Write(str, this.off);
  }

  bytes() {
    return this.buf.subarray(0, this.off);
  }
}
const xmlEsc = s =>
  String(s).replace(
    /[<>&'"]/g,
    c => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c],
  );

function safeDecode(s) {
  try {
    return decodeURIComponent(s);
  } catch (err) {
    return s;
  }
}

const requestId = () => crypto.randomBytes(8).toString('hex').toUpperCase();

// An S3 XML error document: <Error><Code/><Message/>extra...<RequestId/></Error>
function s3ErrorXml(code, message, resource, extra) {
  let more = '';
  for (const [k, v] of Object.entries(extra || {})) {
    if (v !== undefined && v !== null) more += `<${k}>${xmlEsc(v)}</${k}>`;
  }
  return (
    '<?xml version="1.0" encoding="UTF-8"?>\n' +
    `<Error><Code>${code}</Code><Message>${xmlEsc(message)}</Message>` +
    (resource !== null ? `<Resource>${xmlEsc(resource)}</Resource>` : '') +
    more +
    `<RequestId>${requestId()}</RequestId>` +
    `<HostId>${crypto.randomBytes(24).toString('base64')}</HostId></Error>`
  );
}

// ISO 8601 UTC without milliseconds: 2026-11-25T12:00:00Z
const isoSeconds = ms => new Date(ms).toISOString().replace(/\.\d{3}Z$/, 'Z');

function randomString(n, alphabet) {
  let out = '';
  for (let i = 0; i < n; i++) out += alphabet[crypto.randomInt(alphabet.length)];
  return out;
}
const UPPER_DIGITS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
const SECRET_CHARS = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

// ---- keys (permanent and temporary) ----

function createKeyring(opts, log) {
  const keys = new Map(); // AKID -> {secret, token, expires (ms) | null, via}
  const imdsTokens = new Map(); // token -> expiry (ms)
  const state = { lifetime: opts.credentialLifetime };
  for (const [id, secret] of opts.keys)
    keys.set(id, { secret, token: null, expires: null, via: 'permanent' });

  if (opts.keyStore && fs.existsSync(opts.keyStore)) {
    try {
      const saved = JSON.parse(fs.readFileSync(opts.keyStore, 'utf8'));
      for (const k of saved.keys || [])
        if (!keys.has(k.id))
          keys.set(k.id, { secret: k.secret, token: k.token, expires: k.expires, via: k.via });
      for (const [t, exp] of Object.entries(saved.imdsTokens || {})) imdsTokens.set(t, exp);
      if (Number.isInteger(saved.lifetime) && saved.lifetime > 0) state.lifetime = saved.lifetime;
    } catch (err) {
      process.stderr.write(`server.js: ignoring unreadable key store ${opts.keyStore}: ${err.message}\n`);
    }
  }

  function save() {
    if (!opts.keyStore) return;
    const now = Date.now();
    const out = {
      lifetime: state.lifetime,
      keys: [...keys.entries()]
        .filter(([, k]) => k.via !== 'permanent')
        .map(([id, k]) => ({ id, secret: k.secret, token: k.token, expires: k.expires, via: k.via })),
      imdsTokens: Object.fromEntries([...imdsTokens.entries()].filter(([, e]) => e > now)),
    };
    const tmp = `${opts.keyStore}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(out), { mode: 0o600 });
    fs.renameSync(tmp, opts.keyStore);
  }

  // A fresh temporary key living min(lifetime, capSeconds) seconds.
  function issue(via, capSeconds) {
    const secs = Math.min(state.lifetime, capSeconds || Infinity);
    const now = Date.now();
    const key = {
      id: 'ASIA' + randomString(16, UPPER_DIGITS),
      secret: randomString(40, SECRET_CHARS),
      token: crypto.randomBytes(228).toString('base64'),
      expires: Math.ceil((now + secs * 1000) / 1000) * 1000, // whole seconds, never shorter
      via,
    };
    keys.set(key.id, { secret: key.secret, token: key.token, expires: key.expires, via });
    save();
    log(`issued ${key.id} via ${via}, expires ${isoSeconds(key.expires)}`);
    return key;
  }

  return {
    get: id => keys.get(id),
    issue,
    state,
    save,
    imdsTokens,
  };
}

// ---- SigV4 verification ----

const HEX = [];
for (let i = 0; i < 256; i++) HEX.push('%' + i.toString(16).toUpperCase().padStart(2, '0'));
const EMPTY_SHA256 = 'e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855';
const MAX_SKEW_MS = 15 * 60 * 1000;
const PRESIGN_PARAMS = new Set([
  'X-Amz-Algorithm',
  'X-Amz-Credential',
  'X-Amz-Date',
  'X-Amz-Expires',
  'X-Amz-SignedHeaders',
  'X-Amz-Signature',
  'X-Amz-Security-Token',
]);

// Raw URL text to bytes: %XX decoded, anything else kept as is ('+' stays '+').
function percentDecode(s) {
  const raw = Buffer.from(s, /[^\x00-\xff]/.test(s) ? 'utf8' : 'latin1');
  const out = Buffer.alloc(raw.length);
  let n = 0;
  const hexval = c =>
    c >= 0x30 && c <= 0x39 ? c - 0x30 : c >= 0x41 && c <= 0x46 ? c - 55 : c >= 0x61 && c <= 0x66 ? c - 87 : -1;
  for (let i = 0; i < raw.length; i++) {
    if (raw[i] === 0x25 && i + 2 < raw.length) {
      const hi = hexval(raw[i + 1]);
      const lo = hexval(raw[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out[n++] = hi * 16 + lo;
        i += 2;
        continue;
      }
    }
    out[n++] = raw[i];
  }
  return out.subarray(0, n);
}

// SigV4 URI encoding of bytes: A-Za-z0-9-._~ kept, '/' kept if keepSlash,
// everything else %XX (uppercase).
function uriEncode(bytes, keepSlash) {
  let out = '';
  for (const b of bytes) {
    if (
      (b >= 0x41 && b <= 0x5a) ||
      (b >= 0x61 && b <= 0x7a) ||
      (b >= 0x30 && b <= 0x39) ||
      b === 0x2d ||
      b === 0x2e ||
      b === 0x5f ||
      b === 0x7e ||
      (keepSlash && b === 0x2f)
    )
      out += String.fromCharCode(b);
    else out += HEX[b];
  }
  return out;
}

function canonicalUri(rawPath) {
  if (rawPath === '') return '/';
  return rawPath
    .split('/')
    .map(seg => uriEncode(percentDecode(seg), false))
    .join('/');
}

// [{name (decoded), rawPiece, k (encoded), v (encoded)}] of a raw query
function parseRawQuery(rawQuery) {
  const out = [];
  for (const piece of rawQuery.split('&')) {
    if (piece === '') continue;
    const i = piece.indexOf('=');
    const k = i < 0 ? piece : piece.slice(0, i);
    const v = i < 0 ? '' : piece.slice(i + 1);
    const kb = percentDecode(k);
    out.push({
      name: kb.toString('utf8'),
      value: percentDecode(v).toString('utf8'),
      rawPiece: piece,
      k: uriEncode(kb, false),
      v: uriEncode(percentDecode(v), false),
    });
  }
  return out;
}

function canonicalQuery(params) {
  return params
    .map(p => [p.k, p.v])
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] < b[1] ? -1 : a[1] > b[1] ? 1 : 0))
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
}

// lowercase name -> [raw values in order]
function headerMap(rawHeaders) {
  const m = new Map();
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = rawHeaders[i].toLowerCase();
    if (!m.has(name)) m.set(name, []);
    m.get(name).push(rawHeaders[i + 1]);
  }
  return m;
}

const canonicalValue = values => values.map(v => v.trim().replace(/\s+/g, ' ')).join(',');

const sha256hex = s => crypto.createHash('sha256').update(s, 'utf8').digest('hex');

function parseAmzDate(s) {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(s || '');
  if (!m) return NaN;
  const t = Date.UTC(+m[1], +m[2] - 1, +m[3], +m[4], +m[5], +m[6]);
  return isoSeconds(t).replace(/[-:]/g, '') === s ? t : NaN; // rejects 20261332T...
}

class AuthError {
  constructor(status, code, message, extra) {
    this.status = status;
    this.code = code;
    this.message = message;
    this.extra = extra || {};
  }
}

function createAuth(opts, keyring) {
  const signingKeys = new Map(); // "secret\ndate\nregion\nservice" -> Buffer
  let stats = newAuthStats();
  let logged = 0;
  const MAX_RECENT = 20;

  function newAuthStats() {
    return {
      verify: opts.verify,
      verified: 0,
      unverified: 0, // --no-verify only
      anonymous: {},
      anonymousTotal: 0,
      failed: 0,
      failures: {},
      keys: {},
      recent: [],
    };
  }

  function signingKey(secret, date, region, service) {
    const id = `${secret}\n${date}\n${region}\n${service}`;
    let k = signingKeys.get(id);
    if (!k) {
      const h = (key, data) => crypto.createHmac('sha256', key).update(data, 'utf8').digest();
      k = h(h(h(h('AWS4' + secret, date), region), service), 'aws4_request');
      if (signingKeys.size >= 1024) signingKeys.clear();
      signingKeys.set(id, k);
    }
    return k;
  }

  function keyStats(id) {
    if (!stats.keys[id]) {
      const k = keyring.get(id);
      stats.keys[id] = {
        requests: 0,
        failed: 0,
        first: null,
        last: null,
        temporary: !!(k && k.token),
      };
    }
    return stats.keys[id];
  }

  // What the request claims, for the signature check. Throws AuthError.
  function parseHeaderAuth(value) {
    const m = /^AWS4-HMAC-SHA256[ \t]+([\s\S]*)$/.exec(value);
    if (!m) {
      if (/^AWS[ \t]/.test(value))
        throw new AuthError(
          400,
          'InvalidRequest',
          'The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.',
        );
      throw new AuthError(
        400,
        'AuthorizationHeaderMalformed',
        'The authorization header is malformed; unsupported authorization type.',
      );
    }
    const comp = {};
    for (const part of m[1].split(',')) {
      const p = part.trim();
      if (p === '') continue;
      const i = p.indexOf('=');
      const name = i > 0 ? p.slice(0, i).trim() : '';
      if (!['Credential', 'SignedHeaders', 'Signature'].includes(name) || comp[name] !== undefined)
        throw new AuthError(
          400,
          'AuthorizationHeaderMalformed',
          `The authorization header is malformed; '${p.slice(0, 40)}' is not a valid component.`,
        );
      comp[name] = p.slice(i + 1).trim();
    }
    for (const name of ['Credential', 'SignedHeaders', 'Signature'])
      if (!comp[name])
        throw new AuthError(
          400,
          'AuthorizationHeaderMalformed',
          `The authorization header is malformed; missing ${name}.`,
        );
    return comp;
  }

  function parseCredential(cred, malformed) {
    const parts = cred.split('/');
    if (parts.length !== 5 || parts.some(p => p === ''))
      throw new AuthError(
        400,
        malformed,
        'The authorization header is malformed; the Credential is mal-formed; ' +
          'expecting "<YOUR-AKID>/YYYYMMDD/REGION/SERVICE/aws4_request".',
      );
    const [id, date, region, service, term] = parts;
    return { id, date, region, service, term };
  }

  // Verify the request in ctx; returns {id, presigned} or throws AuthError.
  function verify(ctx, mech) {
    const req = ctx.req;
    const rawUrl = req.url;
    const q = rawUrl.indexOf('?');
    const rawPath = q < 0 ? rawUrl : rawUrl.slice(0, q);
    const rawQuery = q < 0 ? '' : rawUrl.slice(q + 1);
    const params = parseRawQuery(rawQuery);
    const hdrs = headerMap(req.rawHeaders);
    const first = name => (hdrs.has(name) ? hdrs.get(name)[0] : undefined);
    const malformed = mech === 'query' ? 'AuthorizationQueryParametersError' : 'AuthorizationHeaderMalformed';

    let comp;
    let amzDate;
    let token;
    let expiresSecs = null;
    if (mech === 'header') {
      comp = parseHeaderAuth(first('authorization'));
      amzDate = first('x-amz-date');
      token = first('x-amz-security-token');
    } else {
      const qp = {};
      for (const p of params) if (PRESIGN_PARAMS.has(p.name)) qp[p.name] = p.value;
      if (qp['X-Amz-Algorithm'] !== 'AWS4-HMAC-SHA256')
        throw new AuthError(400, malformed, 'X-Amz-Algorithm only supports "AWS4-HMAC-SHA256"');
      for (const n of ['X-Amz-Credential', 'X-Amz-Date', 'X-Amz-Expires', 'X-Amz-SignedHeaders', 'X-Amz-Signature'])
        if (!qp[n])
          throw new AuthError(
            400,
            malformed,
            'Query-string authentication version 4 requires the X-Amz-Algorithm, X-Amz-Credential, ' +
              'X-Amz-Signature, X-Amz-Date, X-Amz-SignedHeaders, and X-Amz-Expires parameters.',
          );
      comp = {
        Credential: qp['X-Amz-Credential'],
        SignedHeaders: qp['X-Amz-SignedHeaders'],
        Signature: qp['X-Amz-Signature'],
      };
      amzDate = qp['X-Amz-Date'];
      token = qp['X-Amz-Security-Token'];
      if (!/^\d+$/.test(qp['X-Amz-Expires']) || Number(qp['X-Amz-Expires']) > 604800)
        throw new AuthError(400, malformed, 'X-Amz-Expires must be a number of seconds up to 604800');
      expiresSecs = Number(qp['X-Amz-Expires']);
    }
    const cred = parseCredential(comp.Credential, malformed);
    const result = { id: cred.id };
    const key = keyring.get(cred.id);
    if (!key)
      throw Object.assign(
        new AuthError(403, 'InvalidAccessKeyId', 'The AWS Access Key Id you provided does not exist in our records.', {
          AWSAccessKeyId: cred.id,
        }),
        { id: cred.id },
      );
    const fail = e => Object.assign(e, { id: cred.id });

    const t = parseAmzDate(amzDate);
    if (Number.isNaN(t))
      throw fail(
        mech === 'header'
          ? new AuthError(403, 'AccessDenied', 'AWS authentication requires a valid Date or x-amz-date header')
          : new AuthError(400, malformed, 'X-Amz-Date must be in the ISO8601 Long Format "yyyyMMdd\'T\'HHmmss\'Z\'"'),
      );
    if (cred.date !== amzDate.slice(0, 8))
      throw fail(
        new AuthError(
          400,
          malformed,
          `The authorization header is malformed; Invalid credential date "${cred.date}". ` +
            'This date is not the same as X-Amz-Date: "' + amzDate.slice(0, 8) + '".',
        ),
      );
    if (cred.service !== 's3')
      throw fail(
        new AuthError(
          400,
          malformed,
          `The authorization header is malformed; incorrect service "${cred.service}". This endpoint belongs to "s3".`,
        ),
      );
    if (cred.term !== 'aws4_request')
      throw fail(
        new AuthError(
          400,
          malformed,
          `The authorization header is malformed; incorrect terminal "${cred.term}". This endpoint uses "aws4_request".`,
        ),
      );
    const now = Date.now();
    if (mech === 'header' && Math.abs(now - t) > MAX_SKEW_MS)
      throw fail(
        new AuthError(403, 'RequestTimeTooSkewed', 'The difference between the request time and the current time is too large.', {
          RequestTime: amzDate,
          ServerTime: isoSeconds(now),
          MaxAllowedSkewMilliseconds: MAX_SKEW_MS,
        }),
      );
    if (mech === 'query') {
      if (now > t + expiresSecs * 1000)
        throw fail(
          new AuthError(403, 'AccessDenied', 'Request has expired', {
            'X-Amz-Expires': expiresSecs,
            Expires: isoSeconds(t + expiresSecs * 1000),
            ServerTime: isoSeconds(now),
          }),
        );
      if (t - now > MAX_SKEW_MS) throw fail(new AuthError(403, 'AccessDenied', 'Request is not valid yet'));
    }

    const signedHeaders = comp.SignedHeaders.split(';');
    if (signedHeaders.some(h => h === '' || h !== h.toLowerCase()))
      throw fail(new AuthError(400, malformed, 'The authorization header is malformed; SignedHeaders must be lowercase names separated by ";".'));
    const signed = new Set(signedHeaders);
    const mustSign = mech === 'header' ? ['host', 'x-amz-date'] : ['host'];
    const missing = mustSign.filter(h => !signed.has(h));
    if (missing.length)
      throw fail(
        new AuthError(403, 'AccessDenied', 'There were headers present in the request which were not signed', {
          HeadersNotSigned: missing.join(', '),
        }),
      );

    let payload = first('x-amz-content-sha256');
    if (mech === 'header' && payload === undefined)
      throw fail(new AuthError(400, 'InvalidRequest', 'Missing required header for this request: x-amz-content-sha256'));
    if (payload === undefined) payload = 'UNSIGNED-PAYLOAD';
    if (!/^([0-9a-f]{64}|UNSIGNED-PAYLOAD|STREAMING-[A-Z0-9-]+)$/.test(payload))
      throw fail(
        new AuthError(400, 'InvalidArgument', 'x-amz-content-sha256 must be UNSIGNED-PAYLOAD, STREAMING-AWS4-HMAC-SHA256-PAYLOAD, or a valid sha256 value.', {
          ArgumentName: 'x-amz-content-sha256',
          ArgumentValue: payload,
        }),
      );
    const cl = first('content-length');
    const hasBody = (cl !== undefined && cl.trim() !== '0') || hdrs.has('transfer-encoding');
    if (!hasBody && payload !== EMPTY_SHA256 && payload !== 'UNSIGNED-PAYLOAD')
      throw fail(
        new AuthError(400, 'XAmzContentSHA256Mismatch', "The provided 'x-amz-content-sha256' header does not match what was computed.", {
          ClientComputedContentSHA256: payload,
          S3ComputedContentSHA256: EMPTY_SHA256,
        }),
      );

    if (key.token) {
      const tokenSigned = mech === 'query' || signed.has('x-amz-security-token');
      if (token === undefined || !tokenSigned || !timingEqual(token, key.token))
        throw fail(new AuthError(403, 'InvalidToken', 'The provided token is malformed or otherwise invalid.'));
      if (now >= key.expires)
        throw fail(new AuthError(400, 'ExpiredToken', 'The provided token has expired.'));
    } else if (token !== undefined) {
      throw fail(new AuthError(403, 'InvalidToken', 'The provided token is malformed or otherwise invalid.'));
    }

    if (mech === 'header') {
      const unsigned = [...hdrs.keys()].filter(h => h.startsWith('x-amz-') && !signed.has(h));
      if (unsigned.length)
        throw fail(
          new AuthError(403, 'AccessDenied', 'There were headers present in the request which were not signed', {
            HeadersNotSigned: unsigned.join(', '),
          }),
        );
    }

    const canonParams = mech === 'query' ? params.filter(p => p.name !== 'X-Amz-Signature') : params;
    const canonical = [
      req.method,
      canonicalUri(rawPath),
      canonicalQuery(canonParams),
      signedHeaders.map(h => `${h}:${canonicalValue(hdrs.get(h) || [])}\n`).join(''),
      comp.SignedHeaders,
      payload,
    ].join('\n');
    const scope = `${cred.date}/${cred.region}/${cred.service}/${cred.term}`;
    const stringToSign = ['AWS4-HMAC-SHA256', amzDate, scope, sha256hex(canonical)].join('\n');
    const expected = crypto
      .createHmac('sha256', signingKey(key.secret, cred.date, cred.region, cred.service))
      .update(stringToSign, 'utf8')
      .digest();
    const given = /^[0-9a-f]{64}$/.test(comp.Signature) ? Buffer.from(comp.Signature, 'hex') : null;
    if (!given || !crypto.timingSafeEqual(given, expected)) {
      const shown = key.token
        ? canonical
            .split(key.token)
            .join('<redacted>')
            .split(uriEncode(Buffer.from(key.token), false))
            .join('<redacted>')
        : canonical;
      throw fail(
        new AuthError(403, 'SignatureDoesNotMatch', 'The request signature we calculated does not match the signature you provided. Check your key and signing method.', {
          AWSAccessKeyId: cred.id,
          StringToSign: stringToSign,
          SignatureProvided: comp.Signature,
          CanonicalRequest: shown,
        }),
      );
    }
    result.presigned = mech === 'query';
    return result;
  }

  function timingEqual(a, b) {
    const x = Buffer.from(String(a));
    const y = Buffer.from(String(b));
    return x.length === y.length && crypto.timingSafeEqual(x, y);
  }

  // Make an accepted request look anonymous to s3rver.
  function strip(ctx) {
    const req = ctx.req;
    delete req.headers.authorization;
    delete req.headers['x-amz-security-token'];
    const raw = [];
    for (let i = 0; i + 1 < req.rawHeaders.length; i += 2) {
      const n = req.rawHeaders[i].toLowerCase();
      if (n !== 'authorization' && n !== 'x-amz-security-token') raw.push(req.rawHeaders[i], req.rawHeaders[i + 1]);
    }
    req.rawHeaders.length = 0;
    req.rawHeaders.push(...raw);
    const q = req.url.indexOf('?');
    if (q >= 0) {
      const kept = parseRawQuery(req.url.slice(q + 1)).filter(
        p => !PRESIGN_PARAMS.has(p.name) && p.name !== 'AWSAccessKeyId' && p.name !== 'Signature',
      );
      if (kept.length !== parseRawQuery(req.url.slice(q + 1)).length)
        ctx.url = req.url.slice(0, q) + (kept.length ? '?' + kept.map(p => p.rawPiece).join('&') : '');
    }
    ctx.state.account = DUMMY_ACCOUNT;
  }

  function mechanism(ctx) {
    const hasHeader = ctx.req.headers.authorization !== undefined;
    const q = ctx.query;
    const v4q = 'X-Amz-Signature' in q || 'X-Amz-Algorithm' in q || 'X-Amz-Credential' in q;
    const v2q = 'Signature' in q || 'AWSAccessKeyId' in q;
    if (!hasHeader && !v4q && !v2q) return 'anonymous';
    if ((hasHeader ? 1 : 0) + (v4q ? 1 : 0) + (v2q ? 1 : 0) > 1) return 'conflict';
    return hasHeader ? 'header' : v4q ? 'query' : 'v2query';
  }

  function reject(ctx, err, mech) {
    stats.failed++;
    stats.failures[err.code] = (stats.failures[err.code] || 0) + 1;
    if (err.id) keyStats(err.id).failed++;
    const entry = {
      t: Date.now(),
      status: err.status,
      code: err.code,
      method: ctx.method,
      path: ctx.path,
      query: ctx.querystring.replace(/(X-Amz-Security-Token|X-Amz-Signature)=[^&]*/g, '$1=<redacted>'),
      accessKeyId: err.id || null,
      mechanism: mech,
    };
    if (err.extra.CanonicalRequest) {
      entry.canonicalRequest = err.extra.CanonicalRequest;
      entry.stringToSign = err.extra.StringToSign;
    }
    stats.recent.push(entry);
    if (stats.recent.length > MAX_RECENT) stats.recent.shift();
    if (logged < 200 || opts.verbose) {
      logged++;
      process.stderr.write(
        `auth: ${err.status} ${err.code} ${ctx.method} ${entry.path}${entry.query ? '?' + entry.query : ''}` +
          ` key=${err.id || '-'}: ${err.message}\n`,
      );
      if (opts.verbose && entry.canonicalRequest)
        process.stderr.write(`auth: canonical request was:\n${entry.canonicalRequest}\nauth: string to sign:\n${entry.stringToSign}\n`);
    }
    ctx.status = err.status;
    ctx.type = 'application/xml';
    ctx.set('x-amz-request-id', requestId());
    // HEAD: no body (Koa sends none for HEAD anyway)
    if (ctx.method !== 'HEAD') ctx.body = s3ErrorXml(err.code, err.message, null, err.extra);
  }

  async function middleware(ctx, next) {
    const mech = mechanism(ctx);
    if (mech === 'anonymous') {
      stats.anonymous[ctx.method] = (stats.anonymous[ctx.method] || 0) + 1;
      stats.anonymousTotal++;
      return next();
    }
    if (!opts.verify) {
      stats.unverified++;
      strip(ctx);
      return next();
    }
    let ok;
    try {
      if (mech === 'conflict')
        throw new AuthError(
          400,
          'InvalidArgument',
          'Only one auth mechanism allowed; only the X-Amz-Algorithm query parameter, ' +
            'Signature query string parameter or the Authorization header should be specified',
        );
      if (mech === 'v2query')
        throw new AuthError(
          400,
          'InvalidRequest',
          'The authorization mechanism you have provided is not supported. Please use AWS4-HMAC-SHA256.',
        );
      ok = verify(ctx, mech);
    } catch (err) {
      if (!(err instanceof AuthError)) throw err;
      reject(ctx, err, mech);
      return undefined;
    }
    stats.verified++;
    const ks = keyStats(ok.id);
    const now = Date.now();
    ks.requests++;
    if (ks.first === null) ks.first = now;
    ks.last = now;
    strip(ctx);
    return next();
  }

  function control(ctx) {
    const sub = ctx.path.replace(/^\/__auth/, '');
    ctx.type = 'application/json';
    if (sub !== '/stats' && sub !== '/stats/') {
      ctx.status = 404;
      ctx.body = '{"error":"unknown control path"}\n';
      return;
    }
    if (ctx.method === 'GET') {
      ctx.body = JSON.stringify(stats) + '\n';
    } else if (ctx.method === 'DELETE') {
      stats = newAuthStats();
      ctx.body = '{"ok":true}\n';
    } else {
      ctx.status = 405;
      ctx.body = '{"error":"method not allowed"}\n';
    }
  }

  return { middleware, control, stats: () => stats };
}

let DUMMY_ACCOUNT = null;

// ---- credential mocks ----

const ROLE_NAME = 's3pipe-test-role';
const STS_NS = 'https://sts.amazonaws.com/doc/2011-06-15/';

function createCreds(opts, keyring, log) {
  const fail = { count: 0, status: 500 };
  let stats = newCredStats();
  const MAX_ISSUED = 10000;

  function newCredStats() {
    return {
      issued: [],
      requests: { imdsToken: 0, imdsRoles: 0, imds: 0, imdsOther: 0, container: 0, sts: 0, process: 0, other: 0 },
      failed: 0,
      rejected: 0,
    };
  }

  function issue(via, cap) {
    const key = keyring.issue(via, cap);
    if (stats.issued.length < MAX_ISSUED)
      stats.issued.push({ via, accessKeyId: key.id, expiration: isoSeconds(key.expires), t: Date.now() });
    return key;
  }

  // Control: returns [status, JSON text]
  function control(method, pathname, query) {
    const sub = pathname.replace(/^\/__creds/, '');
    if (sub === '/stats' || sub === '/stats/') {
      if (method === 'GET') return [200, JSON.stringify(stats) + '\n'];
      if (method === 'DELETE') {
        stats = newCredStats();
        return [200, '{"ok":true}\n'];
      }
      return [405, '{"error":"method not allowed"}\n'];
    }
    if (sub !== '' && sub !== '/') return [404, '{"error":"unknown control path"}\n'];
    const settings = () => JSON.stringify({ lifetime: keyring.state.lifetime, fail }) + '\n';
    if (method === 'GET') return [200, settings()];
    if (method !== 'POST' && method !== 'PUT') return [405, '{"error":"method not allowed"}\n'];
    const int = (name, lo, hi) => {
      const v = query.get(name);
      if (v === null || v === '') return null;
      if (!/^\d+$/.test(v) || Number(v) < lo || Number(v) > hi) throw new Error(`bad ${name} '${v}'`);
      return Number(v);
    };
    try {
      const lifetime = int('lifetime', 1, 1e9);
      const count = int('fail', 0, 1e9);
      const status = int('status', 400, 599);
      if (lifetime !== null) {
        keyring.state.lifetime = lifetime;
        keyring.save();
      }
      if (count !== null) {
        fail.count = count;
        fail.status = status !== null ? status : 500;
      } else if (status !== null) {
        fail.status = status;
      }
    } catch (err) {
      return [400, JSON.stringify({ error: err.message }) + '\n'];
    }
    log(`settings ${settings().trim()}`);
    return [200, settings()];
  }

  function send(res, status, type, body, headers) {
    const buf = Buffer.from(body);
    res.writeHead(status, Object.assign({ 'Content-Type': type, 'Content-Length': buf.length }, headers || {}));
    res.end(buf);
  }

  const json = (res, status, obj) => send(res, status, 'application/json', JSON.stringify(obj));

  function stsError(res, status, code, message) {
    send(
      res,
      status,
      'text/xml',
      `<ErrorResponse xmlns="${STS_NS}">\n  <Error>\n    <Type>${status >= 500 ? 'Receiver' : 'Sender'}</Type>\n` +
        `    <Code>${code}</Code>\n    <Message>${xmlEsc(message)}</Message>\n  </Error>\n` +
        `  <RequestId>${crypto.randomUUID()}</RequestId>\n</ErrorResponse>\n`,
    );
  }

  // The injected failure, if one is armed: answers and returns true.
  function injected(res, kind) {
    if (fail.count <= 0) return false;
    fail.count--;
    stats.failed++;
    log(`injected ${fail.status} on ${kind}`);
    const code = { 400: 'Throttling', 429: 'Throttling', 503: 'ServiceUnavailable' }[fail.status] || 'InternalFailure';
    if (kind === 'sts') stsError(res, fail.status, code, 'Injected failure (test).');
    else json(res, fail.status, { Code: code, Message: 'Injected failure (test).' });
    return true;
  }

  function refuse(res, status, body, type) {
    stats.rejected++;
    send(res, status, type || 'text/plain', body);
  }

  function readBody(req, limit) {
    return new Promise((resolve, reject) => {
      const chunks = [];
      let n = 0;
      req.on('data', c => {
        n += c.length;
        if (n > limit) {
          reject(new Error('body too large'));
          req.destroy();
          return;
        }
        chunks.push(c);
      });
      req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
      req.on('error', reject);
    });
  }

  function imdsTokenValid(req) {
    const t = req.headers['x-aws-ec2-metadata-token'];
    const exp = t === undefined ? undefined : keyring.imdsTokens.get(t);
    return exp !== undefined && exp > Date.now();
  }

  function imds(req, res, pathname) {
    if (pathname === '/latest/api/token') {
      stats.requests.imdsToken++;
      if (req.method !== 'PUT') return refuse(res, 405, 'Method Not Allowed\n');
      if (req.headers['x-forwarded-for'] !== undefined) return refuse(res, 403, 'Forbidden\n');
      const ttl = req.headers['x-aws-ec2-metadata-token-ttl-seconds'];
      if (ttl === undefined || !/^\d+$/.test(ttl) || Number(ttl) < 1 || Number(ttl) > 21600)
        return refuse(res, 400, 'Bad Request\n');
      const token = crypto.randomBytes(42).toString('base64');
      keyring.imdsTokens.set(token, Date.now() + Number(ttl) * 1000);
      keyring.save();
      return send(res, 200, 'text/plain', token, { 'X-aws-ec2-metadata-token-ttl-seconds': ttl });
    }
    const base = '/latest/meta-data/iam/security-credentials';
    const kind =
      pathname === base || pathname === base + '/'
        ? 'imdsRoles'
        : pathname.startsWith(base + '/')
          ? 'imds'
          : 'imdsOther';
    stats.requests[kind]++;
    if (req.method !== 'GET' && req.method !== 'HEAD') return refuse(res, 405, 'Method Not Allowed\n');
    if (!imdsTokenValid(req)) return refuse(res, 401, 'Unauthorized\n');
    if (kind === 'imdsOther') {
      if (pathname === '/latest/meta-data/placement/region') return send(res, 200, 'text/plain', 'us-east-1');
      return refuse(res, 404, 'Not Found\n');
    }
    if (kind === 'imdsRoles') {
      if (injected(res, kind)) return undefined;
      return send(res, 200, 'text/plain', ROLE_NAME);
    }
    if (pathname.slice(base.length + 1) !== ROLE_NAME) return refuse(res, 404, 'Not Found\n');
    if (injected(res, kind)) return undefined;
    const key = issue('imds');
    return json(res, 200, {
      Code: 'Success',
      LastUpdated: isoSeconds(Date.now()),
      Type: 'AWS-HMAC',
      AccessKeyId: key.id,
      SecretAccessKey: key.secret,
      Token: key.token,
      Expiration: isoSeconds(key.expires),
    });
  }

  function container(req, res) {
    stats.requests.container++;
    if (req.method !== 'GET') return refuse(res, 405, 'Method Not Allowed\n');
    if (opts.containerToken !== null && req.headers.authorization !== opts.containerToken)
      return refuse(res, 401, JSON.stringify({ Code: 'AccessDenied', Message: 'Unauthorized' }), 'application/json');
    if (injected(res, 'container')) return undefined;
    const key = issue('container');
    return json(res, 200, {
      AccessKeyId: key.id,
      SecretAccessKey: key.secret,
      Token: key.token,
      Expiration: isoSeconds(key.expires),
      RoleArn: 'arn:aws:iam::123456789012:role/s3pipe-test',
    });
  }

  async function sts(req, res, url) {
    stats.requests.sts++;
    if (req.method !== 'GET' && req.method !== 'POST') {
      stats.rejected++;
      return stsError(res, 405, 'InvalidAction', 'Only GET and POST are supported.');
    }
    const p = new URLSearchParams(url.searchParams);
    if (req.method === 'POST') {
      let body;
      try {
        body = await readBody(req, 1 << 20);
      } catch (err) {
        stats.rejected++;
        return stsError(res, 400, 'ValidationError', 'Request body too large.');
      }
      for (const [k, v] of new URLSearchParams(body)) p.set(k, v);
    }
    const bad = (code, msg) => {
      stats.rejected++;
      return stsError(res, 400, code, msg);
    };
    const action = p.get('Action');
    if (!action) return bad('MissingAction', 'Missing Action');
    if (action !== 'AssumeRoleWithWebIdentity' || p.get('Version') !== '2011-06-15')
      return bad('InvalidAction', `Could not find operation ${action} for version ${p.get('Version') || 'NO_VERSION_SPECIFIED'}`);
    for (const n of ['RoleArn', 'RoleSessionName', 'WebIdentityToken'])
      if (!p.get(n)) return bad('MissingParameter', `The request must contain the parameter ${n}`);
    const roleArn = p.get('RoleArn');
    const session = p.get('RoleSessionName');
    if (!/^arn:aws[a-z-]*:iam::\d{12}:role\/[\w+=,.@\/-]+$/.test(roleArn))
      return bad('ValidationError', `${roleArn} is invalid`);
    if (!/^[\w+=,.@-]{2,64}$/.test(session))
      return bad('ValidationError', "1 validation error detected: Value at 'roleSessionName' failed to satisfy constraint");
    let cap;
    if (p.get('DurationSeconds')) {
      const d = p.get('DurationSeconds');
      if (!/^\d+$/.test(d) || Number(d) < 900 || Number(d) > 43200)
        return bad('ValidationError', "1 validation error detected: Value at 'durationSeconds' failed to satisfy constraint");
      cap = Number(d);
    }
    const given = p.get('WebIdentityToken').replace(/[\r\n]+$/, '');
    if (opts.webIdentityToken !== null && given !== opts.webIdentityToken.replace(/[\r\n]+$/, ''))
      return bad('InvalidIdentityToken', "Couldn't verify the web identity token (test: it is not the expected token).");
    if (injected(res, 'sts')) return undefined;
    const key = issue('sts', cap);
    const roleName = roleArn.slice(roleArn.lastIndexOf('/') + 1);
    const account = roleArn.split(':')[4];
    return send(
      res,
      200,
      'text/xml',
      `<AssumeRoleWithWebIdentityResponse xmlns="${STS_NS}">\n` +
        '  <AssumeRoleWithWebIdentityResult>\n' +
        '    <SubjectFromWebIdentityToken>system:serviceaccount:default:s3pipe</SubjectFromWebIdentityToken>\n' +
        '    <AssumedRoleUser>\n' +
        `      <Arn>arn:aws:sts::${account}:assumed-role/${xmlEsc(roleName)}/${xmlEsc(session)}</Arn>\n` +
        `      <AssumedRoleId>AROA${randomString(17, UPPER_DIGITS)}:${xmlEsc(session)}</AssumedRoleId>\n` +
        '    </AssumedRoleUser>\n' +
        '    <Credentials>\n' +
        `      <AccessKeyId>${key.id}</AccessKeyId>\n` +
        `      <SecretAccessKey>${xmlEsc(key.secret)}</SecretAccessKey>\n` +
        `      <SessionToken>${xmlEsc(key.token)}</SessionToken>\n` +
        `      <Expiration>${isoSeconds(key.expires)}</Expiration>\n` +
        '    </Credentials>\n' +
        `    <Provider>arn:aws:iam::${account}:oidc-provider/oidc.s3pipe.test</Provider>\n` +
        '    <Audience>sts.amazonaws.com</Audience>\n' +
        '  </AssumeRoleWithWebIdentityResult>\n' +
        '  <ResponseMetadata>\n' +
        `    <RequestId>${crypto.randomUUID()}</RequestId>\n` +
        '  </ResponseMetadata>\n' +
        '</AssumeRoleWithWebIdentityResponse>\n',
    );
  }

  function processCreds(req, res) {
    stats.requests.process++;
    if (req.method !== 'GET') return refuse(res, 405, 'Method Not Allowed\n');
    if (injected(res, 'process')) return undefined;
    const key = issue('process');
    return json(res, 200, {
      Version: 1,
      AccessKeyId: key.id,
      SecretAccessKey: key.secret,
      SessionToken: key.token,
      Expiration: isoSeconds(key.expires),
    });
  }

  // The credentials listener. controlExtra(method, path) answers /__auth.
  async function handle(req, res, controlExtra) {
    let url;
    try {
      url = new URL(req.url, 'http://localhost');
    } catch (err) {
      return refuse(res, 400, 'Bad Request\n');
    }
    const pathname = url.pathname;
    log(`${req.method} ${pathname}`);
    if (pathname === '/__creds' || pathname.startsWith('/__creds/')) {
      const [status, body] = control(req.method, pathname, url.searchParams);
      return send(res, status, 'application/json', body);
    }
    if (pathname === '/__auth' || pathname.startsWith('/__auth/')) {
      const [status, body] = controlExtra(req.method, pathname);
      return send(res, status, 'application/json', body);
    }
    if (pathname.startsWith('/latest/')) return imds(req, res, pathname);
    if (pathname.startsWith('/container/')) return container(req, res);
    if (pathname === '/process') return processCreds(req, res);
    if (pathname === '/') return sts(req, res, url);
    stats.requests.other++;
    return refuse(res, 404, 'Not Found\n');
  }

  return { handle, control };
}

// ---- fault injection ----

const S3_ERRORS = {
  400: ['BadRequest', 'Bad request (injected fault).'],
  403: ['AccessDenied', 'Access Denied (injected fault).'],
  404: ['NoSuchKey', 'The specified key does not exist (injected fault).'],
  500: ['InternalError', 'We encountered an internal error. Please try again.'],
  503: ['SlowDown', 'Please reduce your request rate.'],
};

const MAX_LOG = 10000;
const LIST_PARAMS = new Set(['prefix', 'marker', 'max-keys', 'delimiter', 'encoding-type']);

function newStats() {
  return {
    requests: 0, // every S3 request that passed authentication (control requests excluded)
    userAgents: {}, // those requests by their User-Agent header ("" without one), up to 16 kinds
    gets: 0, // GET object
    heads: 0,
    lists: 0, // GET bucket with list-type
    rangeGets: 0, // GET object with a Range header
    ifMatch: 0, // requests carrying If-Match
    faultsFired: 0,
    fired: { status: 0, cut: 0, stall: 0, etag: 0, delay: 0 },
    // [{path, range, port, t, inflight}] of every GET object, in arrival
    // order (t: ms since the epoch; inflight: GET-object requests being
    // served when it arrived, itself included)
    ranges: [],
    events: [], // [{kind, path, range, start, after, breakAt}] per fault fired
  };
}

function createFaults(verbose) {
  let armed = [];
  let stats = newStats();
  let inflight = 0;
  const log = msg => {
    if (verbose) process.stderr.write(`fault: ${msg}\n`);
  };

  function classify(ctx) {
    const parts = ctx.path.split('/').filter(Boolean);
    if (ctx.method === 'GET' && parts.length >= 2) return 'object';
    // ListObjectsV2 has list-type=2; a V1 list has no sub-resource at all
    if (ctx.method === 'GET' && parts.length === 1) {
      const keys = Object.keys(ctx.query);
      if (keys.includes('list-type') || keys.every(k => LIST_PARAMS.has(k)))
        return 'list';
    }
    if (ctx.method === 'HEAD') return 'head';
    return 'other';
  }

  function matches(fault, ctx, type) {
    if (fault.count <= 0) return false;
    if (fault.list ? type !== 'list' : type !== 'object') return false;
    if (fault.match) {
      const hay = [ctx.path, safeDecode(ctx.path)];
      if (type === 'list') hay.push(ctx.querystring, safeDecode(ctx.querystring));
      if (!hay.some(h => h.includes(fault.match))) return false;
    }
    return fault.prob >= 1 || Math.random() < fault.prob;
  }

  function rangeStart(ctx) {
    const m = /^bytes=(\d+)-/.exec(ctx.get('range') || '');
    return m ? Number(m[1]) : 0;
  }

  function record(fault, ctx, extra) {
    stats.faultsFired++;
    stats.fired[fault.kind]++;
    if (stats.events.length < MAX_LOG) {
      stats.events.push(
        Object.assign(
          { kind: fault.kind, path: safeDecode(ctx.path), range: ctx.get('range') || null },
          extra,
        ),
      );
    }
    log(`${fault.kind} on ${ctx.method} ${ctx.url} ${JSON.stringify(extra)}`);
  }

  function control(ctx) {
    const q = ctx.query;
    const sub = ctx.path.replace(/^\/__fault/, '');
    ctx.type = 'application/json';
    if (sub === '/stats' || sub === '/stats/') {
      if (ctx.method === 'GET') {
        ctx.body = JSON.stringify(stats) + '\n';
      } else if (ctx.method === 'DELETE') {
        stats = newStats();
        ctx.body = '{"ok":true}\n';
      } else {
        ctx.status = 405;
        ctx.body = '{"error":"method not allowed"}\n';
      }
      return;
    }
    if (sub !== '' && sub !== '/') {
      ctx.status = 404;
      ctx.body = '{"error":"unknown control path"}\n';
      return;
    }
    if (ctx.method === 'GET') {
      ctx.body = JSON.stringify(armed) + '\n';
      return;
    }
    if (ctx.method === 'DELETE') {
      armed = [];
      ctx.body = '{"ok":true}\n';
      return;
    }
    if (ctx.method !== 'POST' && ctx.method !== 'PUT') {
      ctx.status = 405;
      ctx.body = '{"error":"method not allowed"}\n';
      return;
    }
    const num = (name, def) => {
      if (q[name] === undefined || q[name] === '') return def;
      const v = Number(q[name]);
      if (!Number.isFinite(v) || v < 0) throw new Error(`bad ${name} '${q[name]}'`);
      return v;
    };
    try {
      const kind = q.kind;
      if (!['status', 'cut', 'stall', 'etag', 'delay'].includes(kind))
        throw new Error(`bad kind '${kind}'`);
      const fault = {
        kind,
        count: num('count', 1),
        match: q.match || '',
        after: num('after', 0),
        seconds: num('seconds', 30),
        status: num('status', 500),
        list: q.list === '1' || q.list === 'true',
        prob: num('prob', 1),
      };
      if (fault.kind === 'status' && (fault.status < 400 || fault.status > 599))
        throw new Error(`bad status '${q.status}'`);
      if (!(fault.prob > 0 && fault.prob <= 1)) throw new Error(`bad prob '${q.prob}' (0 < P <= 1)`);
      if (fault.list && kind === 'etag') throw new Error('etag faults apply to objects only');
      armed.push(fault);
      ctx.body = JSON.stringify({ ok: true, armed: fault }) + '\n';
      log(`armed ${JSON.stringify(fault)}`);
    } catch (err) {
      ctx.status = 400;
      ctx.body = JSON.stringify({ error: err.message }) + '\n';
    }
  }

  function errorBody(ctx, status) {
    const [code, message] = S3_ERRORS[status] || S3_ERRORS[500];
    return s3ErrorXml(code, message, safeDecode(ctx.path), null);
  }

  // Take over the response: send headers and `after` body bytes, then either
  // close at once (cut) or after `seconds` (stall).
  function truncate(ctx, fault) {
    const body = ctx.body;
    const { res } = ctx;
    const start = rangeStart(ctx);
    ctx.respond = false;
    res.statusCode = ctx.status;
    let sent = 0;
    let done = false;
    let timer = null;
    const socket = res.socket;
    const finish = () => {
      if (done) return;
      done = true;
      if (body && typeof body.destroy === 'function') body.destroy();
      record(fault, ctx, { start, after: fault.after, breakAt: start + sent, sent });
      const kill = () => {
        if (socket && !socket.destroyed) {
          // FIN after the bytes already written, so the client gets exactly
          // `sent` body bytes and then a premature end of the response
          socket.end();
          setTimeout(() => socket.destroy(), 200).unref();
        }
      };
      if (fault.kind === 'stall') {
        timer = setTimeout(kill, fault.seconds * 1000);
        if (socket) socket.once('close', () => clearTimeout(timer));
      } else {
        kill();
      }
    };
    res.flushHeaders();
    if (fault.after === 0) {
      finish();
      return;
    }
    const src =
      typeof body === 'string' || Buffer.isBuffer(body)
        ? require('stream').Readable.from([Buffer.from(body)])
        : body;
    if (!src || typeof src.on !== 'function') {
      finish();
      return;
    }
    src.on('data', chunk => {
      if (done) return;
      const left = fault.after - sent;
      const part = chunk.length > left ? chunk.subarray(0, left) : chunk;
      sent += part.length;
      const ok = res.write(part);
      if (sent >= fault.after) {
        src.pause();
        res.write('', () => finish());
        return;
      }
      if (!ok) {
        src.pause();
        res.once('drain', () => src.resume());
      }
    });
    src.on('end', () => {
      // body shorter than `after`: the whole body went out, close normally
      if (!done) {
        done = true;
        record(fault, ctx, { start, after: fault.after, breakAt: null, sent });
        res.end();
      }
    });
    src.on('error', () => finish());
    if (socket) socket.once('close', () => finish());
  }

  async function middleware(ctx, next) {
    const type = classify(ctx);
    stats.requests++;
    const agent = ctx.get('user-agent') || '';
    if (agent in stats.userAgents || Object.keys(stats.userAgents).length < 16)
      stats.userAgents[agent] = (stats.userAgents[agent] || 0) + 1;
    if (ctx.get('if-match')) stats.ifMatch++;
    if (type === 'object') {
      inflight++;
      let counted = true;
      const done = () => {
        if (counted) {
          counted = false;
          inflight--;
        }
      };
      ctx.res.once('close', done);
      ctx.res.once('finish', done);
      stats.gets++;
      if (ctx.get('range')) stats.rangeGets++;
      if (stats.ranges.length < MAX_LOG)
        stats.ranges.push({
          path: safeDecode(ctx.path),
          range: ctx.get('range') || null,
          port: ctx.req.socket.remotePort, // tells connections apart
          t: Date.now(),
          inflight,
        });
    } else if (type === 'list') {
      stats.lists++;
    } else if (type === 'head') {
      stats.heads++;
    }
    const fault = armed.find(f => matches(f, ctx, type));
    if (!fault) return next();
    fault.count--;
    armed = armed.filter(f => f.count > 0);

    if (fault.kind === 'status') {
      record(fault, ctx, { status: fault.status });
      ctx.status = fault.status;
      ctx.type = 'application/xml';
      if (fault.status === 503) ctx.set('Retry-After', '0');
      ctx.body = errorBody(ctx, fault.status);
      return;
    }
    if (fault.kind === 'delay') {
      await new Promise(resolve => setTimeout(resolve, fault.seconds * 1000));
      record(fault, ctx, { answeredAt: Date.now() });
      return next();
    }
    await next();
    const ok = ctx.status === 200 || ctx.status === 206;
    if (!ok) {
      // the real answer is an error: let it through, keep the fault armed
      fault.count++;
      if (!armed.includes(fault)) armed.unshift(fault);
      return;
    }
    if (fault.kind === 'etag') {
      const old = ctx.response.get('ETag') || '';
      const fresh = `"${crypto.createHash('md5').update('changed:' + old).digest('hex')}"`;
      ctx.set('ETag', fresh);
      record(fault, ctx, { etag: fresh, was: old });
      return;
    }
    truncate(ctx, fault);
  }

  return { middleware, control };
}

// ---- synthetic buckets ----
//
// A synthetic bucket has no file per object: key(i), size(key), the ETag and
// the bytes are computed, so 10 million keys cost no disk and no memory per
// key. The keys are cut into groups (below) so that a listing is uneven on
// purpose: most keys under one deep prefix, a few shallow or very deep ones,
// multi-byte UTF-8, a space and a '+', a group whose UTF-8 order differs
// from JavaScript's UTF-16 order, and literal keys that are extensions of
// one another. Every comparison is on UTF-8 bytes (Buffer.compare), the order
// S3 lists in.

// Counted groups: prefix + String(j).padStart(width, '0') + suffix, j from 0.
// share is per mille of the keys left after the literal keys; width is a
// minimum (it grows with the group's count so the digits stay fixed-width
// and the numeric order is the byte order).
const SYNTH_GROUPS = [
  { prefix: 'data/img/train/n01/', share: 700, width: 6, suffix: '.JPEG' }, // the skew
  { prefix: 'data/img/train/n02/', share: 50, width: 6, suffix: '.JPEG' },
  { prefix: 'data/img/val/', share: 30, width: 6, suffix: '.JPEG' },
  // '-' (0x2d) sorts before '/' (0x2f): data/img-x/ comes before data/img/
  { prefix: 'data/img-x/', share: 10, width: 4, suffix: '.JPEG' },
  { prefix: 'data/meta-', share: 40, width: 6, suffix: '.json' }, // directly under data/
  { prefix: 'data/a/b/c/d/e/f/g/', share: 10, width: 5, suffix: '.bin' }, // deep
  { prefix: 'data/with space+plus/', share: 20, width: 5, suffix: ' copy+1.bin' },
  { prefix: 'data/\u00f1/', share: 30, width: 5, suffix: '.txt' }, // ñ: 2 bytes
  { prefix: 'data/\u00ff/', share: 30, width: 5, suffix: '.bin' }, // ÿ: c3 bf, after every ASCII key
  { prefix: 'data/\u65e5\u672c/', share: 30, width: 5, suffix: '.txt' }, // 日本: 3 bytes each
  // ｶﾀｶﾅ (U+FF76...): ef bd b6 in UTF-8, before the emoji's f0; in UTF-16
  // (JavaScript's '<') it sorts after the emoji's surrogate d83d
  { prefix: 'data/\uff76\uff80\uff76\uff85/', share: 20, width: 5, suffix: '.txt' },
  { prefix: 'data/\u{1f600}/', share: 30, width: 5, suffix: '.png' }, // 😀: 4 bytes
];

// The skewed layout: what real datasets look like. One run of sequential
// shard names holds 70 % of the keys; the rest sits in deep folders and in
// sparse names (times, hashed hex, letters) that a key-range splitter must
// not mistake for dense ones; a few unicode folders. fmt(j, count) gives
// the name after the prefix of the group's key j of count, increasing in j
// (fixed width, so byte order is numeric order); without it the group is
// counted like the uneven layout's.
const SYNTH_SKEWED_GROUPS = [
  { prefix: 'data/train/shard-', share: 700, width: 7, suffix: '.tar' }, // the run
  { prefix: 'data/val/shard-', share: 30, width: 6, suffix: '.tar' },
  { prefix: 'data/logs/', share: 60, fmt: synthLogName },
  { prefix: 'data/features/', share: 100, fmt: synthFeatureName },
  { prefix: 'data/users/', share: 40, fmt: synthUserName },
  { prefix: 'data/ckpt/', share: 20, fmt: synthCheckpointName },
  { prefix: 'data/a/b/c/d/e/f/g/h/i/j/k/', share: 10, width: 5, suffix: '.bin' }, // deep
  { prefix: 'data/manifest-', share: 5, width: 6, suffix: '.json' },
  { prefix: 'data/with space+plus/', share: 5, width: 5, suffix: ' copy+1.bin' },
  { prefix: 'data/\u00f1/', share: 10, width: 5, suffix: '.txt' }, // ñ
  { prefix: 'data/\u65e5\u672c\u8a9e/', share: 10, width: 5, suffix: '.txt' }, // 日本語
  { prefix: 'data/\uff76\uff80\uff76\uff85/', share: 5, width: 5, suffix: '.txt' }, // ｶﾀｶﾅ
  { prefix: 'data/\u{1f600}/', share: 5, width: 5, suffix: '.png' }, // 😀
];
const SYNTH_LAYOUTS = { uneven: SYNTH_GROUPS, skewed: SYNTH_SKEWED_GROUPS };

// Key j of count spread over [0, space): its own slot of space / count
// values, and a hash of j within the slot, so that names are sparse and
// uneven yet strictly increasing.
function synthSparse(j, count, space) {
  const slot = Math.max(1, Math.floor(space / Math.max(count, 1)));
  return j * slot + (mix32((j ^ 0x5bd1e995) >>> 0) % slot);
}
const synthPad = (v, width) => String(v).padStart(width, '0');
// logs/YYYY/MM/DD/HH/MMSS-XXXXXXXX.log: a time in seconds from 2023-01-01
// over three years (or a second a key, when there are more keys)
function synthLogName(j, count) {
  const t = new Date(Date.UTC(2023, 0, 1) + synthSparse(j, count, Math.max(3 * 365 * 86400, count)) * 1000);
  return (
    `${synthPad(t.getUTCFullYear(), 4)}/${synthPad(t.getUTCMonth() + 1, 2)}/${synthPad(t.getUTCDate(), 2)}/` +
    `${synthPad(t.getUTCHours(), 2)}/${synthPad(t.getUTCMinutes(), 2)}${synthPad(t.getUTCSeconds(), 2)}-` +
    `${mix32(j >>> 0).toString(16).padStart(8, '0')}.log`
  );
}
// features/XX/XX/XXXXXXXXXXXX.npy: 12 hex digits, as names made of hashes
function synthFeatureName(j, count) {
  const v = synthSparse(j, count, 16 ** 12); // 48 bits: two halves of 24
  const hi = Math.floor(v / 16777216);
  const lo = v % 16777216;
  const a = HEX2[hi >>> 16];
  const b = HEX2[(hi >>> 8) & 255];
  return `${a}/${b}/${a}${b}${HEX2[hi & 255]}${HEX2[lo >>> 16]}${HEX2[(lo >>> 8) & 255]}${HEX2[lo & 255]}.npy`;
}
// users/LLLLLLLLL/profile.json: 9 lowercase letters
function synthUserName(j, count) {
  let v = synthSparse(j, count, 26 ** 9);
  let name = '';
  for (let k = 0; k < 9; k++, v = Math.floor(v / 26)) name = String.fromCharCode(97 + (v % 26)) + name;
  return `${name}/profile.json`;
}
// ckpt/epoch-EEE/step-SSSSSSSSSSSS/rank-R.pt: 8 ranks a step, steps sparse
// in [0, 10^12), the epoch the step's first three digits
function synthCheckpointName(j, count) {
  const step = synthSparse(Math.floor(j / 8), Math.ceil(count / 8), 1e12);
  return `epoch-${synthPad(Math.floor(step / 1e9), 3)}/step-${synthPad(step, 12)}/rank-${j % 8}.pt`;
}
// Literal keys (a group of one key each), present whenever N >= 100 and
// counted in N: a key and its extensions, keys differing only in their last
// byte, a folder marker (size 0) with one object inside it.
const SYNTH_LITERALS = [
  'data/ext/k',
  'data/ext/k0',
  'data/ext/k00',
  'data/last/a',
  'data/last/b',
  'data/dir/',
  'data/dir/inside',
];
const SYNTH_MIN_FOR_LITERALS = 100;
// Every synthetic object's Last-Modified: fixed, so answers are reproducible.
const SYNTH_MTIME = Date.UTC(2024, 0, 2, 3, 4, 5);
const SYNTH_MTIME_ISO = new Date(SYNTH_MTIME).toISOString();
const SYNTH_MTIME_HTTP = new Date(SYNTH_MTIME).toUTCString();
const S3_NS = 'http://s3.amazonaws.com/doc/2006-03-01/';
// Bodies up to this size are one Buffer; larger ones are streamed.
const SYNTH_BUFFER_MAX = 1 << 20;

// 32-bit FNV-1a of the UTF-16 code units, then the murmur3 finalizer: cheap
// and well spread over consecutive keys.
function hash32(s) {
  let h = 0x811c9dc5;
  for (let i = 0; i < s.length; i++) {
    h ^= s.charCodeAt(i);
    h = Math.imul(h, 0x01000193);
  }
  return mix32(h);
}
function mix32(h) {
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h >>> 0;
}

const HEX2 = Array.from({ length: 256 }, (_, i) => i.toString(16).padStart(2, '0'));
const md5hex = s => crypto.createHash('md5').update(s, 'utf8').digest('hex');

// The bytes that follow `buf` and every string it prefixes, or null when
// there is none (all 0xff): keys starting with buf are [buf, successor).
function byteSuccessor(buf) {
  let n = buf.length;
  while (n > 0 && buf[n - 1] === 0xff) n--;
  if (n === 0) return null;
  const out = Buffer.from(buf.subarray(0, n));
  out[n - 1]++;
  return out;
}

// encoding-type=url as S3 does it: A-Za-z0-9 - _ . ~ and '/' kept, a space
// as '+', every other byte %XX (so a literal '+' is %2B).
function s3UrlEncode(s) {
  if (/^[A-Za-z0-9\-_.~/]*$/.test(s)) return s;
  return uriEncode(Buffer.from(s, 'utf8'), true).replace(/%20/g, '+');
}

// One bucket's key space: N keys, key(i) strictly increasing in UTF-8 byte
// order. Nothing per key is stored.
function createKeySpace(name, n, sizeRange, layout) {
  const table = SYNTH_LAYOUTS[layout];
  const literals = n >= SYNTH_MIN_FOR_LITERALS ? SYNTH_LITERALS.length : 0;
  const rest = n - literals;
  // Largest remainder: floor of each share, then the keys left over to the
  // largest fractions (ties in table order), so the counts sum to exactly
  // `rest`. Once there are enough keys, every group gets at least one, taken
  // from the biggest group.
  const total = table.reduce((a, g) => a + g.share, 0);
  const counts = table.map(g => Math.floor((rest * g.share) / total));
  let left = rest - counts.reduce((a, c) => a + c, 0);
  const order = table.map((g, k) => k).sort(
    (a, b) => ((rest * table[b].share) % total) - ((rest * table[a].share) % total) || a - b,
  );
  for (let k = 0; left > 0; k = (k + 1) % order.length, left--) counts[order[k]]++;
  if (rest >= table.length) {
    const big = counts.indexOf(Math.max(...counts));
    for (let k = 0; k < counts.length; k++)
      if (counts[k] === 0) {
        counts[k] = 1;
        counts[big]--;
      }
  }

  const all = table.map((g, k) => ({
    prefix: g.prefix,
    pbuf: Buffer.from(g.prefix, 'utf8'),
    width: g.fmt ? 0 : Math.max(g.width, String(Math.max(counts[k] - 1, 0)).length),
    suffix: g.fmt ? '' : g.suffix,
    fmt: g.fmt || null,
    count: counts[k],
    literal: false,
    start: 0,
  })).concat(
    SYNTH_LITERALS.map(k => ({
      prefix: k,
      pbuf: Buffer.from(k, 'utf8'),
      width: 0,
      suffix: '',
      fmt: null,
      count: literals ? 1 : 0,
      literal: true,
      start: 0,
    })),
  );
  all.sort((a, b) => Buffer.compare(a.pbuf, b.pbuf));
  // Groups must not interleave: no counted group's prefix may start another
  // group's prefix (a literal key may start a counted prefix: it then sorts
  // just before that whole group). Checked on the table, whatever N is.
  for (const a of all)
    for (const b of all) {
      if (a === b) continue;
      const starts = b.pbuf.length >= a.pbuf.length && b.pbuf.subarray(0, a.pbuf.length).equals(a.pbuf);
      if (starts && (!a.literal || a.pbuf.length === b.pbuf.length))
        throw new Error(`synthetic groups '${a.prefix}' and '${b.prefix}' would interleave`);
    }
  const groups = all.filter(g => g.count > 0);
  let start = 0;
  for (const g of groups) {
    g.start = start;
    start += g.count;
  }
  if (start !== n) throw new Error(`synthetic bucket ${name}: ${start} keys allocated, not ${n}`);

  function groupOf(i) {
    let lo = 0;
    let hi = groups.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (groups[mid].start <= i) lo = mid;
      else hi = mid - 1;
    }
    return groups[lo];
  }

  function key(i) {
    const g = groupOf(i);
    if (g.literal) return g.prefix;
    if (g.fmt) return g.prefix + g.fmt(i - g.start, g.count);
    return g.prefix + String(i - g.start).padStart(g.width, '0') + g.suffix;
  }

  // First index whose key is >= buf (> buf when strict), by binary search.
  function lowerBound(buf, strict) {
    let lo = 0;
    let hi = n;
    while (lo < hi) {
      const mid = Math.floor((lo + hi) / 2);
      const c = Buffer.compare(Buffer.from(key(mid), 'utf8'), buf);
      if (c < 0 || (strict && c === 0)) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  // Index of the key with these bytes, or -1: parse the group prefix and the
  // digits (a sparse name: search), then check that key(index) gives back
  // the very same bytes.
  function indexOf(buf) {
    const s = buf.toString('utf8');
    for (const g of groups) {
      let i = -1;
      if (g.fmt) {
        if (s.startsWith(g.prefix)) i = Math.min(lowerBound(buf, false), n - 1);
      } else if (g.literal) {
        if (s === g.prefix) i = g.start;
      } else if (
        s.length === g.prefix.length + g.width + g.suffix.length &&
        s.startsWith(g.prefix) &&
        s.endsWith(g.suffix)
      ) {
        const d = s.slice(g.prefix.length, g.prefix.length + g.width);
        if (/^[0-9]+$/.test(d) && Number(d) < g.count) i = g.start + Number(d);
      }
      if (i >= 0) return Buffer.from(key(i), 'utf8').equals(buf) ? i : -1;
    }
    return -1;
  }

  // The index range [from, to) of the keys starting with the bytes prefix.
  function prefixRange(prefix) {
    if (prefix.length === 0) return [0, n];
    const succ = byteSuccessor(prefix);
    return [lowerBound(prefix, false), succ ? lowerBound(succ, false) : n];
  }

  // Uneven and deterministic: folder markers 0; otherwise 200..4000 bytes,
  // every ~97th key empty, every ~1009th key 64 KiB..300 KiB; with
  // --synthetic-size MIN:MAX uniform in that range, no exceptions.
  function size(k, hk = hash32(k)) {
    if (k.endsWith('/')) return 0;
    const h = hk;
    if (sizeRange) return sizeRange[0] + (h % (sizeRange[1] - sizeRange[0] + 1));
    if (h % 97 === 0) return 0;
    if (mix32(h ^ 0x9e3779b9) % 1009 === 0) return 65536 + ((h >>> 8) % (300 * 1024 - 65536 + 1));
    return 200 + ((h >>> 8) % 3801);
  }

  // 32 hex digits (no quotes) from four rounds of a 32-bit mix of the key's
  // hash and its size: an md5 per listed key was a third of a page's CPU,
  // and this server, not the client, sets the pace of a million-key
  // listing on a two-core machine
  const etagHex = (k, sz, hk = hash32(k)) => {
    let h = mix32((hk ^ Math.imul(sz + 1, 0x9e3779b1)) >>> 0);
    let out = '';
    for (let i = 0; i < 4; i++) {
      out += HEX2[h >>> 24] + HEX2[(h >>> 16) & 255] + HEX2[(h >>> 8) & 255] + HEX2[h & 255];
      h = mix32(h ^ 0x9e3779b9);
    }
    return out;
  };
  const etag = (k, sz, hk) => '"' + etagHex(k, sz, hk) + '"';

  // In the sorted table, adjacent groups must be in order: a last line of
  // defence against a table edit that the prefix check above would miss.
  for (let g = 1; g < groups.length; g++) {
    const a = Buffer.from(key(groups[g].start - 1), 'utf8');
    const b = Buffer.from(key(groups[g].start), 'utf8');
    if (Buffer.compare(a, b) >= 0) throw new Error(`synthetic keys out of order at '${a}' / '${b}'`);
  }
  // sparse names are increasing by construction: checked on a sample of
  // neighbours in each such group (their last keys, where widths could
  // overflow, included)
  for (const g of groups)
    for (let k = 1; g.fmt && k < g.count; k = k < 64 ? k + 1 : k < g.count - 64 ? g.count - 64 : k + 1) {
      const a = Buffer.from(key(g.start + k - 1), 'utf8');
      const b = Buffer.from(key(g.start + k), 'utf8');
      if (Buffer.compare(a, b) >= 0) throw new Error(`synthetic keys out of order at '${a}' / '${b}'`);
    }

  return {
    name,
    n,
    layout,
    key,
    lowerBound,
    indexOf,
    prefixRange,
    size,
    etag,
    etagHex,
    groups: () => groups.map(g => ({ prefix: g.prefix, keys: g.count, first: key(g.start) })),
  };
}

// What the objects of a synthetic bucket hold (--synthetic B=N:LAYOUT:CONTENT).
const SYNTH_CONTENTS = ['text', 'gzip', 'csv'];

// A whole object of size bytes of a bucket whose content is gzip or csv:
//   gzip: one gzip member of stored (uncompressed) deflate blocks whose
//     payload is P bytes of the text content (the md5 hex of the key
//     repeated), P such that 18 + 5 x blocks + P = size (blocks of at most
//     65,535 bytes; sizes under 23 hold an empty payload's member cut short
//     and are not valid gzip, as none is served but 0);
//   csv: rows "1,2,3,4\n", the last one's last field padded with zeros to
//     end at size ("1,2,3,4000\n"): every row 4 numbers.
function synthObject(k, size, content) {
  if (size === 0) return Buffer.alloc(0);
  if (content === 'csv') {
    const rows = Math.floor(size / 8);
    const out = Buffer.alloc(size, '1,2,3,4\n', 'latin1');
    const r = size - rows * 8;
    if (rows === 0) return Buffer.alloc(size, '9', 'latin1');
    // the last row becomes "1,2,3,4" + r zeros + "\n"
    out.fill('0', rows * 8 - 1, size - 1, 'latin1');
    out[size - 1] = 10;
    return out;
  }
  let blocks = 1;
  while (size - 18 - 5 * blocks > 65535 * blocks) blocks++;
  const p = Math.max(0, size - 18 - 5 * blocks);
  const payload = synthBody(k, 0, p);
  const out = Buffer.alloc(size);
  out.set([0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 255], 0);
  let at = 10;
  for (let b = 0, done = 0; b < blocks; b++) {
    const n = Math.min(65535, p - done);
    const last = b === blocks - 1;
    out[at] = last ? 1 : 0;
    out.writeUInt16LE(n, at + 1);
    out.writeUInt16LE(~n & 0xffff, at + 3);
    payload.copy(out, at + 5, done, done + n);
    at += 5 + n;
    done += n;
  }
  if (at + 8 <= size) {
    out.writeUInt32LE(require('zlib').crc32(payload) >>> 0, at);
    out.writeUInt32LE(p >>> 0, at + 4);
  }
  return out;
}

// The object's bytes [start, start + len): the md5 hex of the key repeated.
function synthBody(k, start, len) {
  const hex = md5hex(k);
  const r = start % 32;
  const pattern = hex.slice(r) + hex.slice(0, r);
  if (len <= SYNTH_BUFFER_MAX) return Buffer.alloc(len, pattern, 'latin1');
  // 64 KiB is a multiple of 32: every chunk starts on the same phase
  const chunk = Buffer.alloc(65536, pattern, 'latin1');
  let sent = 0;
  return new (require('stream').Readable)({
    read() {
      if (sent >= len) {
        this.push(null);
        return;
      }
      const m = Math.min(chunk.length, len - sent);
      sent += m;
      this.push(m === chunk.length ? chunk : chunk.subarray(0, m));
    },
  });
}

// Query of a raw URL: name -> value bytes ('+' is a space, %XX decoded),
// first occurrence wins.
function synthQuery(rawQuery) {
  const m = new Map();
  for (const piece of rawQuery.split('&')) {
    if (piece === '') continue;
    const e = piece.indexOf('=');
    const k = percentDecode((e < 0 ? piece : piece.slice(0, e)).replace(/\+/g, ' ')).toString('utf8');
    const v = percentDecode((e < 0 ? '' : piece.slice(e + 1)).replace(/\+/g, ' '));
    if (!m.has(k)) m.set(k, v);
  }
  return m;
}

// Parameters a list request may carry; any other sub-resource on a
// synthetic bucket answers 501.
const SYNTH_LIST_PARAMS = new Set([
  'list-type',
  'prefix',
  'start-after',
  'continuation-token',
  'max-keys',
  'encoding-type',
  'fetch-owner',
  'delimiter',
  'marker',
  'x-id',
]);
const SYNTH_OBJECT_PARAMS = new Set(['x-id', 'partNumber', 'versionId']);
const SYNTH_RESPONSE_OVERRIDES = {
  'response-content-type': 'Content-Type',
  'response-content-disposition': 'Content-Disposition',
  'response-content-encoding': 'Content-Encoding',
  'response-content-language': 'Content-Language',
  'response-cache-control': 'Cache-Control',
  'response-expires': 'Expires',
};

function newSynthStats() {
  return { lists: 0, listKeys: 0, gets: 0, heads: 0 };
}

function createSynthetic(opts, log) {
  const spaces = new Map();
  for (const [name, n, layout, content] of opts.synthetic) {
    const s = createKeySpace(name, n, opts.syntheticSize, layout || opts.syntheticLayout);
    s.content = content;
    spaces.set(name, s);
  }
  let delay = opts.syntheticDelayMs;
  let stats = newSynthStats();

  function fail(ctx, status, code, message, resource, extra) {
    ctx.status = status;
    ctx.set('x-amz-request-id', requestId());
    // HEAD: no body, as S3
    if (ctx.method !== 'HEAD') {
      ctx.type = 'application/xml';
      ctx.body = s3ErrorXml(code, message, resource, extra);
    }
  }

  function xmlOk(ctx, body) {
    ctx.status = 200;
    ctx.set('x-amz-request-id', requestId());
    ctx.type = 'application/xml';
    // encoded once here: a string body is measured, then encoded again
    ctx.body = Buffer.from('<?xml version="1.0" encoding="UTF-8"?>\n' + body, 'utf8');
  }

  // ---- control: /__synthetic ----

  function state() {
    const buckets = {};
    for (const [name, s] of spaces) buckets[name] = { keys: s.n, layout: s.layout, groups: s.groups() };
    return { buckets, delay, size: opts.syntheticSize, stats };
  }

  function control(ctx) {
    const sub = ctx.path.replace(/^\/__synthetic/, '');
    const q = ctx.query;
    ctx.type = 'application/json';
    const bad = (status, msg) => {
      ctx.status = status;
      ctx.body = JSON.stringify({ error: msg }) + '\n';
    };
    if (sub === '/keys' || sub === '/keys/') {
      if (ctx.method !== 'GET') return bad(405, 'method not allowed');
      const s = spaces.get(q.bucket);
      if (!s) return bad(404, `no synthetic bucket '${q.bucket}'`);
      let [from, to] = s.prefixRange(Buffer.from(q.prefix || '', 'utf8'));
      if (q['start-after']) from = Math.max(from, s.lowerBound(Buffer.from(q['start-after'], 'utf8'), true));
      if (q.limit !== undefined) {
        if (!/^\d+$/.test(q.limit)) return bad(400, `bad limit '${q.limit}'`);
        to = Math.min(to, from + Number(q.limit));
      }
      let i = from;
      // Pulled by the socket a few thousand lines at a time: 10 million keys
      // never sit in memory at once.
      ctx.body = new (require('stream').Readable)({
        read() {
          if (i >= to) {
            this.push(null);
            return;
          }
          const stop = Math.min(to, i + 2000);
          let out = '';
          for (; i < stop; i++) {
            const k = s.key(i);
            const sz = s.size(k);
            out += `${encodeURIComponent(k)}\t${sz}\t${s.etag(k, sz)}\n`;
          }
          this.push(out);
        },
      });
      ctx.type = 'text/plain; charset=utf-8';
      return undefined;
    }
    if (sub === '/stats' || sub === '/stats/') {
      if (ctx.method === 'GET') {
        ctx.body = JSON.stringify(stats) + '\n';
      } else if (ctx.method === 'DELETE') {
        stats = newSynthStats();
        ctx.body = '{"ok":true}\n';
      } else {
        bad(405, 'method not allowed');
      }
      return undefined;
    }
    if (sub !== '' && sub !== '/') return bad(404, 'unknown control path');
    if (ctx.method === 'GET') {
      ctx.body = JSON.stringify(state()) + '\n';
      return undefined;
    }
    if (ctx.method !== 'POST' && ctx.method !== 'PUT') return bad(405, 'method not allowed');
    if (q.delay !== undefined) {
      const v = Number(q.delay);
      if (q.delay === '' || !Number.isFinite(v) || v < 0) return bad(400, `bad delay '${q.delay}'`);
      delay = v;
      log(`delay ${delay} ms`);
    }
    ctx.body = JSON.stringify(state()) + '\n';
    return undefined;
  }

  // ---- S3 requests on a synthetic bucket ----

  async function list(ctx, s, q, resource) {
    stats.lists++;
    // the delay of a real S3's LIST; timers, so concurrent pages overlap
    if (delay > 0) await new Promise(resolve => setTimeout(resolve, delay));
    const str = name => (q.has(name) ? q.get(name).toString('utf8') : undefined);
    const v2 = q.has('list-type');
    if (v2 && str('list-type') !== '2')
      return fail(ctx, 400, 'InvalidArgument', 'Invalid List Type specified in Request', resource, {
        ArgumentName: 'list-type',
        ArgumentValue: str('list-type'),
      });
    if (str('delimiter'))
      return fail(ctx, 501, 'NotImplemented', 'A delimiter is not implemented on synthetic buckets.', resource, {
        Header: 'delimiter',
      });
    let maxKeys = 1000;
    if (q.has('max-keys')) {
      const m = str('max-keys');
      if (!/^\d+$/.test(m) || Number(m) > 2147483647)
        return fail(ctx, 400, 'InvalidArgument', 'Provided max-keys not an integer or within integer range', resource, {
          ArgumentName: 'max-keys',
          ArgumentValue: m,
        });
      maxKeys = Number(m);
    }
    const encoding = str('encoding-type');
    if (encoding !== undefined && encoding !== 'url')
      return fail(ctx, 400, 'InvalidArgument', 'Invalid Encoding Method specified in Request', resource, {
        ArgumentName: 'encoding-type',
        ArgumentValue: encoding,
      });
    const url = encoding === 'url';
    const enc = url ? s3UrlEncode : xmlEsc;
    const prefix = q.get('prefix') || Buffer.alloc(0);
    const prefixStr = prefix.toString('utf8');
    let [from, to] = s.prefixRange(prefix);

    let head;
    if (v2) {
      if (q.has('marker'))
        return fail(ctx, 400, 'InvalidArgument', 'Marker unsupported with REST.GET.BUCKET in list-type=2', resource, {
          ArgumentName: 'marker',
        });
      const token = str('continuation-token');
      const startAfter = str('start-after');
      let after = null;
      if (token !== undefined) {
        // the token (base64url of "1/" + the last key sent) wins over start-after
        const raw = /^[A-Za-z0-9_-]+$/.test(token) ? Buffer.from(token, 'base64url') : null;
        if (!raw || raw.length < 2 || raw[0] !== 0x31 || raw[1] !== 0x2f || raw.toString('base64url') !== token)
          return fail(ctx, 400, 'InvalidArgument', 'The continuation token provided is incorrect', resource, {
            ArgumentName: 'continuation-token',
          });
        after = raw.subarray(2);
      } else if (startAfter) {
        after = q.get('start-after');
      }
      if (after) from = Math.max(from, s.lowerBound(after, true));
      head =
        `<Name>${xmlEsc(s.name)}</Name><Prefix>${enc(prefixStr)}</Prefix>` +
        (startAfter ? `<StartAfter>${enc(startAfter)}</StartAfter>` : '') +
        (token !== undefined ? `<ContinuationToken>${xmlEsc(token)}</ContinuationToken>` : '');
    } else {
      for (const p of ['continuation-token', 'start-after'])
        if (q.has(p))
          return fail(ctx, 400, 'InvalidArgument', `${p} only supported in REST.GET.BUCKET with list-type=2`, resource, {
            ArgumentName: p,
          });
      const marker = str('marker') || '';
      if (marker) from = Math.max(from, s.lowerBound(q.get('marker'), true));
      head = `<Name>${xmlEsc(s.name)}</Name><Prefix>${enc(prefixStr)}</Prefix><Marker>${enc(marker)}</Marker>`;
    }

    // a page may hold fewer keys than max-keys asks for (S3 says so; some
    // S3-compatible stores cap pages): --synthetic-page-keys
    const count = Math.max(0, Math.min(to - from, Math.min(maxKeys, opts.syntheticPageKeys)));
    const truncated = count > 0 && from + count < to;
    const last = count > 0 ? s.key(from + count - 1) : null;
    let mid = '';
    if (v2)
      mid =
        (truncated
          ? `<NextContinuationToken>${Buffer.from('1/' + last, 'utf8').toString('base64url')}</NextContinuationToken>`
          : '') + `<KeyCount>${count}</KeyCount>`;
    // The page is written into one buffer, a key's entry at a time: it is
    // built and sent about 1,000 times in a million-key listing, on this
    // server's one thread, and a string grown to 200 KiB, then flattened
    // and encoded, took most of that thread's time.
    const page = new PageWriter(
      '<?xml version="1.0" encoding="UTF-8"?>\n' +
        `<ListBucketResult xmlns="${S3_NS}">${head}${mid}<MaxKeys>${maxKeys}</MaxKeys>` +
        (url ? '<EncodingType>url</EncodingType>' : '') +
        `<IsTruncated>${truncated}</IsTruncated>`,
      count,
    );
    for (let i = from; i < from + count; i++) {
      const k = s.key(i);
      const hk = hash32(k);
      const sz = s.size(k, hk);
      page.add(
        `<Contents><Key>${XML_SPECIAL.test(k) || url ? enc(k) : k}</Key><LastModified>${SYNTH_MTIME_ISO}</LastModified>` +
          // (an ETag is '"' and hex digits: its only escapes are the quotes)
          `<ETag>&quot;${s.etagHex(k, sz, hk)}&quot;</ETag><Size>${sz}</Size><StorageClass>STANDARD</StorageClass></Contents>`,
      );
    }
    stats.listKeys += count;
    page.add('</ListBucketResult>');
    ctx.status = 200;
    ctx.set('x-amz-request-id', requestId());
    ctx.type = 'application/xml';
    ctx.body = page.bytes();
    return undefined;
  }

  function bucketRequest(ctx, s, q, resource) {
    const unknown = [...q.keys()].filter(k => !SYNTH_LIST_PARAMS.has(k));
    if (ctx.method === 'HEAD' && unknown.length === 0) {
      ctx.status = 200;
      ctx.set('x-amz-request-id', requestId());
      ctx.set('x-amz-bucket-region', 'us-east-1');
      return undefined;
    }
    if (ctx.method === 'GET' && unknown.length === 1 && unknown[0] === 'location')
      return xmlOk(ctx, `<LocationConstraint xmlns="${S3_NS}"/>`);
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      return fail(ctx, 405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.', resource, {
        Method: ctx.method,
        ResourceType: 'BUCKET',
      });
    }
    if (unknown.length)
      return fail(ctx, 501, 'NotImplemented', `'${unknown[0]}' is not implemented on synthetic buckets.`, resource, {
        Header: unknown[0],
      });
    return list(ctx, s, q, resource);
  }

  // RFC 7232 entity-tag list match (strong comparison on the opaque tag).
  function etagMatches(header, etag) {
    return header.split(',').some(t => {
      const v = t.trim();
      return v === '*' || v.replace(/^W\//, '') === etag;
    });
  }

  function objectRequest(ctx, s, q, keyBuf, resource) {
    const head = ctx.method === 'HEAD';
    if (head) stats.heads++;
    else if (ctx.method === 'GET') stats.gets++;
    if (!head && ctx.method !== 'GET') {
      ctx.set('Allow', 'GET, HEAD');
      return fail(ctx, 405, 'MethodNotAllowed', 'The specified method is not allowed against this resource.', resource, {
        Method: ctx.method,
        ResourceType: 'OBJECT',
      });
    }
    const unknown = [...q.keys()].filter(k => !SYNTH_OBJECT_PARAMS.has(k) && !(k in SYNTH_RESPONSE_OVERRIDES));
    if (unknown.length)
      return fail(ctx, 501, 'NotImplemented', `'${unknown[0]}' is not implemented on synthetic buckets.`, resource, {
        Header: unknown[0],
      });
    const i = s.indexOf(keyBuf);
    if (i < 0)
      return fail(ctx, 404, 'NoSuchKey', 'The specified key does not exist.', resource, {
        Key: keyBuf.toString('utf8'),
      });
    const k = s.key(i);
    const size = s.size(k);
    const etag = s.etag(k, size);
    ctx.set('x-amz-request-id', requestId());
    const ifMatch = ctx.get('if-match');
    if (ifMatch && !etagMatches(ifMatch, etag))
      return fail(ctx, 412, 'PreconditionFailed', 'At least one of the pre-conditions you specified did not hold', resource, {
        Condition: 'If-Match',
      });
    const ifNoneMatch = ctx.get('if-none-match');
    if (ifNoneMatch && etagMatches(ifNoneMatch, etag)) {
      ctx.status = 304;
      ctx.set('ETag', etag);
      ctx.set('Last-Modified', SYNTH_MTIME_HTTP);
      return undefined;
    }
    // Range: bytes=A-B, bytes=A-, bytes=-N; anything else is ignored (whole
    // object), as S3 does with a range it cannot parse.
    let start = 0;
    let end = size - 1;
    let partial = false;
    const m = /^bytes=(\d*)-(\d*)$/.exec((ctx.get('range') || '').trim());
    if (m && (m[1] !== '' || m[2] !== '')) {
      let a;
      let b;
      if (m[1] === '') {
        a = Math.max(0, size - Number(m[2]));
        b = size - 1;
        if (Number(m[2]) === 0) a = size; // unsatisfiable
      } else {
        a = Number(m[1]);
        b = m[2] === '' ? size - 1 : Math.min(Number(m[2]), size - 1);
      }
      if (m[1] !== '' && m[2] !== '' && Number(m[2]) < a) {
        // last < first: not a valid range, whole object
      } else if (a >= size) {
        ctx.set('Content-Range', `bytes */${size}`);
        return fail(ctx, 416, 'InvalidRange', 'The requested range is not satisfiable', resource, {
          RangeRequested: ctx.get('range'),
          ActualObjectSize: size,
        });
      } else {
        start = a;
        end = b;
        partial = true;
      }
    }
    const len = Math.max(0, end - start + 1);
    ctx.status = partial ? 206 : 200;
    ctx.set('ETag', etag);
    ctx.set('Last-Modified', SYNTH_MTIME_HTTP);
    ctx.set('Accept-Ranges', 'bytes');
    if (partial) ctx.set('Content-Range', `bytes ${start}-${end}/${size}`);
    if (!head) ctx.body = s.content === 'text' ? synthBody(k, start, len) : synthObject(k, size, s.content).subarray(start, start + len);
    ctx.type = 'application/octet-stream';
    for (const [p, h] of Object.entries(SYNTH_RESPONSE_OVERRIDES))
      if (q.has(p)) ctx.set(h, q.get(p).toString('utf8'));
    ctx.set('Content-Length', String(len));
    return undefined;
  }

  async function middleware(ctx, next) {
    if (spaces.size === 0) return next();
    // The raw path (auth may have rewritten the URL: read it now), decoded
    // segment by segment: '+' stays '+', %XX are bytes.
    const raw = ctx.req.url;
    const qm = raw.indexOf('?');
    const rawPath = qm < 0 ? raw : raw.slice(0, qm);
    if (!rawPath.startsWith('/')) return next();
    const slash = rawPath.indexOf('/', 1);
    const bucket = percentDecode(slash < 0 ? rawPath.slice(1) : rawPath.slice(1, slash)).toString('utf8');
    const s = spaces.get(bucket);
    if (!s) return next();
    const q = synthQuery(qm < 0 ? '' : raw.slice(qm + 1));
    const keyBuf = slash < 0 ? Buffer.alloc(0) : percentDecode(rawPath.slice(slash + 1));
    const resource = '/' + bucket + (keyBuf.length ? '/' + keyBuf.toString('utf8') : '');
    try {
      if (keyBuf.length === 0) return await bucketRequest(ctx, s, q, resource);
      return objectRequest(ctx, s, q, keyBuf, resource);
    } catch (err) {
      process.stderr.write(`synthetic: ${ctx.method} ${raw}: ${err.stack || err.message}\n`);
      ctx.body = null;
      return fail(ctx, 500, 'InternalError', 'We encountered an internal error. Please try again.', resource);
    }
  }

  return { middleware, control, spaces };
}

// ---- main ----

function listen(server, port, address) {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, address, () => {
      server.removeListener('error', reject);
      resolve(server.address());
    });
  });
}

const hostOf = addr => (addr.family === 'IPv6' || addr.family === 6 ? `[${addr.address}]` : addr.address);

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  let S3rver;
  try {
    S3rver = require('s3rver');
    DUMMY_ACCOUNT = require('s3rver/lib/models/account').DUMMY_ACCOUNT;
  } catch (err) {
    process.stderr.write(
      `server.js: cannot load s3rver (run 'npm ci' in ${__dirname}): ${err.message}\n`,
    );
    process.exit(1);
  }
  fs.mkdirSync(opts.dir, { recursive: true });
  let tls = {};
  if (opts.tlsCert) {
    try {
      tls = { cert: fs.readFileSync(opts.tlsCert), key: fs.readFileSync(opts.tlsKey) };
    } catch (err) {
      usage(`cannot read the TLS certificate or key: ${err.message}`);
    }
  }

  const log = tag => msg => {
    if (opts.verbose) process.stderr.write(`${tag}: ${msg}\n`);
  };
  const keyring = createKeyring(opts, log('creds'));
  const faults = createFaults(opts.verbose);
  let synthetic;
  try {
    synthetic = createSynthetic(opts, log('synthetic'));
  } catch (err) {
    usage(err.message);
  }
  const auth = createAuth(opts, keyring);
  const creds = createCreds(opts, keyring, log('creds'));
  const authControl = (method, pathname) => {
    const ctx = { path: pathname, method, set type(v) {}, status: 200, body: '' };
    auth.control(ctx);
    return [ctx.status, ctx.body];
  };

  // The latency every S3 request waits (see the header).
  let latencyMs = 0;
  // The flag file follows latencyMs (written before the new value counts,
  // so the front never waits where nginx did not ask it to).
  function setLatency(ms) {
    if (opts.latencyFlag) {
      if (ms > 0) fs.writeFileSync(opts.latencyFlag, `${ms}\n`);
      else fs.rmSync(opts.latencyFlag, { force: true });
    }
    latencyMs = ms;
  }
  setLatency(opts.latencyMs);
  function latencyControl(ctx) {
    ctx.type = 'application/json';
    if (ctx.method === 'POST' || ctx.method === 'PUT') {
      const v = ctx.query.ms;
      if (typeof v !== 'string' || !/^\d+(\.\d+)?$/.test(v)) {
        ctx.status = 400;
        ctx.body = '{"error":"ms takes a number of milliseconds"}\n';
        return;
      }
      try {
        setLatency(Number(v));
      } catch (err) {
        ctx.status = 500;
        ctx.body = JSON.stringify({ error: `cannot write the latency flag: ${err.message}` }) + '\n';
        return;
      }
    } else if (ctx.method !== 'GET') {
      ctx.status = 405;
      ctx.body = '{"error":"method not allowed"}\n';
      return;
    }
    ctx.body = JSON.stringify({ ms: latencyMs }) + '\n';
  }
  async function latency(ctx, next) {
    if (latencyMs > 0) await new Promise(resolve => setTimeout(resolve, latencyMs));
    return next();
  }

  // The fast GET front's gate (see the header): the latency, then nginx
  // serves the bytes.
  // Control routes first: they are neither authenticated nor counted.
  async function controlRoutes(ctx, next) {
    const p = ctx.path;
    if (p === '/__fault' || p.startsWith('/__fault/')) return faults.control(ctx);
    if (p === '/__auth' || p.startsWith('/__auth/')) return auth.control(ctx);
    if (p === '/__synthetic' || p.startsWith('/__synthetic/')) return synthetic.control(ctx);
    if (p === '/__latency') return latencyControl(ctx);
    if (p === '/__creds' || p.startsWith('/__creds/')) {
      const [status, body] = creds.control(ctx.method, p, new URLSearchParams(ctx.querystring));
      ctx.status = status;
      ctx.type = 'application/json';
      ctx.body = body;
      return undefined;
    }
    return next();
  }

  const server = new S3rver(
    Object.assign(
      {
        address: opts.address,
        port: opts.port,
        directory: path.resolve(opts.dir),
        silent: !opts.verbose,
        resetOnClose: false,
      },
      tls,
    ),
  );
  // Koa composes app.middleware when the server starts: put ours first.
  // Synthetic buckets come after auth and faults, so their requests are
  // verified, can take injected faults and show in /__fault/stats.
  server.middleware.unshift(controlRoutes, latency, auth.middleware, faults.middleware, synthetic.middleware);
  if (!opts.verbose) server.on('error', () => {});

  let httpServer = null;
  let credsServer = null;
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    if (!httpServer) process.exit(0);
    let open = credsServer ? 2 : 1;
    const closed = () => {
      if (--open === 0) process.exit(0);
    };
    for (const s of [httpServer, credsServer]) {
      if (!s) continue;
      s.close(closed);
      if (typeof s.closeAllConnections === 'function') s.closeAllConnections();
    }
    setTimeout(() => process.exit(0), 2000).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
  process.on('SIGHUP', stop);
  // started by the re-exec wrapper: leave when the wrapper goes away
  if (process.send) process.on('disconnect', () => process.exit(0));

  const addr = await server.run();
  httpServer = server.httpServer;
  httpServer.keepAliveTimeout = 30000;
  let line = `ready ${opts.tlsCert ? 'https' : 'http'}://${hostOf(addr)}:${addr.port}`;
  if (opts.credentialsPort !== null) {
    credsServer = http.createServer((req, res) => {
      creds.handle(req, res, authControl).catch(err => {
        process.stderr.write(`server.js: credentials endpoint: ${err.message}\n`);
        if (!res.headersSent) res.writeHead(500);
        res.end();
      });
    });
    credsServer.keepAliveTimeout = 30000;
    const caddr = await listen(credsServer, opts.credentialsPort, opts.address);
    line += ` credentials http://${hostOf(caddr)}:${caddr.port}`;
  }
  process.stdout.write(line + '\n');
}

if (!hasDes()) {
  if (process.env.S3SERVER_REEXEC === '1') {
    process.stderr.write(
      'server.js: DES is unavailable even with --openssl-legacy-provider; ' +
        'ListObjectsV2 continuation tokens will fail\n',
    );
    process.exit(1);
  }
  reexecWithLegacyProvider();
} else {
  main().catch(err => {
    process.stderr.write(`server.js: ${err.message}\n`);
    process.exit(1);
  });
}
