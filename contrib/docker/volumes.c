/*
 * volumes: the table of the plugin's volumes, and what each request does
 * to it.
 *
 * A volume is mounted while it has mount IDs (Docker sends one per
 * container that uses it): the first Mount starts s3pipe on
 * STATE/mounts/NAME, later ones only add their ID (the same ID twice
 * counts once), and the Unmount of the last ID stops it.  Every change of
 * the IDs is written to STATE/volumes/NAME.json before the answer, so that
 * a restarted plugin knows which mounts are in use.
 *
 * Locking: one mutex over the table and every record in it, held only for
 * quick work (lookups, the state file's write).  Starting or stopping a
 * daemon takes seconds, up to PLUGIN_MOUNT_TIMEOUT: for that the volume is
 * marked busy and the mutex released, so requests for other volumes, and
 * Get, Path and List of this one, go on; Mount, Unmount and Remove of a
 * busy volume wait (on `changed`) until it is idle.  Only Remove frees a
 * record, and only an idle one, so a busy record stays valid while its
 * owner works unlocked.
 *
 * At start-up the records are loaded and checked against what is really
 * there (plugin_volumes_create()), before any request is served.
 */
#include "config.h"

#include "contrib/docker/plugin.h"
#include "util/util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

struct plugin_volumes {
	char *s3pipe;	   /* owned */
	char *volumes_dir; /* owned: STATE/volumes, the records */
	char *mounts_dir;  /* owned: STATE/mounts, the mountpoints */
	char *run_dir;	   /* owned: STATE/run, the daemons' pid files */
	int lock_fd;	   /* STATE/lock, flock()ed while the table lives */
	pthread_mutex_t lock;
	pthread_cond_t changed;	    /* a volume stopped being busy */
	struct plugin_volume *head; /* in name order */
};

/* ---- paths ---- */

static char *path_join(const char *dir, const char *name, const char *ext)
{
	char *p = NULL;

	if (asprintf(&p, "%s/%s%s", dir, name, ext) < 0)
		return NULL;
	return p;
}

static char *mountpoint_of(const struct plugin_volumes *t, const char *name)
{
	return path_join(t->mounts_dir, name, "");
}

/* Where a volume's daemon works: its mountpoint and its pid file. */
struct where {
	char *mp;	/* owned: STATE/mounts/NAME */
	char *pid_file; /* owned: STATE/run/NAME.pid */
};

static void where_free(struct where *w)
{
	free(w->mp);
	free(w->pid_file);
	w->mp = NULL;
	w->pid_file = NULL;
}

static int where_of(const struct plugin_volumes *t, const char *name,
		    struct where *w, char *err, size_t errlen)
{
	w->mp = mountpoint_of(t, name);
	w->pid_file = path_join(t->run_dir, name, ".pid");
	if (w->mp && w->pid_file)
		return 0;
	where_free(w);
	return util_fail(err, errlen, ENOMEM, "out of memory");
}

/* mkdir -p with mode for the last component */
static int make_dir(const char *path, mode_t mode)
{
	char *copy = strdup(path);
	int rc = 0;

	if (!copy)
		return ENOMEM;
	for (char *p = copy + 1; *p && !rc; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(copy, 0755) != 0 && errno != EEXIST)
			rc = errno;
		*p = '/';
	}
	if (!rc && mkdir(copy, mode) != 0 && errno != EEXIST)
		rc = errno;
	free(copy);
	return rc;
}

/* ---- the table ---- */

static struct plugin_volume *find(const struct plugin_volumes *t,
				  const char *name)
{
	for (struct plugin_volume *v = t->head; v; v = v->next)
		if (strcmp(v->name, name) == 0)
			return v;
	return NULL;
}

static void insert(struct plugin_volumes *t, struct plugin_volume *v)
{
	struct plugin_volume **p = &t->head;

	while (*p && strcmp((*p)->name, v->name) < 0)
		p = &(*p)->next;
	v->next = *p;
	*p = v;
}

