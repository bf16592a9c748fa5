#!/usr/bin/env node
// Local S3 server for the s3pipe integration tests: s3rver run as a library
// (it is a Koa app) with one fault-injection middleware placed first.
//
//   node server.js --dir DIR [--port PORT] [--address 127.0.0.1] [--verbose]
//
// Prints exactly one line "ready http://ADDRESS:PORT" on stdout once it is
// listening (port 0 or none = a free port), nothing else unless --verbose,
// and exits 0 on SIGTERM/SIGINT.
//
// Node 20's OpenSSL 3 has no DES, which s3rver uses for ListObjectsV2
// continuation tokens: without --openssl-legacy-provider every second page
// answers HTTP 500. If DES is missing this script re-executes itself with
// that flag (stdio inherited, signals forwarded, the child exits when the
// parent goes away).
//
// Fault control (same server; '_' cannot appear in a bucket name):
//   POST   /__fault?kind=K&count=N[&match=S][&after=B][&seconds=T][&status=C][&list=1]
//   DELETE /__fault            clear every armed fault
//   GET    /__fault            the armed faults (JSON)
//   GET    /__fault/stats      counters (JSON)
//   DELETE /__fault/stats      reset the counters
// A fault applies to the next N GET-object requests whose path contains S
// (raw or percent-decoded), or with list=1 to the next N ListObjects requests
// whose path or query contains S. Kinds:
//   status  answer &status=CODE (default 500) with an S3 XML error body
//           (503: SlowDown, otherwise InternalError unless the code maps)
//   cut     send the headers and B body bytes, then close the connection
//   stall   send B body bytes, stop sending for T seconds (default 30),
//           then close the connection
//   etag    replace the ETag response header with a different value
//   delay   wait T seconds (default 30) before answering at all; the event
//           records when the wait ended (answeredAt, ms since the epoch)
// Faults armed by separate POSTs queue up; a request takes the first armed
// fault that matches it.
'use strict';

const path = require('path');
const crypto = require('crypto');
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
    'usage: node server.js --dir DIR [--port PORT] [--address ADDR] [--verbose]\n',
  );
  process.exit(2);
}

function parseArgs(argv) {
  const opts = { dir: null, port: 0, address: '127.0.0.1', verbose: false };
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
      case '--port': {
        const v = need();
        if (!/^\d+$/.test(v) || Number(v) > 65535) usage(`bad port '${v}'`);
        opts.port = Number(v);
        break;
      }
      case '--address':
        opts.address = need();
        break;
      case '--verbose':
      case '-v':
        opts.verbose = true;
        break;
      case '--help':
      case '-h':
        usage(null);
        break;
      default:
        usage(`unknown argument '${arg}'`);
    }
  }
  if (!opts.dir) usage('--dir is required');
  return opts;
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
    requests: 0, // every S3 request (control requests excluded)
    gets: 0, // GET object
    heads: 0,
    lists: 0, // GET bucket with list-type
    rangeGets: 0, // GET object with a Range header
    ifMatch: 0, // requests carrying If-Match
    faultsFired: 0,
    fired: { status: 0, cut: 0, stall: 0, etag: 0, delay: 0 },
    // [{path, range, port, t}] of every GET object, in arrival order (t: ms
    // since the epoch)
    ranges: [],
    events: [], // [{kind, path, range, start, after, breakAt}] per fault fired
  };
}

function createFaults(verbose) {
  let armed = [];
  let stats = newStats();
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

  function safeDecode(s) {
    try {
      return decodeURIComponent(s);
    } catch (err) {
      return s;
    }
  }

  function matches(fault, ctx, type) {
    if (fault.count <= 0) return false;
    if (fault.list ? type !== 'list' : type !== 'object') return false;
    if (!fault.match) return true;
    const hay = [ctx.path, safeDecode(ctx.path)];
    if (type === 'list') hay.push(ctx.querystring, safeDecode(ctx.querystring));
    return hay.some(h => h.includes(fault.match));
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
      };
      if (fault.kind === 'status' && (fault.status < 400 || fault.status > 599))
        throw new Error(`bad status '${q.status}'`);
      if (fault.list && (kind === 'cut' || kind === 'stall' || kind === 'etag')) {
        // lists are small and built in memory: cut/stall still work on the
        // serialised body, etag has no meaning there
        if (kind === 'etag') throw new Error('etag faults apply to objects only');
      }
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
    const esc = s =>
      s.replace(/[<>&'"]/g, c => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', "'": '&apos;', '"': '&quot;' })[c]);
    return (
      '<?xml version="1.0" encoding="UTF-8"?>\n' +
      `<Error><Code>${code}</Code><Message>${esc(message)}</Message>` +
      `<Resource>${esc(safeDecode(ctx.path))}</Resource>` +
      `<RequestId>${crypto.randomBytes(8).toString('hex').toUpperCase()}</RequestId></Error>`
    );
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
    if (ctx.path === '/__fault' || ctx.path.startsWith('/__fault/')) {
      control(ctx);
      return;
    }
    const type = classify(ctx);
    stats.requests++;
    if (ctx.get('if-match')) stats.ifMatch++;
    if (type === 'object') {
      stats.gets++;
      if (ctx.get('range')) stats.rangeGets++;
      if (stats.ranges.length < MAX_LOG)
        stats.ranges.push({
          path: safeDecode(ctx.path),
          range: ctx.get('range') || null,
          port: ctx.req.socket.remotePort, // tells connections apart
          t: Date.now(),
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

  return { middleware };
}

// ---- main ----

async function main() {
  const opts = parseArgs(process.argv.slice(2));
  let S3rver;
  try {
    S3rver = require('s3rver');
  } catch (err) {
    process.stderr.write(
      `server.js: cannot load s3rver (run 'npm ci' in ${__dirname}): ${err.message}\n`,
    );
    process.exit(1);
  }
  const fs = require('fs');
  fs.mkdirSync(opts.dir, { recursive: true });

  const faults = createFaults(opts.verbose);
  const server = new S3rver({
    address: opts.address,
    port: opts.port,
    directory: path.resolve(opts.dir),
    silent: !opts.verbose,
    resetOnClose: false,
  });
  // Koa composes app.middleware when the server starts: put ours first.
  server.middleware.unshift(faults.middleware);
  if (!opts.verbose) server.on('error', () => {});

  let httpServer = null;
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    if (!httpServer) process.exit(0);
    httpServer.close(() => process.exit(0));
    if (typeof httpServer.closeAllConnections === 'function')
      httpServer.closeAllConnections();
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
  const host = addr.family === 'IPv6' || addr.family === 6 ? `[${addr.address}]` : addr.address;
  process.stdout.write(`ready http://${host}:${addr.port}\n`);
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
