#!/usr/bin/env python3
"""Checks the synthetic buckets of tests/s3server/server.js (standard library only).

usage: synthetic_check.py URL [--bucket NAME] [--full | --sample] [--sign AKID:SECRET]

URL is the server's "ready" address. The bucket must be one given with
--synthetic. With --full (the default when the bucket has at most 200,000
keys) the whole listing is read page by page and compared with the
/__synthetic/keys dump; with --sample (the default above that) only a few
pages at different start-after points are. Everything else (start-after,
prefixes, encoding-type=url, GET/HEAD/Range/If-Match, errors, the LIST delay
and its concurrency) is checked either way. Requests are anonymous; with
--sign a few more are SigV4-signed (header and presigned URL) with that key,
and a wrong signature must answer 403. Prints what it measured and "OK";
exits 1 on the first failed check.
"""

import argparse
import datetime
import hashlib
import hmac
import http.client
import json
import random
import sys
import threading
import time
import urllib.parse
import xml.etree.ElementTree as ET

NS_LOCAL = lambda tag: tag.rsplit('}', 1)[-1]  # noqa: E731 (match by local name)


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


class Client:
    """One keep-alive connection per thread."""

    def __init__(self, url):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port
        self.local = threading.local()

    def conn(self):
        c = getattr(self.local, 'c', None)
        if c is None:
            c = http.client.HTTPConnection(self.host, self.port, timeout=120)
            self.local.c = c
        return c

    def request(self, method, path, headers=None):
        for attempt in range(2):
            c = self.conn()
            try:
                c.request(method, path, headers=headers or {})
                r = c.getresponse()
                body = r.read()
                return r.status, {k.lower(): v for k, v in r.getheaders()}, body
            except (http.client.HTTPException, ConnectionError):
                c.close()
                self.local.c = None
                if attempt:
                    raise
        raise AssertionError('unreachable')


def qs(params):
    # %20 for a space and %2B for '+', as s3pipe sends them
    return urllib.parse.urlencode(params, quote_via=urllib.parse.quote, safe='')


def obj_path(bucket, key):
    return '/%s/%s' % (bucket, urllib.parse.quote(key, safe='/'))