static void unlink_volume(struct plugin_volumes *t, struct plugin_volume *v)
{
	for (struct plugin_volume **p = &t->head; *p; p = &(*p)->next) {
		if (*p == v) {
			*p = v->next;
			v->next = NULL;
			return;
		}
	}
}

static int no_such_volume(const char *name, char *err, size_t errlen)
{
	return util_fail(err, errlen, ENOENT, "volume '%s' does not exist",
			 name);
}

/*
 * With t->lock held: the volume named name, once no mount or unmount of
 * it is under way (the lock is released while waiting); NULL with err set
 * when there is none.
 */
static struct plugin_volume *
find_idle(struct plugin_volumes *t, const char *name, char *err, size_t errlen)
{
	for (;;) {
		struct plugin_volume *v = find(t, name);

		if (!v) {
			no_such_volume(name, err, errlen);
			return NULL;
		}
		if (!v->busy)
			return v;
		pthread_cond_wait(&t->changed, &t->lock);
	}
}

static void set_idle(struct plugin_volumes *t, struct plugin_volume *v)
{
	v->busy = false;
	pthread_cond_broadcast(&t->changed);
}

/*
 * How Mount, Unmount and Remove begin: w filled, t->lock taken (also on
 * failure) and *v the volume once no mount or unmount of it is under way.
 * 0, or ENOMEM / ENOENT with err set and *v NULL.
 */
static int begin(struct plugin_volumes *t, const char *name, struct where *w,
		 struct plugin_volume **v, char *err, size_t errlen)
{
	int rc = where_of(t, name, w, err, errlen);

	pthread_mutex_lock(&t->lock);
	*v = rc ? NULL : find_idle(t, name, err, errlen);
	if (!rc && !*v)
		rc = ENOENT;
	return rc;
}

/* Writes v's record; a failure after the mount changed is logged, not
 * returned: the mount is what it is, and Docker must hear so. */
static void save_or_log(struct plugin_volumes *t, struct plugin_volume *v)
{
	char err[PLUGIN_ERR_MAX];

	if (plugin_state_save(t->volumes_dir, v, err, sizeof(err)))
		util_warn("%s", err);
}

/* Whether v's mount and daemon are both there. */
static bool live(const struct plugin_volume *v, const char *mountpoint)
{
	return plugin_daemon_alive(v->pid, mountpoint) &&
	       plugin_mount_kind(mountpoint) == PLUGIN_MOUNTED_S3PIPE;
}

/* ---- create, remove ---- */

static bool same_opts(const struct plugin_volume *v, json_t *opts)
{
	/* Docker asks again without options for a volume it only names */
	return json_object_size(opts) == 0 || json_equal(v->opts, opts);
}

static int exists(const struct plugin_volume *v, json_t *opts, char *err,
		  size_t errlen)
{
	if (same_opts(v, opts))
		return 0;
	return util_fail(err, errlen, EEXIST,
			 "volume '%s' exists with other options", v->name);
}

