/*
 * s3pipe-docker-plugin: a Docker volume plugin whose volumes are s3pipe
 * mounts.  Docker finds it as a legacy plugin through its socket in
 * /run/docker/plugins/ and speaks HTTP with JSON bodies to it.
 *
 *   main.c       arguments, the listening socket (or systemd's), signals
 *   http.c       libmicrohttpd: collects each POST body, parses the JSON,
 *                sends the JSON reply
 *   endpoints.c  Docker's VolumeDriver protocol: one handler per path,
 *                one log line per request
 *   volumes.c    the volume table: create, remove, mount with reference
 *                counting by mount ID, unmount, restore after a restart
 *   options.c    a volume's Opts -> s3pipe arguments, and what is refused
 *   state.c      a volume's record, and its file STATE/volumes/NAME.json
 *   daemons.c    running s3pipe (check, mount), stopping it, and whether
 *                a mount or a daemon is still there
 *
 * Logging is util_log's: one line per event on stderr (which systemd hands
 * to the journal), "s3pipe-docker-plugin: ...", cleaned, never a secret.
 *
 * State directory (STATE, --state-dir):
 *   volumes/NAME.json  Name, Opts as given, CreatedAt, MountIDs
 *   mounts/NAME/       the mountpoint, there while mounted
 *   run/NAME.pid       written by the s3pipe daemon once mounted
 *   lock               flock()ed by the one plugin that uses STATE
 *
 * Every function that can fail returns 0 or a positive errno and, where it
 * takes err/errlen, one line for users there (lowercase, no trailing
 * period), which the plugin sends Docker as Err.  Nothing here logs or
 * stores a secret: credential-shaped options are refused, and s3pipe takes
 * its credentials from the plugin's own environment and files.
 */
#ifndef S3PIPE_DOCKER_PLUGIN_H
#define S3PIPE_DOCKER_PLUGIN_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#define PLUGIN_PROG	   "s3pipe-docker-plugin"
#define PLUGIN_ERR_MAX	   1024
#define PLUGIN_BODY_MAX	   (1024 * 1024) /* request bodies, bytes */
#define PLUGIN_NAME_MAX	   128		 /* volume names, bytes */
#define PLUGIN_ID_MAX	   256		 /* mount IDs, bytes */
#define PLUGIN_OPTS_MAX	   64		 /* options per volume */
#define PLUGIN_OPT_KEY_MAX 128
#define PLUGIN_OPT_VAL_MAX 4096
/* Docker gives a Mount 2 minutes; s3pipe gets less, so that its own
 * message, not Docker's time-out, reaches the user */
#define PLUGIN_MOUNT_TIMEOUT 100 /* seconds */
#define PLUGIN_CHECK_TIMEOUT 30	 /* seconds, s3pipe --check-options */

/* ---- options.c ---- */

/* A growable NULL-terminated argv; v and every string in it are owned. */
struct plugin_argv {
	char **v; /* NULL while empty */
	size_t n;
	size_t cap;
};

/* Appends a copy of s.  0 or ENOMEM. */
int plugin_argv_add(struct plugin_argv *a, const char *s);
void plugin_argv_free(struct plugin_argv *a);

/* Docker's rule for volume names: [a-zA-Z0-9][a-zA-Z0-9_.-]+, at most
 * PLUGIN_NAME_MAX bytes. */
bool plugin_name_valid(const char *name);

/* Whether an option's value names S3 data: s3://, manifest+s3:// or
 * augmented+s3://. */
bool plugin_opt_is_channel(const char *value);

/*
 * Appends to out the s3pipe arguments for a volume's Opts (a JSON object
 * of strings, not NULL): a value starting s3://, manifest+s3:// or
 * augmented+s3:// is a channel, "KEY=VALUE"; anything else becomes
 * "-o KEY=VALUE" ("-o KEY" for an empty value), the value's backslashes
 * and commas escaped so that it stays one option.  Refuses, naming the
 * option: a key that is not [A-Za-z0-9_.-]+ or starts with '-', the options the
 * plugin owns (foreground, debug, pid_file, check_options, help, version,
 * mountpoint, ...) and credential-shaped ones.  0, EINVAL (err set) or
 * ENOMEM.
 */
