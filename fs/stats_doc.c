/*
 * stats doc: the stats document's groups of counts, and making and reading
 * them (fs/stats_doc.h).
 */
#include "config.h"

#include "fs/stats_doc.h"

#include <limits.h>

#define GROUP(k, a)                                                            \
	{                                                                      \
		.key = (k), .names = (a), .n = sizeof(a) / sizeof(*(a))        \
	}

static const char *const root_names[ROOT_COUNTS] = {"pid", "stats_interval"};
static const char *const worker_names[WORKER_COUNTS] = {
    "keeper_pid", "generation", "restarts"};
static const char *const memory_names[MEMORY_COUNTS] = {"budget", "in_use",
							"peak"};
static const char *const cache_names[CACHE_COUNTS] = {
    "hits",	  "misses",  "prefetched", "evictions",
    "kept_bytes", "objects", "segments"};
static const char *const s3_names[S3_COUNTS] = {
    "requests", "gets_in_flight", "concurrency",    "retries",
    "failures", "throttled",	  "bytes_received", "credential_refreshes"};
static const char *const disk_names[DISK_COUNTS] = {
    "hits",	   "hit_bytes",	  "misses",	  "writes",
    "write_bytes", "write_drops", "write_errors", "bad_files",
    "evictions",   "files",	  "bytes",	  "size"};
static const char *const channel_names[CHANNEL_COUNTS] = {"visible"};
static const char *const catalog_names[CATALOG_COUNTS] = {"objects", "bytes"};
static const char *const tree_names[TREE_COUNTS] = {
    "files", "opens", "opens_prefetched", "orders", "prefetched", "released"};
static const char *const epoch_names[EPOCH_COUNTS] = {
    "epoch",	    "handles",		"bytes_delivered",
    "bytes_served", "bytes_per_second", "read_errors"};

const struct stats_group stats_root = GROUP(NULL, root_names);
const struct stats_group stats_worker = GROUP("worker", worker_names);
const struct stats_group stats_memory = GROUP("memory", memory_names);
const struct stats_group stats_cache = GROUP("cache", cache_names);
const struct stats_group stats_s3 = GROUP("s3", s3_names);
const struct stats_group stats_disk = GROUP("disk", disk_names);
const struct stats_group stats_channel = GROUP(NULL, channel_names);
const struct stats_group stats_catalog = GROUP("catalog", catalog_names);
const struct stats_group stats_tree = GROUP("tree", tree_names);
const struct stats_group stats_epoch = GROUP(NULL, epoch_names);

bool stats_group_put(const struct stats_group *g, json_t *obj,
		     const uint64_t *values)
{
	for (unsigned i = 0; i < g->n; i++) {
		uint64_t v = values[i];
		json_t *n = json_integer(
		    v > (uint64_t)LLONG_MAX ? LLONG_MAX : (json_int_t)v);

		if (!n || json_object_set_new(obj, g->names[i], n))
			return false;
	}
	return true;
}

json_t *stats_group_json(const struct stats_group *g, const uint64_t *values)
{
	json_t *o = json_object();

	if (o && !stats_group_put(g, o, values)) {
		json_decref(o);
		o = NULL;
	}
	return o;
}

bool stats_group_read(const struct stats_group *g, json_t *obj,
		      uint64_t *values, const char **bad)
{
	for (unsigned i = 0; i < g->n; i++) {
		json_t *v = obj ? json_object_get(obj, g->names[i]) : NULL;

		values[i] = 0;
		if (!v)
			continue;
		if (!json_is_integer(v) || json_integer_value(v) < 0) {
			*bad = g->names[i];
			return false;
		}
		values[i] = (uint64_t)json_integer_value(v);
	}
	return true;
}