int plugin_volumes_add(struct plugin_volumes *t, const char *name, json_t *opts,
		       char *err, size_t errlen)
{
	struct plugin_argv args = {0};
	struct plugin_volume *v = NULL;
	struct where w = {0};
	json_t *copy = NULL;
	int rc;

	if (!plugin_name_valid(name))
		return util_fail(err, errlen, EINVAL,
				 "invalid volume name '%.*s': use 2 to %d of "
				 "A-Z a-z 0-9 _ . -, starting with a letter or "
				 "digit",
				 PLUGIN_NAME_MAX, name, PLUGIN_NAME_MAX);
	pthread_mutex_lock(&t->lock);
	v = find(t, name);
	rc = v ? exists(v, opts, err, errlen) : 0;
	pthread_mutex_unlock(&t->lock);
	if (v)
		return rc;

	/* a new volume: checked with no lock held (s3pipe runs) */
	rc = where_of(t, name, &w, err, errlen);
	copy = rc ? NULL : json_deep_copy(opts);
	if (!rc && !copy)
		rc = util_fail(err, errlen, ENOMEM, "out of memory");
	if (!rc)
		rc = plugin_opts_to_args(copy, &args, err, errlen);
	if (!rc)
		rc = plugin_check_options(t->s3pipe, &args, w.mp, w.pid_file,
					  err, errlen);
	if (rc)
		goto fail;
	v = plugin_volume_new(name, copy);
	if (!v) {
		rc = util_fail(err, errlen, ENOMEM, "out of memory");
		goto fail;
	}
	pthread_mutex_lock(&t->lock);
	if (find(t, name)) {
		/* created meanwhile by another request */
		rc = exists(find(t, name), opts, err, errlen);
	} else {
		rc = plugin_state_save(t->volumes_dir, v, err, errlen);
		if (!rc) {
			insert(t, v);
			v = NULL;
		}
	}
	pthread_mutex_unlock(&t->lock);
fail:
	plugin_volume_free(v);
	plugin_argv_free(&args);
	json_decref(copy);
	where_free(&w);
	return rc;
}

int plugin_volumes_remove(struct plugin_volumes *t, const char *name, char *err,
			  size_t errlen)
{
	struct plugin_volume *v;
	struct where w;
	int rc = begin(t, name, &w, &v, err, errlen);

	if (!rc && v->nids > 0)
		rc = util_fail(err, errlen, EBUSY,
			       "volume '%s' is in use by %zu mount(s)", name,
			       v->nids);
	if (!rc)
		rc = plugin_state_delete(t->volumes_dir, name, err, errlen);
	if (!rc)
		unlink_volume(t, v);
	pthread_mutex_unlock(&t->lock);
	if (!rc) {
		plugin_volume_free(v);
		rmdir(w.mp);
		unlink(w.pid_file);
	}
	where_free(&w);
	return rc;
}

/* ---- mount, unmount ---- */

/*
 * With t->lock held and v idle: starts v's daemon (first mount ID, or a
 * mount that died), with the lock released meanwhile.  Adds id on success.
 */
static int start(struct plugin_volumes *t, struct plugin_volume *v,
		 const char *id, const struct where *w, char *err,
		 size_t errlen)
{
	struct plugin_argv args = {0};
	json_t *opts = json_incref(v->opts);
	pid_t old = v->pid;
	bool remount = v->nids > 0;
	pid_t pid = 0;
	char ignored[PLUGIN_ERR_MAX];
	char msg[128];
	int rc;

	if (remount)
		util_info("volume '%s': its mount or daemon (pid %ld) is gone; "
			  "mounting it again",
			  v->name, (long)old);
	v->busy = true;
	pthread_mutex_unlock(&t->lock);

	rc = plugin_opts_to_args(opts, &args, err, errlen);
	if (!rc && remount)
		plugin_daemon_stop(w->mp, old, w->pid_file, ignored,
				   sizeof(ignored));
	if (!rc && mkdir(w->mp, 0755) != 0 && errno != EEXIST)
		rc = util_fail(err, errlen, errno,
			       "cannot create the mountpoint %s: %s", w->mp,
			       util_strerror(errno, msg, sizeof(msg)));
	if (!rc)
		rc = plugin_daemon_start(t->s3pipe, &args, w->mp, w->pid_file,
					 &pid, err, errlen);
	if (rc && !remount)
		rmdir(w->mp);
	plugin_argv_free(&args);
	json_decref(opts);

	pthread_mutex_lock(&t->lock);
	set_idle(t, v);
	v->pid = pid;
	if (!rc && plugin_volume_add_id(v, id))
		rc = util_fail(err, errlen, ENOMEM, "out of memory");
	if (!rc || remount)
		save_or_log(t, v);
	return rc;
}