int plugin_opts_to_args(const json_t *opts, struct plugin_argv *out, char *err,
			size_t errlen);

/* ---- state.c ---- */

/*
 * A volume's record.  volumes.c's fields (busy, pid, next) are not
 * stored.
 */
struct plugin_volume {
	char *name;	  /* owned */
	json_t *opts;	  /* owned reference: Opts as given */
	char *created_at; /* owned: RFC 3339, UTC */
	char **ids;	  /* owned, each owned: mount IDs, no duplicates */
	size_t nids;
	bool busy; /* volumes.c: a mount or unmount is under way */
	pid_t pid; /* volumes.c: the daemon, while mounted */
	struct plugin_volume *next;
};

/* A new record with no mount IDs, created now; opts gets a new reference.
 * NULL with errno ENOMEM. */
struct plugin_volume *plugin_volume_new(const char *name, json_t *opts);
void plugin_volume_free(struct plugin_volume *v);
bool plugin_volume_has_id(const struct plugin_volume *v, const char *id);
/* 0 (also when id is there already) or ENOMEM */
int plugin_volume_add_id(struct plugin_volume *v, const char *id);
void plugin_volume_drop_id(struct plugin_volume *v, const char *id);
void plugin_volume_clear_ids(struct plugin_volume *v);

/*
 * Writes dir/NAME.json whole: a temporary file, fsync, rename, fsync of
 * dir.  0 or an errno, with err set.
 */
int plugin_state_save(const char *dir, const struct plugin_volume *v, char *err,
		      size_t errlen);
/* Removes dir/NAME.json and syncs dir.  0 (also when it was not there) or
 * an errno, with err set. */
int plugin_state_delete(const char *dir, const char *name, char *err,
			size_t errlen);
/*
 * Reads dir/file, which must hold the record of a volume named as the
 * file (NAME.json).  NULL with err set when it cannot be read or is not a
 * valid record.
 */
struct plugin_volume *plugin_state_load(const char *dir, const char *file,
					char *err, size_t errlen);
/*
 * Loads every dir/NAME.json (hidden files and other names are passed
 * over), in name order, and returns them as a list linked by next; a file
 * that cannot be loaded is logged and skipped.  *nbad counts them.  NULL
 * is an empty list, or an error with errno set (dir cannot be read).
 */
struct plugin_volume *plugin_state_load_all(const char *dir, unsigned *nbad);

/* ---- daemons.c ---- */

enum plugin_mount_kind {
	PLUGIN_NOT_MOUNTED = 0,
	PLUGIN_MOUNTED_S3PIPE = 1, /* fstype fuse.s3pipe */
	PLUGIN_MOUNTED_OTHER = 2,
};

/* What is mounted on path (canonical), by /proc/self/mountinfo: the
 * topmost mount there. */
enum plugin_mount_kind plugin_mount_kind(const char *path);

/*
 * Checks the command line a mount would run (plugin_daemon_start()) with
 * "s3pipe ... --check-options MOUNTPOINT", which touches neither the
 * mountpoint nor the network.  0 when s3pipe takes the line; EINVAL with
 * s3pipe's message (without its "s3pipe: ") in err; or another errno with
 * err set when it could not be run.
 */
int plugin_check_options(const char *s3pipe, const struct plugin_argv *args,
			 const char *mountpoint, const char *pid_file,
			 char *err, size_t errlen);

/*
 * Mounts: runs "s3pipe ARGS -o allow_other --pid-file PIDFILE MOUNTPOINT"
 * in the plugin's environment and waits until it says the mount is ready
 * (at most PLUGIN_MOUNT_TIMEOUT s).  0 with the daemon's pid in *pid; or
 * an errno with s3pipe's message (or what went wrong) in err, and no mount
 * or daemon left.
 */
