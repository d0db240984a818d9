/*-------------------------------------------------------------------------
 *
 * events.c
 *	  The sockets and the timer a libcurl multi handle asks to be watched,
 *	  the wait on them, and the transfers run by what happened.
 *
 * curl_multi_perform() runs every transfer of the multi handle each time
 * it is called, and each transfer waiting for its response polls its own
 * socket once more to learn that nothing came: with 64 or 256 requests on
 * the wire, a wake-up for one response cost as many system calls and
 * transfer steps.  libcurl's event interface says instead which sockets
 * it waits for (the socket function) and when it next has something to do
 * (the timer function); the wait here polls those sockets, and
 * curl_multi_socket_action() then runs only the transfers of the sockets
 * found ready, told what was found, and those whose timer is due (a
 * transfer just added is due at once; timeouts are timers).
 *
 * The callbacks run inside libcurl: plain C, no palloc, no ereport.  The
 * lists they keep are malloc'd and live as long as the process, as the
 * multi handle does.  A lookup thread ends a wait through a pipe.
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include <fcntl.h>
#include <poll.h>
#include <time.h>
#include <unistd.h>

#include "events.h"

#define QC_EVENTS_FIRST 64		/* sockets room is made for at first */

/* A socket found ready, and what for (CURL_CSELECT_*). */
typedef struct Ready
{
	curl_socket_t fd;
	int			mask;
} Ready;

struct QcEvents
{
	CURLM	   *multi;
	struct pollfd *want;		/* the sockets libcurl waits for */
	int			nwant;
	int			capwant;
	struct pollfd *polled;		/* want and the pipe, as the last wait polled */
	int			cappolled;
	Ready	   *ready;			/* found by the last wait, not yet run */
	int			nready;
	int			capready;
	int64		due_us;			/* when the timer is due, or -1 */
	int			running;		/* transfers under way, as libcurl last said */
	int			pipe[2];		/* a write ends a wait */
};

static int64
now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64) ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

/* Make room for n items of size in *items (malloc'd, *cap of them). */
static bool
room_for(void **items, int *cap, int n, size_t size)
{
	int			want = Max(*cap, QC_EVENTS_FIRST);
	void	   *bigger;

	if (n <= *cap)
		return true;
	while (want < n)
		want *= 2;
	bigger = realloc(*items, want * size);
	if (bigger == NULL)
		return false;
	*items = bigger;
	*cap = want;
	return true;
}

/* libcurl's socket function: what socket s is now waited for. */
static int
socket_cb(CURL *easy, curl_socket_t s, int what, void *arg, void *socketp)
{
	QcEvents   *ev = arg;
	int			i;

	for (i = 0; i < ev->nwant; i++)
		if (ev->want[i].fd == s)
			break;
	if (what == CURL_POLL_REMOVE)
	{
		if (i < ev->nwant)
			ev->want[i] = ev->want[--ev->nwant];
		return 0;
	}
	if (i == ev->nwant)
	{
		if (!room_for((void **) &ev->want, &ev->capwant, ev->nwant + 1, sizeof(struct pollfd)))
			return -1;
		ev->want[ev->nwant++].fd = s;
	}
	ev->want[i].events = ((what & CURL_POLL_IN) ? POLLIN : 0) |
		((what & CURL_POLL_OUT) ? POLLOUT : 0);
	ev->want[i].revents = 0;
	return 0;
}

/* libcurl's timer function: when it next has something to do. */
static int
timer_cb(CURLM *multi, long timeout_ms, void *arg)
{
	QcEvents   *ev = arg;

	ev->due_us = timeout_ms < 0 ? -1 : now_us() + (int64) timeout_ms * 1000;
	return 0;
}

QcEvents *
qc_events_attach(CURLM *multi)
{
	QcEvents   *ev = calloc(1, sizeof(QcEvents));

	if (ev == NULL)
		return NULL;
	if (pipe2(ev->pipe, O_NONBLOCK | O_CLOEXEC) != 0)
	{
		free(ev);
		return NULL;
	}
	ev->multi = multi;
	ev->due_us = -1;
	curl_multi_setopt(multi, CURLMOPT_SOCKETFUNCTION, socket_cb);
	curl_multi_setopt(multi, CURLMOPT_SOCKETDATA, ev);
	curl_multi_setopt(multi, CURLMOPT_TIMERFUNCTION, timer_cb);
	curl_multi_setopt(multi, CURLMOPT_TIMERDATA, ev);
	return ev;
}

CURLMcode
qc_events_run(QcEvents *ev, int *running)
{
	int			n = ev->nready;
	CURLMcode	mc = CURLM_OK;

	ev->nready = 0;
	for (int i = 0; i < n && mc == CURLM_OK; i++)
		mc = curl_multi_socket_action(ev->multi, ev->ready[i].fd, ev->ready[i].mask,
									  &ev->running);

	/*
	 * The transfers whose timer is due (none, mostly: then this only reads
	 * how many are under way, which a transfer removed since changed)
	 */
	if (mc == CURLM_OK)
		mc = curl_multi_socket_action(ev->multi, CURL_SOCKET_TIMEOUT, 0, &ev->running);
	*running = ev->running;
	return mc;
}

/* What libcurl is told of a socket poll found: the side it waits for, on an error too. */
static int
ready_mask(const struct pollfd *p)
{
	int			mask = 0;

	if ((p->events & POLLIN) && (p->revents & (POLLIN | POLLERR | POLLHUP | POLLNVAL)))
		mask |= CURL_CSELECT_IN;
	if ((p->events & POLLOUT) && (p->revents & (POLLOUT | POLLERR | POLLHUP | POLLNVAL)))
		mask |= CURL_CSELECT_OUT;
	if (p->revents & (POLLERR | POLLNVAL))
		mask |= CURL_CSELECT_ERR;
	return mask;
}

void
qc_events_wait(QcEvents *ev, int ms)
{
	int			n = ev->nwant;
	int			rc;
	char		drain[64];

	if (ev->due_us >= 0)
		ms = (int) Min((int64) ms, Max((int64) 0, (ev->due_us - now_us() + 999) / 1000));
	if (!room_for((void **) &ev->polled, &ev->cappolled, n + 1, sizeof(struct pollfd)) ||
		!room_for((void **) &ev->ready, &ev->capready, ev->nready + n, sizeof(Ready)))
		ereport(ERROR,
				(errcode(ERRCODE_OUT_OF_MEMORY),
				 errmsg("out of memory")));
	memcpy(ev->polled, ev->want, n * sizeof(struct pollfd));
	ev->polled[n].fd = ev->pipe[0];
	ev->polled[n].events = POLLIN;
	rc = poll(ev->polled, n + 1, ms);
	if (rc < 0 && errno != EINTR)
		ereport(ERROR,
				(errcode_for_socket_access(),
				 errmsg("could not wait for the transfers: %m")));
	if (rc <= 0)
		return;					/* a signal, handled as the caller goes on */
	for (int i = 0; i < n; i++)
	{
		int			mask = ev->polled[i].revents ? ready_mask(&ev->polled[i]) : 0;

		if (mask == 0)
			continue;
		ev->ready[ev->nready].fd = ev->polled[i].fd;
		ev->ready[ev->nready++].mask = mask;
	}
	if (ev->polled[n].revents & POLLIN)
		while (read(ev->pipe[0], drain, sizeof(drain)) > 0)
			;
}

void
qc_events_wake(void *arg)
{
	QcEvents   *ev = arg;

	/* a full pipe wakes the wait already */
	if (write(ev->pipe[1], "", 1) < 0)
		return;
}
