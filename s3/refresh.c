/*
 * refresh: the thread that asks the credential provider again before the
 * credentials expire (the rule is in s3/refresh.h).  It owns copies of the
 * query's strings and knows only the current credentials' provider and
 * expiration and access key id, never their secrets; fresh credentials go
 * straight to the deliver callback.  One mutex and condition variable:
 * stop and nudge wake the thread from its wait.  A refresh under way is
 * not interrupted (a credential_process may take up to a minute): stop
 * then leaves the thread to finish on its own, with nothing to deliver to,
 * and it frees the refresher itself.  The deliver callback runs under the
 * refresher's lock, so that it never runs after stop has returned.
 */
#include "config.h"

#include "s3/refresh.h"

#include "util/util.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define REFRESH_LEAD_MAX     300 /* seconds */
#define REFRESH_RETRY_MAX    30	 /* seconds between failed attempts */
#define REFRESH_RECHECK_MIN  1	 /* seconds: credentials not renewed yet */
#define REFRESH_RECHECK_MAX  60
#define REFRESH_MESSAGE_SIZE 512

struct s3_refresher {
	/* the query, owned copies */
	char *profile;
	char *region;
	char *ca_bundle;
	bool tls_verify;

	s3_refresh_deliver_fn *deliver;
	void *arg;

	/* the current credentials, as far as this thread needs them */
	int provider;
	time_t obtained;
	time_t expiration;
	char *access_key; /* not a secret */

	unsigned rand_state;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	/* under lock */
	bool stopping;
	bool nudged;   /* refresh now, the credentials were refused */
	bool busy;     /* asking the provider */
	bool orphaned; /* stopped while busy: the thread frees r */
};

time_t s3_refresh_due(time_t obtained, time_t expiration, unsigned random)
{
	time_t lifetime = expiration - obtained;
	time_t lead;

	if (lifetime <= 0)
		return obtained;
	lead = lifetime / 3;
	if (lead > REFRESH_LEAD_MAX)
		lead = REFRESH_LEAD_MAX;
	if (lead < 1)
		lead = 1;
	return expiration - lead - (time_t)(random % (unsigned)(lead / 4 + 1));
}

/* Waits until due (wall clock), a nudge or stop; true when stopping.
 * Otherwise marks the refresher busy. */
static bool wait_until(struct s3_refresher *r, time_t due)
{
	struct timespec ts = {.tv_sec = due, .tv_nsec = 0};
	bool stopping;

	pthread_mutex_lock(&r->lock);
	while (!r->stopping && !r->nudged && time(NULL) < due)
		if (pthread_cond_timedwait(&r->cond, &r->lock, &ts) ==
		    ETIMEDOUT)
			break;
	r->nudged = false;
	stopping = r->stopping;
	r->busy = !stopping;
	pthread_mutex_unlock(&r->lock);
	return stopping;
}

static void format_utc(time_t t, char *out, size_t outlen)
{
	struct tm tm;

	if (!gmtime_r(&t, &tm) ||
	    strftime(out, outlen, "%Y-%m-%dT%H:%M:%SZ", &tm) == 0)
		snprintf(out, outlen, "%lld", (long long)t);
}

/* One attempt; returns the time of the next one, or 0 when done. */
static time_t refresh_once(struct s3_refresher *r, unsigned *failures)
{
	struct s3_creds_query q = {
	    .profile = r->profile,
	    .region = r->region,
	    .ca_bundle = r->ca_bundle,
	    .tls_verify = r->tls_verify,
	};
	struct s3_creds old = {.provider = r->provider,
			       .expiration = r->expiration};
	struct s3_creds fresh;
	char err[REFRESH_MESSAGE_SIZE];
	char until[32];
	time_t now;
	time_t delay;
	int rc;

	rc = s3_creds_refresh(&q, &old, &fresh, err, sizeof(err));
	now = time(NULL);
	if (rc) {
		delay = (time_t)1 << (*failures < 5 ? *failures : 5);
		if (delay > REFRESH_RETRY_MAX)
			delay = REFRESH_RETRY_MAX;
		(*failures)++;
		util_warn("cannot refresh the credentials (attempt %u): %s; "
			  "trying again in %lld s, the current ones expire "
			  "in %lld s",
			  *failures, err, (long long)delay,
			  (long long)(r->expiration - now));
		return now + delay;
	}
	*failures = 0;
	if (fresh.expiration != 0 && fresh.expiration <= r->expiration &&
	    r->access_key && strcmp(fresh.access_key, r->access_key) == 0) {
		/* not renewed yet: look again a little later */
		delay = (r->expiration - now) / 4;
		if (delay < REFRESH_RECHECK_MIN)
			delay = REFRESH_RECHECK_MIN;
		if (delay > REFRESH_RECHECK_MAX)
			delay = REFRESH_RECHECK_MAX;
		util_debug("credentials from %s not renewed yet; asking again "
			   "in %lld s",
			   fresh.source, (long long)delay);
		s3_creds_clear(&fresh);
		return now + delay;
	}
	pthread_mutex_lock(&r->lock);
	if (r->stopping) { /* nobody to deliver to any more */
		pthread_mutex_unlock(&r->lock);
		s3_creds_clear(&fresh);
		return 0;
	}
	r->obtained = now;
	r->expiration = fresh.expiration;
	free(r->access_key);
	r->access_key = strdup(fresh.access_key); /* NULL: compare no more */
	if (fresh.expiration) {
		format_utc(fresh.expiration, until, sizeof(until));
		util_info("credentials refreshed from %s, valid until %s",
			  fresh.source, until);
	} else {
		util_info("credentials refreshed from %s, without expiration",
			  fresh.source);
	}
	r->deliver(r->arg, &fresh); /* takes them */
	pthread_mutex_unlock(&r->lock);
	if (!r->expiration)
		return 0;
	return s3_refresh_due(r->obtained, r->expiration,
			      (unsigned)rand_r(&r->rand_state));
}

