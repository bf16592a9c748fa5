/*
 * cache objects: the interned versions that blocks belong to.
 *
 * The object table maps (bucket, key, ETag, size) to one struct
 * cache_object, so that every stream naming a version shares its blocks:
 * an epoch in another order, a channel over the same data, a plan stream
 * built after the one that fetched them.  References come from segments,
 * blocks and holders outside (a channel's catalog); the last put takes the
 * object out of the table and frees it.  Resolving asks the store for a
 * key's size and ETag (a HEAD) and interns the answer.
 */
#include "config.h"

#include "cache/internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/util.h"

#define OBJECT_BUCKETS_MIN 1024

/* FNV-1a over the identity's parts, each ended by a 0 byte */
static uint64_t hash_bytes(uint64_t h, const char *s)
{
	if (s) {
		for (; *s; s++) {
			h ^= (unsigned char)*s;
			h *= 0x100000001B3ull;
		}
	}
	h ^= 0xff; /* NULL and "" differ from what follows */
	return h * 0x100000001B3ull;
}

static uint64_t object_hash(const char *bucket, const char *key,
			    const char *etag, uint64_t size)
{
	uint64_t h = 0xCBF29CE484222325ull;

	h = hash_bytes(h, bucket);
	h = hash_bytes(h, key);
	h = hash_bytes(h, etag);
	h ^= size;
	h *= 0x9E3779B97F4A7C15ull;
	return h ^ (h >> 29);
}

static bool str_eq0(const char *a, const char *b)
{
	if (!a || !b)
		return a == b;
	return strcmp(a, b) == 0;
}

static bool object_is(const struct cache_object *o, uint64_t hash,
		      const char *bucket, const char *key, const char *etag,
		      uint64_t size)
{
	return o->hash == hash && o->size == size && strcmp(o->key, key) == 0 &&
	       strcmp(o->bucket, bucket) == 0 && str_eq0(o->etag, etag);
}

static void table_grow(struct cache *c)
{
	size_t n =
	    c->nobject_buckets ? c->nobject_buckets * 2 : OBJECT_BUCKETS_MIN;
	struct cache_object **t = calloc(n, sizeof(*t));

	if (!t)
		return; /* longer chains, still correct */
	for (size_t i = 0; i < c->nobject_buckets; i++) {
		struct cache_object *o = c->objects[i];

		while (o) {
			struct cache_object *next = o->hash_next;
			size_t h = (size_t)o->hash & (n - 1);

			o->hash_next = t[h];
			t[h] = o;
			o = next;
		}
	}
	free(c->objects);
	c->objects = t;
	c->nobject_buckets = n;
}

/* A fresh object with its names (bucket, key, ETag) in the same
 * record, a slot of the cache's slabs: a small object's record is one
 * allocation, not four. */
static struct cache_object *object_alloc(struct cache *c, const char *bucket,
					 const char *key, const char *etag)
{
	size_t lb = strlen(bucket) + 1, lk = strlen(key) + 1,
	       le = etag ? strlen(etag) + 1 : 0;
	struct cache_object *o =
	    cache_record_alloc(&c->slabs, sizeof(*o) + lb + lk + le);
	char *names;

	if (!o)
		return NULL;
	names = (char *)(o + 1);
	o->bucket = memcpy(names, bucket, lb);
	o->key = memcpy(names + lb, key, lk);
	o->etag = etag ? memcpy(names + lb + lk, etag, le) : NULL;
	return o;
}

size_t cache_object_bytes(const struct cache_object *o)
{
	return sizeof(*o) + strlen(o->bucket) + 1 + strlen(o->key) + 1 +
	       (o->etag ? strlen(o->etag) + 1 : 0);
}

/* (its names with it) */
static void object_free(struct cache *c, struct cache_object *o)
{
	cache_record_free(&c->slabs, o, cache_object_bytes(o));
}

struct cache_object *cache_object_intern(struct cache *c, const char *bucket,
					 const char *key, const char *etag,
					 uint64_t size)
{
	uint64_t hash = object_hash(bucket, key, etag, size);
	struct cache_object *o = NULL;
	size_t h;

	if (size > CACHE_OBJECT_SIZE_MAX)
		return NULL;
	if (c->nobject_buckets) {
		o = c->objects[(size_t)hash & (c->nobject_buckets - 1)];
		while (o && !object_is(o, hash, bucket, key, etag, size))
			o = o->hash_next;
		if (o) {
			o->refs++;
			return o;
		}
	}
	if (c->nobjects >= c->nobject_buckets)
		table_grow(c);
	if (!c->nobject_buckets)
		return NULL;
	o = object_alloc(c, bucket, key, etag);
	if (!o)
		return NULL;
	o->size = size;
	o->hash = hash;
	o->refs = 1;
	h = (size_t)hash & (c->nobject_buckets - 1);
	o->hash_next = c->objects[h];
	c->objects[h] = o;
	c->nobjects++;
	return o;
}