int plugin_volumes_mount(struct plugin_volumes *t, const char *name,
			 const char *id, char **mountpoint, char *err,
			 size_t errlen)
{
	struct plugin_volume *v;
	struct where w;
	int rc = begin(t, name, &w, &v, err, errlen);

	if (rc) {
		/* err says why */
	} else if (v->nids > 0 && live(v, w.mp)) {
		bool known = plugin_volume_has_id(v, id);

		rc = plugin_volume_add_id(v, id);
		if (rc)
			util_fail(err, errlen, rc, "out of memory");
		else if (!known)
			save_or_log(t, v);
	} else {
		rc = start(t, v, id, &w, err, errlen);
	}
	pthread_mutex_unlock(&t->lock);
	if (!rc) {
		*mountpoint = w.mp;
		w.mp = NULL;
	}
	where_free(&w);
	return rc;
}

/*
 * With t->lock held and v idle, id its last mount ID: stops the daemon,
 * with the lock released meanwhile.
 */
static int stop(struct plugin_volumes *t, struct plugin_volume *v,
		const char *id, const struct where *w, char *err, size_t errlen)
{
	pid_t pid = v->pid;
	int rc;

	v->busy = true;
	pthread_mutex_unlock(&t->lock);
	rc = plugin_daemon_stop(w->mp, pid, w->pid_file, err, errlen);
	if (!rc && rmdir(w->mp) != 0 && errno != ENOENT)
		util_warn("volume '%s': %s is not empty after unmounting: "
			  "left as it is",
			  v->name, w->mp);
	pthread_mutex_lock(&t->lock);
	set_idle(t, v);
	if (!rc) {
		plugin_volume_drop_id(v, id);
		v->pid = 0;
		save_or_log(t, v);
	}
	return rc;
}

int plugin_volumes_unmount(struct plugin_volumes *t, const char *name,
			   const char *id, char *err, size_t errlen)
{
	struct plugin_volume *v;
	struct where w;
	int rc = begin(t, name, &w, &v, err, errlen);

	if (rc) {
		/* err says why */
	} else if (!plugin_volume_has_id(v, id)) {
		rc = util_fail(err, errlen, ENOENT,
			       "volume '%s' has no mount with ID '%.*s'", name,
			       PLUGIN_ID_MAX, id);
	} else if (v->nids > 1) {
		plugin_volume_drop_id(v, id);
		save_or_log(t, v);
	} else {
		rc = stop(t, v, id, &w, err, errlen);
	}
	pthread_mutex_unlock(&t->lock);
	where_free(&w);
	return rc;
}

/* ---- path, get, list ---- */

int plugin_volumes_path(struct plugin_volumes *t, const char *name,
			char **mountpoint, char *err, size_t errlen)
{
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	if (!find(t, name))
		rc = no_such_volume(name, err, errlen);
	pthread_mutex_unlock(&t->lock);
	if (!rc) {
		*mountpoint = mountpoint_of(t, name);
		if (!*mountpoint)
			rc = util_fail(err, errlen, ENOMEM, "out of memory");
	}
	return rc;
}

/* {Name, Mountpoint, CreatedAt}, and Status with status */
static json_t *volume_json(const struct plugin_volumes *t,
			   const struct plugin_volume *v, bool status)
{
	char *mp = mountpoint_of(t, v->name);
	json_t *channels = json_object();
	json_t *st = NULL;
	json_t *o = NULL;
	const char *key;
	json_t *value;

	if (!mp || !channels)
		goto fail;
	o = json_pack("{s:s, s:s, s:s}", "Name", v->name, "Mountpoint", mp,
		      "CreatedAt", v->created_at);
	if (!o || !status)
		goto fail;
	/* the channels, for `docker volume inspect`; the options are
	 * there already, from Docker's own records */
	json_object_foreach(v->opts, key, value)
	{
		const char *s = json_string_value(value);

		if (s && plugin_opt_is_channel(s))
			json_object_set(channels, key, value);
	}
	st = json_pack("{s:I, s:O}", "Mounts", (json_int_t)v->nids, "Channels",
		       channels);
	if (st && v->nids > 0 && v->pid > 0)
		json_object_set_new(st, "Pid", json_integer(v->pid));
	if (!st || json_object_set_new(o, "Status", st) != 0) {
		json_decref(o);
		o = NULL;
	}
fail:
	json_decref(channels);
	free(mp);
	return o;
}

