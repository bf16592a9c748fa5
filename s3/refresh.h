/*
 * refresh: keeps temporary credentials fresh, on a helper thread of its
 * own, because asking a provider again may block on the network (STS,
 * instance metadata, a credential_process) and the engine thread must not.
 *
 * The rule (s3_refresh_due): credentials that lived L seconds when they
 * were obtained are asked for again lead = min(5 min, L/3) before they
 * expire, plus a random jitter of up to lead/4 earlier, so that hosts that
 * started together do not all ask at once.  A failed refresh is logged and
 * tried again after 1, 2, 4, ... up to 30 s; the engine keeps signing with
 * the credentials it has until new ones arrive, and nudges the refresher
 * when the server refuses them as expired.  The same key coming back no
 * newer than before (instance metadata hands out one pair until its own
 * rotation) is checked again after a quarter of the time left (1 s to
 * 60 s).  Credentials without an expiration end the
 * thread's work.
 */
#ifndef S3PIPE_S3_REFRESH_H
#define S3PIPE_S3_REFRESH_H

#include <time.h>

#include "s3/s3.h"

struct s3_refresher;

/*
 * Called on the refresher's thread with fresh credentials, which the
 * callee takes over (it must s3_creds_clear() them when done).
 */
typedef void s3_refresh_deliver_fn(void *arg, struct s3_creds *fresh);

/*
 * Starts refreshing current (only its provider and expiration are used;
 * the caller keeps it) with q's settings (copied).  Returns NULL and sets
 * errno on failure; EINVAL when current cannot expire or be refreshed.
 */
struct s3_refresher *s3_refresher_start(const struct s3_creds_query *q,
					const struct s3_creds *current,
					s3_refresh_deliver_fn *deliver,
					void *arg);

/* Stops the thread and frees r (NULL is fine).  A refresh under way is not
 * waited for: the thread finishes it alone and delivers nothing.  deliver
 * is not called after this returns. */
void s3_refresher_stop(struct s3_refresher *r);

/* Asks for a refresh now (the credentials were refused as expired); the
 * retry schedule of a failing provider still applies. */
void s3_refresher_nudge(struct s3_refresher *r);

/*
 * When credentials obtained at obtained that expire at expiration should be
 * asked for again; random picks the jitter (any value).
 */
time_t s3_refresh_due(time_t obtained, time_t expiration, unsigned random);

#endif