def content(key, size):
    return (hashlib.md5(key.encode()).hexdigest() * (size // 32 + 1))[:size].encode()


def u8(s):
    return s.encode('utf-8')


class Checker:
    def __init__(self, url, bucket):
        self.cl = Client(url)
        self.bucket = bucket

    def json(self, method, path):
        st, _, body = self.cl.request(method, path)
        check(st == 200, '%s %s: HTTP %d %s' % (method, path, st, body[:200]))
        return json.loads(body)

    def dump(self, prefix='', start_after=None, limit=None):
        p = {'bucket': self.bucket, 'prefix': prefix}
        if start_after is not None:
            p['start-after'] = start_after
        if limit is not None:
            p['limit'] = limit
        st, _, body = self.cl.request('GET', '/__synthetic/keys?' + qs(p))
        check(st == 200, 'keys dump: HTTP %d' % st)
        out = []
        for line in body.decode('ascii').splitlines():
            k, size, etag = line.split('\t')
            out.append((urllib.parse.unquote(k), int(size), etag))
        return out

    def list_page(self, expect=200, **params):
        p = {'list-type': '2'}
        p.update({k.replace('_', '-'): v for k, v in params.items()})
        t0 = time.monotonic()
        st, _, body = self.cl.request('GET', '/%s?%s' % (self.bucket, qs(p)))
        dt = time.monotonic() - t0
        if expect != 200:
            check(st == expect, 'list %r: HTTP %d, expected %d' % (p, st, expect))
            return None
        check(st == 200, 'list %r: HTTP %d %s' % (p, st, body[:300]))
        root = ET.fromstring(body)
        check(NS_LOCAL(root.tag) == 'ListBucketResult', 'not a ListBucketResult')
        page = {'keys': [], 'dt': dt, 'raw': body}
        for el in root:
            tag = NS_LOCAL(el.tag)
            if tag == 'Contents':
                c = {NS_LOCAL(x.tag): x.text or '' for x in el}
                page['keys'].append((c['Key'], int(c['Size']), c['ETag']))
            else:
                page[tag] = el.text or ''
        url = page.get('EncodingType') == 'url'
        if url:
            page['keys'] = [(urllib.parse.unquote_plus(k), s, e) for k, s, e in page['keys']]
        check(int(page['KeyCount']) == len(page['keys']), 'KeyCount %s != %d' % (page['KeyCount'], len(page['keys'])))
        return page

    def list_all(self, prefix='', max_keys=1000, encoding=None):
        out, token, pages = [], None, 0
        while True:
            p = {'prefix': prefix, 'max_keys': str(max_keys)}
            if token:
                p['continuation_token'] = token
            if encoding:
                p['encoding_type'] = encoding
            page = self.list_page(**p)
            pages += 1
            out.extend(page['keys'])
            if page['IsTruncated'] != 'true':
                check('NextContinuationToken' not in page, 'NextContinuationToken on the last page')
                return out, pages
            check(len(page['keys']) == max_keys, 'truncated page with %d keys' % len(page['keys']))
            token = page['NextContinuationToken']

    def first_after(self, start_after, prefix=''):
        # url encoding: a start-after with a control character cannot be
        # echoed in plain XML 1.0 (S3 has the same limit)
        page = self.list_page(prefix=prefix, start_after=start_after, max_keys='1', encoding_type='url')
        return page['keys'][0][0] if page['keys'] else None


def sigv4(method, path, params, host, akid, secret, presign=False, region='us-east-1'):
    """(path?query, headers) of a SigV4-signed request; path already %-encoded."""
    now = datetime.datetime.now(datetime.timezone.utc)
    amz_date, date = now.strftime('%Y%m%dT%H%M%SZ'), now.strftime('%Y%m%d')
    scope = '%s/%s/s3/aws4_request' % (date, region)
    enc = lambda v: urllib.parse.quote(v, safe='-_.~')  # noqa: E731
    params = dict(params)
    headers = {'host': host}
    if presign:
        params.update({'X-Amz-Algorithm': 'AWS4-HMAC-SHA256', 'X-Amz-Credential': '%s/%s' % (akid, scope),
                       'X-Amz-Date': amz_date, 'X-Amz-Expires': '300', 'X-Amz-SignedHeaders': 'host'})
        payload = 'UNSIGNED-PAYLOAD'
    else:
        payload = hashlib.sha256(b'').hexdigest()
        headers.update({'x-amz-date': amz_date, 'x-amz-content-sha256': payload})
    query = '&'.join('%s=%s' % (enc(k), enc(v)) for k, v in sorted(params.items()))
    signed = ';'.join(sorted(headers))
    canonical = '\n'.join([method, path, query, ''.join('%s:%s\n' % (h, headers[h]) for h in sorted(headers)),
                           signed, payload])
    to_sign = '\n'.join(['AWS4-HMAC-SHA256', amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()])
    k = ('AWS4' + secret).encode()
    for part in (date, region, 's3', 'aws4_request'):
        k = hmac.new(k, part.encode(), hashlib.sha256).digest()
    sig = hmac.new(k, to_sign.encode(), hashlib.sha256).hexdigest()
    if presign:
        query += '&X-Amz-Signature=' + sig
        return path + '?' + query, {}
    headers['Authorization'] = 'AWS4-HMAC-SHA256 Credential=%s/%s, SignedHeaders=%s, Signature=%s' % (
        akid, scope, signed, sig)
    del headers['host']  # http.client sends the same Host
    return path + ('?' + query if query else ''), headers


def check_signed(ck, bucket, akid, secret, objs):
    host = '%s:%d' % (ck.cl.host, ck.cl.port)
    before = ck.json('GET', '/__fault/stats')
    params = {'list-type': '2', 'max-keys': '5', 'prefix': 'data/with space+plus/', 'encoding-type': 'url'}
    url, h = sigv4('GET', '/' + bucket, params, host, akid, secret)
    st, _, body = ck.cl.request('GET', url, h)
    check(st == 200 and b'<KeyCount>5</KeyCount>' in body, 'signed list: HTTP %d %s' % (st, body[:300]))
    tricky = [o for o in objs if '+' in o[0] or not o[0].isascii()][:4] + objs[:2]
    for key, size, etag in tricky:
        path = obj_path(bucket, key)
        for presign in (False, True):
            url, h = sigv4('GET', path, {}, host, akid, secret, presign=presign)
            st, rh, body = ck.cl.request('GET', url, h)
            check(st == 200 and body == content(key, size) and rh.get('etag') == etag,
                  'signed GET %r (presigned %s): HTTP %d %s' % (key, presign, st, body[:300]))
        url, h = sigv4('HEAD', path, {}, host, akid, secret)
        st, rh, _ = ck.cl.request('HEAD', url, h)
        check(st == 200 and int(rh['content-length']) == size, 'signed HEAD %r: HTTP %d' % (key, st))
    url, h = sigv4('GET', obj_path(bucket, objs[0][0]), {}, host, akid, secret + 'x')
    st, _, body = ck.cl.request('GET', url, h)
    check(st == 403 and b'SignatureDoesNotMatch' in body, 'wrong secret: HTTP %d' % st)
    after = ck.json('GET', '/__fault/stats')
    check(after['lists'] > before['lists'] and after['gets'] > before['gets'] and after['heads'] > before['heads'],
          '/__fault/stats must count signed synthetic requests')
    print('SigV4: signed list, signed and presigned GET, signed HEAD work; a wrong signature is 403')


def strictly_increasing(keys):
    b = [u8(k) for k in keys]
    return all(x < y for x, y in zip(b, b[1:]))


def run(args):
    ck = Checker(args.url, args.bucket)
    state = ck.json('GET', '/__synthetic')
    check(args.bucket in state['buckets'], 'no synthetic bucket %r: %r' % (args.bucket, state['buckets']))
    n = state['buckets'][args.bucket]['keys']
    full = args.full or (not args.sample and n <= 200000)
    print('bucket %s: %d keys, delay %s ms, %s' % (args.bucket, n, state['delay'], 'full listing' if full else 'sampled'))
    delay0 = state['delay']
    # the correctness checks run without delay; the delay is checked at the
    # end; the server's delay is put back whatever happens
    ck.json('POST', '/__synthetic?delay=0')
    try:
        checks(ck, args, n, full, delay0)
    finally:
        ck.json('POST', '/__synthetic?delay=%s' % delay0)


def checks(ck, args, n, full, delay0):
    ck.json('DELETE', '/__synthetic/stats')

    # ---- ground truth and the full listing ----
    t0 = time.monotonic()
    if full:
        truth = ck.dump()
        check(len(truth) == n, 'dump has %d keys, not %d' % (len(truth), n))
    else:
        truth = None
    keys = [k for k, _, _ in truth] if truth else None
    if truth:
        print('dump: %d keys in %.2f s' % (len(truth), time.monotonic() - t0))
        check(strictly_increasing(keys), 'dump keys not strictly increasing in UTF-8 byte order')
        check(all(k.startswith('data/') for k in keys), 'a key outside data/')
        listed, pages = ck.list_all()
        check(listed == truth, 'paged listing differs from the dump')
        print('full listing: %d pages of up to 1000, equal to the dump' % pages)
        # uneven sizes: empty objects, large ones, folder marker
        sizes = [s for _, s, _ in truth]
        check(any(s == 0 for s in sizes), 'no empty object')
        if n >= 5000:
            check(any(s >= 65536 for s in sizes), 'no object of 64 KiB or more')
        d = {k: (s, e) for k, s, e in truth}
        if n >= 100:
            for lit in ('data/ext/k', 'data/ext/k0', 'data/ext/k00', 'data/last/a', 'data/last/b', 'data/dir/'):
                check(lit in d, 'literal key %r missing' % lit)
            check(d['data/dir/'][0] == 0, 'folder marker not empty')
        # small pages and max-keys=0
        small, pages = ck.list_all(prefix='data/ext/', max_keys=1)
        check([k for k, _, _ in small] == ['data/ext/k', 'data/ext/k0', 'data/ext/k00'], 'data/ext/ by pages of 1: %r' % small)
    else:
        sample = [ck.dump(start_after=sa, limit=1000) for sa in ('', 'data/img/train/n01/5', 'data/\u00f1/', 'data/\u65e5')]
        for i, sa in enumerate(('', 'data/img/train/n01/5', 'data/\u00f1/', 'data/\u65e5')):
            page = ck.list_page(start_after=sa, max_keys='1000') if sa else ck.list_page(max_keys='1000')
            check(page['keys'] == sample[i], 'page after %r differs from the dump' % sa)
            check(strictly_increasing([k for k, _, _ in page['keys']]), 'page after %r not increasing' % sa)
            # and its continuation
            nxt = ck.list_page(max_keys='1000', continuation_token=page['NextContinuationToken'])
            want = ck.dump(start_after=page['keys'][-1][0], limit=1000)
            check(nxt['keys'] == want, 'continuation after %r differs' % sa)
        print('sampled pages at 4 start-after points and their continuations equal the dump')
    page0 = ck.list_page(max_keys='0')
    check(page0['keys'] == [] and page0['IsTruncated'] == 'false', 'max-keys=0: %r' % page0)

    # ---- start-after ----
    if keys:
        mid = len(keys) // 2
        check(ck.first_after(keys[mid]) == keys[mid + 1], 'start-after the middle key')
        # a start-after that is not a key: the next key after it
        check(ck.first_after(keys[mid] + '\x00') == keys[mid + 1], 'start-after key+NUL')
        check(ck.first_after(keys[-1]) is None, 'start-after the last key')
    if n >= 100:
        check(ck.first_after('data/ext/k') == 'data/ext/k0', 'start-after data/ext/k')
        check(ck.first_after('data/ext/k0') == 'data/ext/k00', 'start-after data/ext/k0')
        check(ck.first_after('data/ext/k\x00') == 'data/ext/k0', 'start-after data/ext/k NUL')
        check(ck.first_after('data/last/a') == 'data/last/b', 'start-after data/last/a')
        check(ck.first_after('data/dir/') == 'data/dir/inside', 'start-after data/dir/')
    # UTF-8 vs UTF-16 order: after the katakana group comes the emoji group
    after_kana = ck.first_after('data/\uff76\uff80\uff76\uff85/\uffff')
    check(after_kana is not None and after_kana.startswith('data/\U0001f600/'), 'after the katakana group: %r' % after_kana)
    # continuation-token wins over start-after
    p1 = ck.list_page(max_keys='2')
    p2 = ck.list_page(max_keys='2', start_after='data/\u00ff/', continuation_token=p1['NextContinuationToken'])
    want = ck.dump(start_after=p1['keys'][-1][0], limit=2)
    check(p2['keys'] == want, 'continuation-token must win over start-after')
    check(p2.get('StartAfter') == 'data/\u00ff/', 'StartAfter not echoed')

    # ---- prefixes ----
    for prefix in ('data/\u00f1/', 'data/\U0001f600/', 'data/with space+plus/', 'data/ext/k', 'data/img/train/n02/',
                   'data/\u65e5\u672c/', 'data/zzz/', 'data/a/b/c/d/e/f/g/'):
        want = ck.dump(prefix=prefix)
        if truth is not None:
            check(want == [t for t in truth if u8(t[0]).startswith(u8(prefix))], 'dump prefix %r' % prefix)
        if len(want) <= 20000:
            got, _ = ck.list_all(prefix=prefix)
            check(got == want, 'listing with prefix %r: %d keys, dump %d' % (prefix, len(got), len(want)))
        else:
            got = ck.list_page(prefix=prefix)['keys']
            check(got == want[:1000], 'first page with prefix %r' % prefix)
        check(prefix != 'data/ext/k' or n < 100 or [k for k, _, _ in want] == ['data/ext/k', 'data/ext/k0', 'data/ext/k00'],
              'prefix data/ext/k')
    print('prefixes (2-, 3-, 4-byte UTF-8, space and plus, an extension, none) match the dump')

    # ---- encoding-type=url ----
    for prefix in ('', 'data/with space+plus/', 'data/\U0001f600/', 'data/\u00ff/'):
        plain = ck.list_page(prefix=prefix, max_keys='300')
        enc = ck.list_page(prefix=prefix, max_keys='300', encoding_type='url')
        check(enc['keys'] == plain['keys'], 'encoding-type=url keys differ (prefix %r)' % prefix)
        check(urllib.parse.unquote_plus(enc['Prefix']) == prefix, 'encoded Prefix %r' % enc['Prefix'])
    raw = ck.list_page(prefix='data/with space+plus/', max_keys='1', encoding_type='url', start_after='data/with space')['raw']
    check(b'<Key>data/with+space%2Bplus/' in raw, 'space must be + and + must be %%2B: %r' % raw[:400])
    check(b'<StartAfter>data/with+space</StartAfter>' in raw, 'StartAfter not encoded')
    print('encoding-type=url decodes (unquote_plus) to the same keys')

    # ---- objects ----
    if truth:
        objs = truth
    else:
        objs = []
        for sa in ('', 'data/img/train/n01/3', 'data/\u00f1/', 'data/\u65e5', 'data/\U0001f600/', 'data/with'):
            objs += ck.dump(start_after=sa, limit=300)
    rnd = random.Random(7)
    pick = rnd.sample(objs, min(150, len(objs)))
    pick += [o for o in objs if o[1] == 0][:3] + [o for o in objs if o[1] >= 65536][:3]
    pick += [o for o in objs if o[0] in ('data/ext/k', 'data/ext/k0', 'data/dir/', 'data/last/b')]
    for key, size, etag in pick:
        path = obj_path(args.bucket, key)
        st, h, body = ck.cl.request('GET', path)
        check(st == 200, 'GET %r: HTTP %d' % (key, st))
        check(body == content(key, size), 'GET %r: bytes differ from the formula' % key)
        check(h.get('etag') == etag, 'GET %r: ETag %r, listed %r' % (key, h.get('etag'), etag))
        check(h.get('content-type') == 'application/octet-stream', 'Content-Type %r' % h.get('content-type'))
        check(h.get('accept-ranges') == 'bytes' and 'last-modified' in h, 'headers %r' % h)
        st, h, body = ck.cl.request('HEAD', path)
        check(st == 200 and body == b'' and int(h['content-length']) == size, 'HEAD %r: %d %r' % (key, st, h))
        check(h.get('etag') == etag, 'HEAD %r: ETag' % key)
        if size > 0:
            a = rnd.randrange(size)
            b = rnd.randrange(a, size + 10)
            st, h, body = ck.cl.request('GET', path, {'Range': 'bytes=%d-%d' % (a, b)})
            check(st == 206, 'Range GET %r: HTTP %d' % (key, st))
            check(body == content(key, size)[a:b + 1], 'Range %d-%d of %r: wrong bytes' % (a, b, key))
            check(h.get('content-range') == 'bytes %d-%d/%d' % (a, min(b, size - 1), size), 'Content-Range %r' % h.get('content-range'))
            st, h, body = ck.cl.request('GET', path, {'Range': 'bytes=%d-' % a})
            check(st == 206 and body == content(key, size)[a:], 'open Range of %r' % key)
            st, h, body = ck.cl.request('GET', path, {'Range': 'bytes=-7'})
            check(st == 206 and body == content(key, size)[-7:], 'suffix Range of %r' % key)
        st, _, _ = ck.cl.request('GET', path, {'Range': 'bytes=%d-' % size})
        check(st == 416, 'Range past the end of %r: HTTP %d' % (key, st))
        st, _, body = ck.cl.request('GET', path, {'If-Match': etag})
        check(st == 200 and body == content(key, size), 'If-Match equal: HTTP %d' % st)
        st, _, body = ck.cl.request('GET', path, {'If-Match': '"0123456789abcdef0123456789abcdef"'})
        check(st == 412 and b'PreconditionFailed' in body, 'If-Match mismatch: HTTP %d' % st)
    print('GET/HEAD/Range/If-Match on %d objects: bytes, sizes and ETags as listed' % len(pick))

    # missing keys: not in the bucket, a number past the group, a near miss
    for key in ('data/nope', 'data/img/train/n01/9999999999.JPEG', 'data/ext/k000', 'data/dir', 'data/ext/K'):
        st, _, body = ck.cl.request('GET', obj_path(args.bucket, key))
        check(st == 404 and b'<Code>NoSuchKey</Code>' in body, 'GET missing %r: HTTP %d' % (key, st))
        st, _, body = ck.cl.request('HEAD', obj_path(args.bucket, key))
        check(st == 404 and body == b'', 'HEAD missing %r: HTTP %d' % (key, st))
    # '+' in a path is a plus, not a space
    plus = [o for o in objs if '+' in o[0]]
    if plus:
        k = plus[0][0]
        st, _, _ = ck.cl.request('GET', '/%s/%s' % (args.bucket, urllib.parse.quote(k, safe='/+')))
        check(st == 200, 'a raw + in the path must be a plus: HTTP %d' % st)
        st, _, _ = ck.cl.request('GET', '/%s/%s' % (args.bucket, urllib.parse.quote(k.replace('+', ' '), safe='/')))
        check(st == 404, 'a space instead of + must not match: HTTP %d' % st)

    # ---- errors ----
    ck.list_page(expect=400, continuation_token='not-a-token')
    ck.list_page(expect=400, max_keys='-1')
    ck.list_page(expect=400, encoding_type='base64')
    ck.list_page(expect=501, delimiter='/')
    st, _, _ = ck.cl.request('PUT', obj_path(args.bucket, 'data/new'))
    check(st == 405, 'PUT: HTTP %d' % st)
    st, _, _ = ck.cl.request('DELETE', obj_path(args.bucket, 'data/ext/k'))
    check(st == 405, 'DELETE: HTTP %d' % st)
    st, _, _ = ck.cl.request('HEAD', '/%s' % args.bucket)
    check(st == 200, 'HEAD bucket: HTTP %d' % st)
    print('errors: bad token 400, bad max-keys 400, delimiter 501, PUT/DELETE 405, HEAD bucket 200')

    if args.sign:
        akid, _, secret = args.sign.partition(':')
        check_signed(ck, args.bucket, akid, secret, objs)

    stats = ck.json('GET', '/__synthetic/stats')
    check(stats['lists'] > 0 and stats['gets'] > 0 and stats['heads'] > 0 and stats['listKeys'] > 0, 'stats %r' % stats)

    # ---- speed of one page without delay ----
    times = []
    for i in range(20):
        sa = keys[rnd.randrange(len(keys))] if keys else 'data/img/train/n01/%07d' % rnd.randrange(n)
        times.append(ck.list_page(start_after=sa)['dt'])
    times.sort()
    print('one 1000-key page, no delay: median %.1f ms, max %.1f ms (wall, client included)' % (
        times[len(times) // 2] * 1000, times[-1] * 1000))

    # ---- the delay, and its concurrency ----
    delay = delay0 if delay0 >= 20 else 100
    ck.json('POST', '/__synthetic?delay=%s' % delay)
    d = ck.list_page(max_keys='10')['dt']
    check(d >= delay / 1000.0, 'a page took %.1f ms, below the %s ms delay' % (d * 1000, delay))
    errors = []

    def one(i):
        try:
            ck.list_page(max_keys='10', start_after='data/%d' % i)
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(20)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    total = time.monotonic() - t0
    check(not errors, 'concurrent pages: %r' % errors[:1])
    check(total >= delay / 1000.0, '20 concurrent pages in %.1f ms, below one delay' % (total * 1000))
    check(total < 20 * delay / 1000.0 / 3, '20 concurrent pages took %.1f ms: served one after another (delay %s ms)'
          % (total * 1000, delay))
    print('delay %s ms: one page %.1f ms, 20 concurrent pages %.1f ms' % (delay, d * 1000, total * 1000))
    print('OK')


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('url')
    ap.add_argument('--bucket', default='synth')
    g = ap.add_mutually_exclusive_group()
    g.add_argument('--full', action='store_true')
    g.add_argument('--sample', action='store_true')
    ap.add_argument('--sign', metavar='AKID:SECRET', help='also check SigV4-signed requests with this key')
    args = ap.parse_args()
    try:
        run(args)
    except Fail as e:
        print('FAIL: %s' % e, file=sys.stderr)
        sys.exit(1)


if __name__ == '__main__':
    main()
