/*
 * endpoints: Docker's volume plugin protocol, one handler per path.
 *
 *   /Plugin.Activate             -> {"Implements": ["VolumeDriver"]}
 *   /VolumeDriver.Create         {Name, Opts}  -> {Err}
 *   /VolumeDriver.Remove         {Name}        -> {Err}
 *   /VolumeDriver.Mount          {Name, ID}    -> {Mountpoint, Err}
 *   /VolumeDriver.Unmount        {Name, ID}    -> {Err}
 *   /VolumeDriver.Path           {Name}        -> {Mountpoint, Err}
 *   /VolumeDriver.Get            {Name}        -> {Volume, Err}
 *   /VolumeDriver.List           {}            -> {Volumes, Err}
 *   /VolumeDriver.Capabilities   {}            -> {Capabilities: {Scope}}
 *
 * Every answer of a known path is HTTP 200; a failure is a non-empty Err
 * (Docker's volume adapter reads Err from the body whatever the status,
 * and with 200 shows it without a prefix of its own).  An unknown path is
 * 404, also with Err.  Each request is logged in one line: the path, the
 * volume and mount ID it names, the outcome and how long it took; never
 * an option's value.
 */
#include "config.h"

#include "contrib/docker/plugin.h"
#include "util/util.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* What a handler is given: the request, and the answer to fill. */
struct call {
	struct plugin_volumes *t;
	json_t *req;
	json_t *reply;	  /* fields of a successful answer */
	const char *name; /* "Name", when the path needs it */
	const char *id;	  /* "ID", when the path needs it */
	char err[PLUGIN_ERR_MAX];
};

struct endpoint {
	const char *path;
	bool name; /* needs Name */
	bool id;   /* needs ID */
	bool err;  /* the answer carries Err */
	int (*fn)(struct call *c);
};

json_t *plugin_err_reply(const char *msg)
{
	return json_pack("{s:s}", "Err", msg);
}

/* A field of the request that must be a string of 1..max bytes with no
 * NUL; NULL with c->err set otherwise. */
static const char *req_string(struct call *c, const char *key, size_t max)
{
	json_t *v = json_object_get(c->req, key);
	size_t len = json_string_length(v);

	if (!json_is_string(v) || len == 0) {
		util_fail(c->err, sizeof(c->err), EINVAL, "%s is missing", key);
		return NULL;
	}
	if (len > max || strlen(json_string_value(v)) != len) {
		util_fail(c->err, sizeof(c->err), EINVAL,
			  "%s is longer than %zu bytes or holds a NUL", key,
			  max);
		return NULL;
	}
	return json_string_value(v);
}

static int set_new(struct call *c, const char *key, json_t *value)
{
	if (!value || json_object_set_new(c->reply, key, value) != 0)
		return util_fail(c->err, sizeof(c->err), ENOMEM,
				 "out of memory");
	return 0;
}

/* Sets "Mountpoint" to mp and frees it. */
static int set_mountpoint(struct call *c, char *mp)
{
	int rc = set_new(c, "Mountpoint", json_string(mp));

	free(mp);
	return rc;
}

static int activate(struct call *c)
{
	return set_new(c, "Implements", json_pack("[s]", "VolumeDriver"));
}

static int capabilities(struct call *c)
{
	return set_new(c, "Capabilities", json_pack("{s:s}", "Scope", "local"));
}

static int create(struct call *c)
{
	json_t *opts = json_object_get(c->req, "Opts");
	json_t *empty = NULL;
	int rc;

	if (!opts || json_is_null(opts))
		opts = empty = json_object();
	if (!json_is_object(opts))
		rc = util_fail(c->err, sizeof(c->err), EINVAL,
			       "Opts must be an object of strings");
	else
		rc = plugin_volumes_add(c->t, c->name, opts, c->err,
					sizeof(c->err));
	json_decref(empty);
	return rc;
}

static int remove_volume(struct call *c)
{
	return plugin_volumes_remove(c->t, c->name, c->err, sizeof(c->err));
}

