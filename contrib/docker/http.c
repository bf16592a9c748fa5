/*
 * http: the plugin's HTTP server, libmicrohttpd on a unix socket that
 * main.c opened (or systemd passed).
 *
 * One thread per connection (MHD_USE_THREAD_PER_CONNECTION), so a Mount
 * that waits for s3pipe holds up only its own connection; Docker opens
 * others for requests meanwhile.  A request's body is collected into a
 * buffer bounded at PLUGIN_BODY_MAX (past it the rest is read and dropped
 * and the answer is 413), parsed with jansson (an empty body, as Docker
 * sends to /Plugin.Activate, is {}), answered by plugin_endpoint(), and
 * the answer sent with Docker's plugin media type.  Only POST is served
 * (405 otherwise); a body that is not a JSON object is 400.  Every answer,
 * errors included, is a JSON object with Err where something failed.
 */
#include "config.h"

#include "contrib/docker/plugin.h"
#include "util/util.h"

#include <errno.h>
#include <microhttpd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CONTENT_TYPE	"application/vnd.docker.plugins.v1.2+json"
#define MAX_CONNECTIONS 64
#define IDLE_TIMEOUT	300 /* seconds an idle keep-alive connection lasts */

struct plugin_http {
	struct MHD_Daemon *mhd;
	struct plugin_volumes *t;
};

/* One request under way: its body so far. */
struct request {
	struct util_buf body;
	bool too_large;
};

static void mhd_log(void *cls, const char *fmt, va_list ap)
    __attribute__((format(printf, 2, 0)));

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char line[512];

	vsnprintf(line, sizeof(line), fmt, ap);
	line[strcspn(line, "\n")] = '\0';
	util_info("http: %s", line);
}

/* Sends reply (consumed) with status; NULL sends a fixed error. */
static enum MHD_Result send_json(struct MHD_Connection *conn, unsigned status,
				 json_t *reply)
{
	static char oom[] = "{\"Err\": \"out of memory\"}";
	struct MHD_Response *res;
	enum MHD_Result ok;
	char *text = reply ? json_dumps(reply, JSON_COMPACT) : NULL;

	json_decref(reply);
	if (text) {
		res = MHD_create_response_from_buffer(strlen(text), text,
						      MHD_RESPMEM_MUST_FREE);
	} else {
		status = MHD_HTTP_INTERNAL_SERVER_ERROR;
		res = MHD_create_response_from_buffer(strlen(oom), oom,
						      MHD_RESPMEM_PERSISTENT);
	}
	if (!res) {
		free(text);
		return MHD_NO;
	}
	MHD_add_response_header(res, MHD_HTTP_HEADER_CONTENT_TYPE,
				CONTENT_TYPE);
	ok = MHD_queue_response(conn, status, res);
	MHD_destroy_response(res);
	return ok;
}

static enum MHD_Result send_err(struct MHD_Connection *conn, unsigned status,
				const char *url, const char *msg)
{
	util_warn("%.100s: refused: %s", url, msg);
	return send_json(conn, status, plugin_err_reply(msg));
}

/* The whole request is in: parse, answer. */
static enum MHD_Result answer(struct plugin_http *h,
			      struct MHD_Connection *conn, const char *url,
			      struct request *r)
{
	json_error_t jerr;
	json_t *req = NULL;
	json_t *reply = NULL;
	char msg[PLUGIN_ERR_MAX];
	unsigned status;

	if (r->too_large) {
		snprintf(msg, sizeof(msg),
			 "the request body is larger than %d bytes",
			 PLUGIN_BODY_MAX);
		return send_err(conn, 413, url, msg); /* Content Too Large */
	}
	if (r->body.len > 0)
		req = json_loadb(r->body.data, r->body.len,
				 JSON_REJECT_DUPLICATES, &jerr);
	else
		req = json_object();
	if (json_is_null(req)) { /* Go's encoding of a nil request */
		json_decref(req);
		req = json_object();
	}
	if (!json_is_object(req)) {
		if (req)
			snprintf(msg, sizeof(msg),
				 "the request body is not a JSON object");
		else
			snprintf(msg, sizeof(msg),
				 "the request body is not JSON: line %d: %s",
				 jerr.line, jerr.text);
		json_decref(req);
		return send_err(conn, MHD_HTTP_BAD_REQUEST, url, msg);
	}
	status = plugin_endpoint(h->t, url, req, &reply);
	json_decref(req);
	return send_json(conn, status, reply);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn,
				  const char *url, const char *method,
				  const char *version, const char *upload_data,
				  size_t *upload_data_size, void **con_cls)
{
	struct plugin_http *h = cls;
	struct request *r = *con_cls;

	if (!r) {
		/* the headers are in; the body, if any, follows */
		r = calloc(1, sizeof(*r));
		if (!r)
			return MHD_NO;
		util_buf_init(&r->body, PLUGIN_BODY_MAX);
		*con_cls = r;
		return MHD_YES;
	}
	if (*upload_data_size > 0) {
		if (!r->too_large &&
		    util_buf_append(&r->body, upload_data, *upload_data_size))
			r->too_large = true;
		*upload_data_size = 0;
		return MHD_YES;
	}
	if (strcmp(method, MHD_HTTP_METHOD_POST) != 0)
		return send_err(conn, MHD_HTTP_METHOD_NOT_ALLOWED, url,
				"only POST is served");
	return answer(h, conn, url, r);
}

static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	struct request *r = *con_cls;

	if (!r)
		return;
	util_buf_free(&r->body);
	free(r);
	*con_cls = NULL;
}

struct plugin_http *plugin_http_start(int fd, struct plugin_volumes *t,
				      char *err, size_t errlen)
{
	struct plugin_http *h = calloc(1, sizeof(*h));

	if (!h) {
		close(fd);
		util_fail(err, errlen, ENOMEM, "out of memory");
		return NULL;
	}
	h->t = t;
	h->mhd = MHD_start_daemon(
	    MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION |
		MHD_USE_POLL | MHD_USE_ERROR_LOG,
	    0, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, mhd_log,
	    NULL, MHD_OPTION_LISTEN_SOCKET, fd, MHD_OPTION_NOTIFY_COMPLETED,
	    on_completed, NULL, MHD_OPTION_CONNECTION_LIMIT,
	    (unsigned)MAX_CONNECTIONS, MHD_OPTION_CONNECTION_TIMEOUT,
	    (unsigned)IDLE_TIMEOUT, MHD_OPTION_END);
	if (!h->mhd) {
		close(fd);
		free(h);
		util_fail(err, errlen, EIO,
			  "cannot start the HTTP server (libmicrohttpd)");
		return NULL;
	}
	return h;
}

void plugin_http_stop(struct plugin_http *h)
{
	if (!h)
		return;
	MHD_stop_daemon(h->mhd);
	free(h);
}