struct cache_object *cache_object_get(struct cache *c, const char *bucket,
				      const char *key, const char *etag,
				      uint64_t size)
{
	struct cache_object *o;

	pthread_mutex_lock(&c->lock);
	o = cache_object_intern(c, bucket, key, etag, size);
	pthread_mutex_unlock(&c->lock);
	return o;
}

void cache_object_ref(struct cache_object *o)
{
	o->refs++;
}

void cache_object_put(struct cache *c, struct cache_object *o)
{
	if (!o)
		return;
	pthread_mutex_lock(&c->lock);
	cache_object_unref(c, o);
	pthread_mutex_unlock(&c->lock);
}

void cache_object_unref(struct cache *c, struct cache_object *o)
{
	struct cache_object **pp;

	if (!o || --o->refs > 0)
		return;
	pp = &c->objects[(size_t)o->hash & (c->nobject_buckets - 1)];
	while (*pp && *pp != o)
		pp = &(*pp)->hash_next;
	if (*pp) {
		*pp = o->hash_next;
		c->nobjects--;
	}
	object_free(c, o);
}

uint64_t cache_object_size(const struct cache_object *o)
{
	return o->size;
}

const char *cache_object_bucket(const struct cache_object *o)
{
	return o->bucket;
}

const char *cache_object_key(const struct cache_object *o)
{
	return o->key;
}

const char *cache_object_etag(const struct cache_object *o)
{
	return o->etag;
}

int64_t cache_object_mtime(const struct cache_object *o)
{
	return o->mtime;
}

/* At cache_destroy: what is left (leaked references) goes. */
void cache_object_table_free(struct cache *c)
{
	for (size_t i = 0; i < c->nobject_buckets; i++) {
		struct cache_object *o = c->objects[i];

		while (o) {
			struct cache_object *next = o->hash_next;

			object_free(c, o);
			o = next;
		}
	}
	free(c->objects);
	c->objects = NULL;
	c->nobject_buckets = 0;
	c->nobjects = 0;
}

/* ---- resolving a key ---- */

struct resolve {
	struct cache *cache;
	char *bucket;
	char *key;
	cache_resolve_fn *done;
	void *arg;
};

/* Why a HEAD's answer of size bytes could not become an object. */
static void not_interned(struct store_error *err, uint64_t size)
{
	bool big = size > CACHE_OBJECT_SIZE_MAX;

	memset(err, 0, sizeof(*err));
	err->err = big ? EFBIG : ENOMEM;
	snprintf(err->message, sizeof(err->message), "%s",
		 big ? "the server gave a size past S3's largest object"
		     : "out of memory");
}

static void resolve_free(struct resolve *rs)
{
	free(rs->bucket);
	free(rs->key);
	free(rs);
}

static void head_done(void *arg, const struct store_object *head,
		      const struct store_error *err)
{
	struct resolve *rs = arg;
	struct cache *c = rs->cache;
	struct cache_object *o = NULL;
	struct store_error nomem;

	if (!err) {
		o = cache_object_get(c, rs->bucket, rs->key, head->etag,
				     head->size);
		if (!o) {
			not_interned(&nomem, head->size);
			err = &nomem;
		} else {
			pthread_mutex_lock(&c->lock);
			if (!o->mtime)
				o->mtime = head->mtime;
			pthread_mutex_unlock(&c->lock);
		}
	}
	rs->done(rs->arg, o, o ? NULL : err);
	resolve_free(rs);
}

int cache_object_resolve(struct cache *c, const char *bucket, const char *key,
			 cache_resolve_fn *done, void *arg)
{
	struct resolve *rs = calloc(1, sizeof(*rs));
	struct store_head req = {
	    .bucket = bucket,
	    .key = key,
	    .done = head_done,
	    .arg = rs,
	};
	int rc;

	if (!rs)
		return ENOMEM;
	rs->bucket = strdup(bucket);
	rs->key = strdup(key);
	if (!rs->bucket || !rs->key) {
		resolve_free(rs);
		return ENOMEM;
	}
	rs->cache = c;
	rs->done = done;
	rs->arg = arg;
	rc = store_head(c->store, &req);
	if (rc)
		resolve_free(rs);
	return rc;
}

int cache_object_resolve_sync(struct cache *c, const char *bucket,
			      const char *key, struct cache_object **out,
			      struct store_error *err)
{
	struct store_object head;
	int rc;

	*out = NULL;
	rc = store_head_sync(c->store, bucket, key, &head, err);
	if (rc)
		return rc;
	*out = cache_object_get(c, bucket, key, head.etag, head.size);
	if (!*out)
		not_interned(err, head.size);
	store_object_clear(&head);
	if (!*out)
		return err->err;
	return 0;
}

int cache_object_read_sync(struct cache *c, const struct cache_object *o,
			   char *buf, struct store_error *err)
{
	return store_get_sync(c->store, o->bucket, o->key, o->etag, buf,
			      (size_t)o->size, err);
}