static int mount(struct call *c)
{
	char *mp = NULL;
	int rc = plugin_volumes_mount(c->t, c->name, c->id, &mp, c->err,
				      sizeof(c->err));

	return rc ? rc : set_mountpoint(c, mp);
}

static int unmount(struct call *c)
{
	return plugin_volumes_unmount(c->t, c->name, c->id, c->err,
				      sizeof(c->err));
}

static int path(struct call *c)
{
	char *mp = NULL;
	int rc =
	    plugin_volumes_path(c->t, c->name, &mp, c->err, sizeof(c->err));

	return rc ? rc : set_mountpoint(c, mp);
}

static int get(struct call *c)
{
	json_t *v = NULL;
	int rc = plugin_volumes_get(c->t, c->name, &v, c->err, sizeof(c->err));

	return rc ? rc : set_new(c, "Volume", v);
}

static int list(struct call *c)
{
	json_t *a = NULL;
	int rc = plugin_volumes_list(c->t, &a, c->err, sizeof(c->err));

	return rc ? rc : set_new(c, "Volumes", a);
}

static const struct endpoint endpoints[] = {
    {"/Plugin.Activate", false, false, false, activate},
    {"/VolumeDriver.Capabilities", false, false, false, capabilities},
    {"/VolumeDriver.Create", true, false, true, create},
    {"/VolumeDriver.Remove", true, false, true, remove_volume},
    {"/VolumeDriver.Mount", true, true, true, mount},
    {"/VolumeDriver.Unmount", true, true, true, unmount},
    {"/VolumeDriver.Path", true, false, true, path},
    {"/VolumeDriver.Get", true, false, true, get},
    {"/VolumeDriver.List", false, false, true, list},
};

static const struct endpoint *route(const char *path)
{
	for (size_t i = 0; i < sizeof(endpoints) / sizeof(endpoints[0]); i++)
		if (strcmp(endpoints[i].path, path) == 0)
			return &endpoints[i];
	return NULL;
}

static void log_outcome(const char *path, const struct call *c, int rc,
			uint64_t start_ns)
{
	uint64_t ms = (util_now_ns() - start_ns) / 1000000;

	util_info("%s%s%s%s%s%s: %s%s (%llu ms)", path + 1, c->name ? " '" : "",
		  c->name ? c->name : "", c->name ? "'" : "",
		  c->id ? " id " : "", c->id ? c->id : "",
		  rc ? "refused: " : "ok", rc ? c->err : "",
		  (unsigned long long)ms);
}

unsigned plugin_endpoint(struct plugin_volumes *t, const char *path,
			 json_t *req, json_t **reply)
{
	const struct endpoint *e = route(path);
	struct call c = {.t = t, .req = req};
	uint64_t start = util_now_ns();
	int rc = 0;

	if (!e) {
		util_fail(c.err, sizeof(c.err), ENOENT,
			  "unknown endpoint '%.100s'", path);
		util_warn("%.100s: refused: %s", path, c.err);
		*reply = plugin_err_reply(c.err);
		return 404;
	}
	c.reply = json_object();
	if (!c.reply) {
		*reply = NULL;
		return 500;
	}
	if (e->name) {
		c.name = req_string(&c, "Name", PLUGIN_NAME_MAX);
		rc = c.name ? 0 : EINVAL;
	}
	if (!rc && e->id) {
		c.id = req_string(&c, "ID", PLUGIN_ID_MAX);
		rc = c.id ? 0 : EINVAL;
	}
	if (!rc)
		rc = e->fn(&c);
	log_outcome(e->path, &c, rc, start);
	if (rc) {
		json_decref(c.reply);
		*reply = plugin_err_reply(c.err);
	} else {
		*reply = c.reply;
		if (e->err &&
		    json_object_set_new(*reply, "Err", json_string("")) != 0) {
			json_decref(*reply);
			*reply = NULL;
		}
	}
	return 200;
}