int plugin_volumes_get(struct plugin_volumes *t, const char *name,
		       json_t **volume, char *err, size_t errlen)
{
	struct plugin_volume *v;
	int rc = 0;

	pthread_mutex_lock(&t->lock);
	v = find(t, name);
	if (!v)
		rc = no_such_volume(name, err, errlen);
	else
		*volume = volume_json(t, v, true);
	pthread_mutex_unlock(&t->lock);
	if (!rc && !*volume)
		rc = util_fail(err, errlen, ENOMEM, "out of memory");
	return rc;
}

int plugin_volumes_list(struct plugin_volumes *t, json_t **volumes, char *err,
			size_t errlen)
{
	json_t *a = json_array();
	int rc = a ? 0 : ENOMEM;

	pthread_mutex_lock(&t->lock);
	for (struct plugin_volume *v = t->head; v && !rc; v = v->next)
		if (json_array_append_new(a, volume_json(t, v, false)) != 0)
			rc = ENOMEM;
	pthread_mutex_unlock(&t->lock);
	if (rc) {
		json_decref(a);
		return util_fail(err, errlen, rc, "out of memory");
	}
	*volumes = a;
	return 0;
}

/* ---- start-up ---- */

/*
 * What a volume's record says against what is there: a mount in use whose
 * mount and daemon are both alive is kept; anything left over otherwise
 * is cleaned up and the mount IDs cleared.
 */
static void restore(struct plugin_volumes *t, struct plugin_volume *v)
{
	enum plugin_mount_kind kind;
	char err[PLUGIN_ERR_MAX];
	size_t nids = v->nids;
	struct where w;
	pid_t pid;
	bool alive;

	if (where_of(t, v->name, &w, err, sizeof(err))) {
		util_warn("volume '%s': %s", v->name, err);
		return;
	}
	pid = plugin_pid_file_read(w.pid_file);
	kind = plugin_mount_kind(w.mp);
	alive = plugin_daemon_alive(pid, w.mp);
	if (nids > 0 && kind == PLUGIN_MOUNTED_S3PIPE && alive) {
		v->pid = pid;
		util_info("volume '%s': still mounted on %s by s3pipe (pid "
			  "%ld), %zu mount ID(s) kept",
			  v->name, w.mp, (long)pid, nids);
		goto done;
	}
	if (nids == 0 && kind == PLUGIN_NOT_MOUNTED && !alive)
		goto done; /* not mounted, as recorded */
	if (kind == PLUGIN_MOUNTED_OTHER)
		util_warn("volume '%s': something other than s3pipe is "
			  "mounted on %s: left alone",
			  v->name, w.mp);
	if (plugin_daemon_stop(w.mp, alive ? pid : 0, w.pid_file, err,
			       sizeof(err)))
		util_warn("volume '%s': %s", v->name, err);
	rmdir(w.mp);
	plugin_volume_clear_ids(v);
	v->pid = 0;
	save_or_log(t, v);
	util_info("volume '%s': stale state cleaned up (mount %s, daemon "
		  "%s), %zu mount ID(s) cleared",
		  v->name,
		  kind == PLUGIN_MOUNTED_S3PIPE ? "left behind" : "gone",
		  alive ? "left running" : "gone", nids);
done:
	where_free(&w);
}

/* One plugin per state directory: a second one would take over, or clean
 * up, the first one's mounts. */