static void refresher_free(struct s3_refresher *r)
{
	free(r->access_key);
	free(r->profile);
	free(r->region);
	free(r->ca_bundle);
	pthread_mutex_destroy(&r->lock);
	pthread_cond_destroy(&r->cond);
	free(r);
}

static void *refresher_main(void *arg)
{
	struct s3_refresher *r = arg;
	unsigned failures = 0;
	time_t due = s3_refresh_due(r->obtained, r->expiration,
				    (unsigned)rand_r(&r->rand_state));
	bool orphaned;

	while (due && !wait_until(r, due)) {
		due = refresh_once(r, &failures);
		pthread_mutex_lock(&r->lock);
		r->busy = false;
		orphaned = r->orphaned;
		pthread_mutex_unlock(&r->lock);
		if (orphaned) {
			refresher_free(r);
			return NULL;
		}
	}
	/* done (credentials without expiration) or stopping: wait for stop */
	pthread_mutex_lock(&r->lock);
	r->busy = false;
	orphaned = r->orphaned;
	pthread_mutex_unlock(&r->lock);
	if (orphaned)
		refresher_free(r);
	return NULL;
}

struct s3_refresher *s3_refresher_start(const struct s3_creds_query *q,
					const struct s3_creds *current,
					s3_refresh_deliver_fn *deliver,
					void *arg)
{
	struct s3_refresher *r = NULL;
	int rc;

	if (current->expiration == 0 || current->provider < 0) {
		errno = EINVAL;
		return NULL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&r->lock, NULL);
	pthread_cond_init(&r->cond, NULL);
	r->profile = util_strdup0(q->profile);
	r->region = util_strdup0(q->region);
	r->ca_bundle = util_strdup0(q->ca_bundle);
	r->tls_verify = q->tls_verify;
	r->deliver = deliver;
	r->arg = arg;
	r->provider = current->provider;
	r->expiration = current->expiration;
	r->access_key = util_strdup0(current->access_key);
	r->obtained = time(NULL);
	r->rand_state = (unsigned)util_now_ns();
	if ((q->profile && !r->profile) || (q->region && !r->region) ||
	    (q->ca_bundle && !r->ca_bundle) ||
	    (current->access_key && !r->access_key)) {
		refresher_free(r);
		errno = ENOMEM;
		return NULL;
	}
	rc = pthread_create(&r->thread, NULL, refresher_main, r);
	if (rc) {
		refresher_free(r);
		errno = rc;
		return NULL;
	}
	return r;
}

void s3_refresher_stop(struct s3_refresher *r)
{
	if (!r)
		return;
	pthread_mutex_lock(&r->lock);
	r->stopping = true;
	pthread_cond_signal(&r->cond);
	if (r->busy) {
		/* a provider is being asked: do not wait for it */
		r->orphaned = true;
		pthread_mutex_unlock(&r->lock);
		pthread_detach(r->thread);
		return;
	}
	pthread_mutex_unlock(&r->lock);
	pthread_join(r->thread, NULL);
	refresher_free(r);
}

void s3_refresher_nudge(struct s3_refresher *r)
{
	pthread_mutex_lock(&r->lock);
	r->nudged = true;
	pthread_cond_signal(&r->cond);
	pthread_mutex_unlock(&r->lock);
}
