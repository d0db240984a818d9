/*-------------------------------------------------------------------------
 *
 * events.h
 *	  The sockets and the timer a libcurl multi handle asks to be watched,
 *	  the wait on them, and the transfers run by what happened (events.c).
 *
 *-------------------------------------------------------------------------
 */
#ifndef QC_EVENTS_H
#define QC_EVENTS_H

#include <curl/curl.h>

typedef struct QcEvents QcEvents;

/*
 * Watch multi's sockets and timer from now on (its socket and timer
 * functions are set); lives as long as the process.  NULL when out of
 * memory or pipes.
 */
extern QcEvents *qc_events_attach(CURLM *multi);

/*
 * Run the transfers whose sockets the last wait found ready, and those
 * whose timer is due (a transfer just added is due at once): only those,
 * not every transfer of the multi handle.  *running is the number of
 * transfers under way.
 */
extern CURLMcode qc_events_run(QcEvents *ev, int *running);

/*
 * Wait until a watched socket is ready, the timer is due, qc_events_wake
 * is called, a signal arrives, or ms passed.
 */
extern void qc_events_wait(QcEvents *ev, int ms);

/* End a wait of ev (a QcEvents *) at once; safe from any thread. */
extern void qc_events_wake(void *ev);

#endif							/* QC_EVENTS_H */