static int lock_state(struct plugin_volumes *t, const char *dir, char *err,
		      size_t errlen)
{
	char *path = path_join(dir, "lock", "");
	char msg[128];
	int rc = 0;

	if (!path)
		return util_fail(err, errlen, ENOMEM, "out of memory");
	t->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0600);
	if (t->lock_fd < 0)
		rc = util_fail(err, errlen, errno, "cannot open %s: %s", path,
			       util_strerror(errno, msg, sizeof(msg)));
	else if (flock(t->lock_fd, LOCK_EX | LOCK_NB) != 0)
		rc = util_fail(err, errlen, errno,
			       "another plugin uses the state directory %s",
			       dir);
	free(path);
	return rc;
}

static int make_dirs(struct plugin_volumes *t, const char *state_dir, char *err,
		     size_t errlen)
{
	char real[PATH_MAX];
	char msg[128];
	int rc = make_dir(state_dir, 0755);

	if (rc)
		return util_fail(err, errlen, rc, "cannot create %s: %s",
				 state_dir,
				 util_strerror(rc, msg, sizeof(msg)));
	/* mountinfo shows canonical paths */
	if (!realpath(state_dir, real))
		return util_fail(err, errlen, errno, "cannot resolve %s: %s",
				 state_dir,
				 util_strerror(errno, msg, sizeof(msg)));
	t->volumes_dir = path_join(real, "volumes", "");
	t->mounts_dir = path_join(real, "mounts", "");
	t->run_dir = path_join(real, "run", "");
	if (!t->volumes_dir || !t->mounts_dir || !t->run_dir)
		return util_fail(err, errlen, ENOMEM, "out of memory");
	rc = make_dir(t->volumes_dir, 0700);
	if (!rc)
		rc = make_dir(t->mounts_dir, 0755);
	if (!rc)
		rc = make_dir(t->run_dir, 0700);
	if (rc)
		return util_fail(err, errlen, rc,
				 "cannot create the folders in %s: %s", real,
				 util_strerror(rc, msg, sizeof(msg)));
	return lock_state(t, real, err, errlen);
}

struct plugin_volumes *plugin_volumes_create(const char *state_dir,
					     const char *s3pipe, char *err,
					     size_t errlen)
{
	struct plugin_volumes *t = calloc(1, sizeof(*t));
	struct plugin_volume *list;
	unsigned nbad = 0;
	unsigned n = 0;
	char msg[128];
	int rc;

	if (!t) {
		util_fail(err, errlen, ENOMEM, "out of memory");
		return NULL;
	}
	t->lock_fd = -1;
	pthread_mutex_init(&t->lock, NULL);
	pthread_cond_init(&t->changed, NULL);
	t->s3pipe = strdup(s3pipe);
	rc = t->s3pipe ? make_dirs(t, state_dir, err, errlen)
		       : util_fail(err, errlen, ENOMEM, "out of memory");
	if (rc)
		goto fail;
	list = plugin_state_load_all(t->volumes_dir, &nbad);
	if (!list && errno) {
		rc = util_fail(err, errlen, errno, "cannot read %s: %s",
			       t->volumes_dir,
			       util_strerror(errno, msg, sizeof(msg)));
		goto fail;
	}
	while (list) {
		struct plugin_volume *v = list;

		list = v->next;
		restore(t, v);
		insert(t, v);
		n++;
	}
	util_info("%u volume(s) in %s%s", n, t->volumes_dir,
		  nbad ? " (unreadable records skipped)" : "");
	return t;
fail:
	plugin_volumes_destroy(t);
	errno = rc;
	return NULL;
}

void plugin_volumes_destroy(struct plugin_volumes *t)
{
	if (!t)
		return;
	while (t->head) {
		struct plugin_volume *v = t->head;

		t->head = v->next;
		plugin_volume_free(v);
	}
	pthread_mutex_destroy(&t->lock);
	pthread_cond_destroy(&t->changed);
	if (t->lock_fd >= 0)
		close(t->lock_fd);
	free(t->s3pipe);
	free(t->volumes_dir);
	free(t->mounts_dir);
	free(t->run_dir);
	free(t);
}