int plugin_daemon_start(const char *s3pipe, const struct plugin_argv *args,
			const char *mountpoint, const char *pid_file,
			pid_t *pid, char *err, size_t errlen);

/*
 * Unmounts mountpoint (lazily when it is busy) and waits for its daemon
 * (pid, or 0 when unknown) to exit; one that does not is sent SIGTERM,
 * then SIGKILL (logged), as is any other s3pipe still serving mountpoint.
 * Removes pid_file.  0 once nothing is mounted there and no daemon is
 * left, or an errno with err set.
 */
int plugin_daemon_stop(const char *mountpoint, pid_t pid, const char *pid_file,
		       char *err, size_t errlen);

/* The pid in pid_file, or 0 when there is none. */
pid_t plugin_pid_file_read(const char *pid_file);

/* Whether pid is a live s3pipe daemon serving mountpoint (its command
 * line ends with mountpoint). */
bool plugin_daemon_alive(pid_t pid, const char *mountpoint);

/* ---- volumes.c ---- */

struct plugin_volumes;

/*
 * Makes the state directory's folders, loads every record and restores
 * it: a volume whose mount and daemon are both still there keeps its
 * mount IDs; anything else left over (a dead mount, a daemon without a
 * mount, mount IDs without either) is cleaned up and its IDs cleared.
 * state_dir and s3pipe are copied.  NULL with errno set and err set.
 */
struct plugin_volumes *plugin_volumes_create(const char *state_dir,
					     const char *s3pipe, char *err,
					     size_t errlen);
/* Frees the table; mounts and daemons stay as they are. */
void plugin_volumes_destroy(struct plugin_volumes *t);

/* Each: 0, or an errno with err set.  Safe from several threads. */
int plugin_volumes_add(struct plugin_volumes *t, const char *name, json_t *opts,
		       char *err, size_t errlen);
int plugin_volumes_remove(struct plugin_volumes *t, const char *name, char *err,
			  size_t errlen);
/* *mountpoint: owned by the caller */
int plugin_volumes_mount(struct plugin_volumes *t, const char *name,
			 const char *id, char **mountpoint, char *err,
			 size_t errlen);
int plugin_volumes_unmount(struct plugin_volumes *t, const char *name,
			   const char *id, char *err, size_t errlen);
int plugin_volumes_path(struct plugin_volumes *t, const char *name,
			char **mountpoint, char *err, size_t errlen);
/* *volume: a new object {Name, Mountpoint, CreatedAt, Status} */
int plugin_volumes_get(struct plugin_volumes *t, const char *name,
		       json_t **volume, char *err, size_t errlen);
/* *volumes: a new array of {Name, Mountpoint, CreatedAt} */
int plugin_volumes_list(struct plugin_volumes *t, json_t **volumes, char *err,
			size_t errlen);

/* ---- endpoints.c ---- */

/*
 * Answers a request for path (e.g. "/VolumeDriver.Mount") whose body is
 * req (a JSON object; an empty body arrives as {}).  Returns the HTTP
 * status (200, also when the answer carries an Err; 404 for an unknown
 * path) and the answer in *reply (a new object; NULL only on ENOMEM).
 * Logs one line.
 */
unsigned plugin_endpoint(struct plugin_volumes *t, const char *path,
			 json_t *req, json_t **reply);
/* {"Err": msg}, or NULL on ENOMEM */
json_t *plugin_err_reply(const char *msg);

/* ---- http.c ---- */

struct plugin_http;

/*
 * Serves Docker's requests on the listening socket fd (AF_UNIX, already
 * listening; the server closes it) with libmicrohttpd, one thread per
 * connection, answering from t.  NULL with err set on failure.
 */
struct plugin_http *plugin_http_start(int fd, struct plugin_volumes *t,
				      char *err, size_t errlen);
/* Stops serving: waits for requests under way, closes the connections. */
void plugin_http_stop(struct plugin_http *h);

#endif
