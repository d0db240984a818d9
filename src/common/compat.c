/*
 * compat.c: the parts of compat.h that are functions: GUC extra data, and
 * the wait events' names (17 and newer).
 */
#include "postgres.h"

#include "utils/guc.h"
#include "utils/wait_event.h"

#include "compat.h"

#if PG_VERSION_NUM >= 170000
/* The names pg_stat_activity shows, by QcWaitEvent. */
static const char *const wait_event_names[QC_WAIT_COUNT] = {
	[QC_WAIT_HTTP] = "QueryclawHttp",
	[QC_WAIT_DNS] = "QueryclawDns",
	[QC_WAIT_AUDIT_QUEUE] = "QueryclawAuditQueue",
	[QC_WAIT_AUDIT_WORKER] = "QueryclawAuditWorker",
	[QC_WAIT_RETRY] = "QueryclawRetryWait",
	[QC_WAIT_REQUESTS] = "QueryclawRequestsWait",
	[QC_WAIT_ASYNC_WORKER] = "QueryclawAsyncWorker",
	[QC_WAIT_CALLBACK_WORKER] = "QueryclawCallbackWorker",
	[QC_WAIT_ENRICH_WORKER] = "QueryclawEnrichmentWorker",
	[QC_WAIT_DATABASE] = "QueryclawDatabaseWait",
	[QC_WAIT_SERVER_RATE] = "QueryclawServerRateWait",
};

/* Each name is registered (in shared memory) once per process, when first waited on. */
static uint32 wait_event_ids[QC_WAIT_COUNT];
#endif

void *
qc_guc_extra(void *block, size_t size, char *err, size_t errlen)
{
#if PG_VERSION_NUM >= 160000
	void	   *copy = guc_malloc(LOG, size);

	if (copy != NULL)
		memcpy(copy, block, size);
	else
		snprintf(err, errlen, "Out of memory.");
	free(block);
	return copy;
#else
	return block;
#endif
}

uint32
qc_wait_event(QcWaitEvent event)
{
#if PG_VERSION_NUM >= 170000
	if (wait_event_ids[event] == 0)
		wait_event_ids[event] = WaitEventExtensionNew(wait_event_names[event]);
	return wait_event_ids[event];
#else
	return PG_WAIT_EXTENSION;
#endif
}
